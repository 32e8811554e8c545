#!/usr/bin/env bash
# A real SLURM on this one machine: munge, a controller and two compute daemons (nodes n1 and n2) on 127.0.0.1.
#
#   scripts/local_slurm.sh start  [DIR]   # install slurm-wlm + munge when missing (apt-get, as root), then start
#   scripts/local_slurm.sh status [DIR]   # the daemons' pids and sinfo
#   scripts/local_slurm.sh env    [DIR]   # the line to paste: export SLURM_CONF=DIR/slurm.conf
#   scripts/local_slurm.sh stop   [DIR]   # cancel the cluster's jobs, stop the daemons this script started (by pid)
#
# Everything lives under DIR (default $COUNTDOWN_RL_SLURM_DIR or /tmp/countdown-rl-slurm): slurm.conf, the munge
# key and socket, pid files, logs, spool and state. Nothing under /etc is touched except one line in /etc/hosts
# ("127.0.0.1 n1 n2", so a node name resolves as a rendezvous address), added when missing and removed by stop.
# The clients (sbatch, srun, squeue, scontrol, scancel) find this cluster through SLURM_CONF, which jobs inherit.
#
# Why these settings (verified on Debian 12, SLURM 22.05): two slurmd on one host need their own port and %n in
# their spool, pid and log paths; proctrack/linuxproc and task/none need no cgroups; cred_expire (the delay before
# a requeued job may start again, 120 s by default) is cut to 10 s and the scheduler runs every 2 s, so a requeue
# costs seconds, not minutes. Exit codes: 0 ok, 1 a daemon did not come up (its log is named), 3 cannot run here.
set -uo pipefail

ACTION="${1:-}"
DIR="${2:-${COUNTDOWN_RL_SLURM_DIR:-/tmp/countdown-rl-slurm}}"
HOSTS_LINE="127.0.0.1 n1 n2  # countdown-rl local slurm"
CTLD_PORT=16817
NODE_PORTS=(17001 17002)

die() { echo "local_slurm: $1" >&2; exit "${2:-1}"; }

alive() {  # alive NAME: the pid in DIR/pids/NAME.pid runs and is still the program we started
    local file="$DIR/pids/$1.pid" pid
    [ -f "$file" ] || return 1
    pid=$(cat "$file")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q "$2" "/proc/$pid/cmdline" 2>/dev/null
}

install_when_missing() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
        && command -v sbatch >/dev/null; then
        return 0
    fi
    [ "$(id -u)" -eq 0 ] || die "slurm-wlm / munge are not installed and installing them needs root" 3
    command -v apt-get >/dev/null || die "slurm-wlm / munge are not installed and there is no apt-get" 3
    echo "local_slurm: installing slurm-wlm and munge (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get update -q >"$DIR/logs/apt.log" 2>&1 \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >>"$DIR/logs/apt.log" 2>&1 \
        || die "apt-get install slurm-wlm munge failed (see $DIR/logs/apt.log)" 3
}

write_conf() {
    local host
    host=$(hostname -s)
    cat >"$DIR/slurm.conf" <<EOF
# Written by scripts/local_slurm.sh: a two-node SLURM on 127.0.0.1 for tests.
ClusterName=countdownrl
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket,cred_expire=10
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
ReturnToService=2
MinJobAge=600
JobRequeue=1
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
MailProg=/bin/true
StateSaveLocation=$DIR/state
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmctldLogFile=$DIR/logs/slurmctld.log
SlurmdSpoolDir=$DIR/spool/%n
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmdLogFile=$DIR/logs/slurmd-%n.log
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=${NODE_PORTS[0]} CPUs=2 State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=${NODE_PORTS[1]} CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
}

start() {
    [ "$(id -u)" -eq 0 ] || die "start needs root (the daemons run as root here)" 3
    mkdir -p "$DIR"/{pids,run,logs,state,spool/n1,spool/n2,munge} || die "cannot create $DIR" 3
    if alive slurmctld slurmctld && alive slurmd-n1 slurmd && alive slurmd-n2 slurmd && alive munged munged; then
        echo "local_slurm: already running ($DIR)"
        return 0
    fi
    stop_daemons quiet
    install_when_missing
    grep -qF "$HOSTS_LINE" /etc/hosts || echo "$HOSTS_LINE" >>/etc/hosts || die "cannot add n1 n2 to /etc/hosts" 3

    # munge: our own key, socket and daemon (a system munged, if any, is left alone)
    if [ ! -s "$DIR/munge/munge.key" ]; then
        head -c 1024 /dev/urandom >"$DIR/munge/munge.key" && chmod 400 "$DIR/munge/munge.key"
    fi
    chmod 700 "$DIR/munge"
    munged --foreground --force --key-file "$DIR/munge/munge.key" --socket "$DIR/munge/munge.socket" \
        --pid-file "$DIR/run/munged.pid" --log-file "$DIR/logs/munged.log" --seed-file "$DIR/munge/munge.seed" \
        >>"$DIR/logs/munged.out" 2>&1 &
    echo $! >"$DIR/pids/munged.pid"
    for _ in $(seq 50); do
        munge -S "$DIR/munge/munge.socket" -n 2>/dev/null | unmunge -S "$DIR/munge/munge.socket" >/dev/null 2>&1 \
            && break
        sleep 0.2
    done
    munge -S "$DIR/munge/munge.socket" -n 2>/dev/null | unmunge -S "$DIR/munge/munge.socket" >/dev/null 2>&1 \
        || die "munged did not come up (see $DIR/logs/munged.log and munged.out)"

    write_conf
    export SLURM_CONF="$DIR/slurm.conf"
    slurmctld -D -c -f "$SLURM_CONF" >>"$DIR/logs/slurmctld.out" 2>&1 &
    echo $! >"$DIR/pids/slurmctld.pid"
    for node in n1 n2; do
        slurmd -D -N "$node" -f "$SLURM_CONF" >>"$DIR/logs/slurmd-$node.out" 2>&1 &
        echo $! >"$DIR/pids/slurmd-$node.pid"
    done
    # Up when both nodes are idle (bounded: 60 s).
    for _ in $(seq 120); do
        if [ "$(sinfo -h -N -o '%N %t' 2>/dev/null | grep -c ' idle$')" -eq 2 ]; then
            echo "local_slurm: running: nodes n1 n2 idle; export SLURM_CONF=$SLURM_CONF"
            return 0
        fi
        for name in slurmctld slurmd-n1 slurmd-n2; do
            alive "$name" "${name%%-*}" || die "$name exited at start (see $DIR/logs/$name.log and $name.out)"
        done
        sleep 0.5
    done
    die "the nodes did not become idle within 60 s (sinfo: $(sinfo -h -N -o '%N %t' 2>&1 | tr '\n' ' '); see $DIR/logs)"
}

stop_daemons() {  # the daemons this script started, by pid: TERM, then KILL after 10 s
    local quiet="${1:-}" pids=() name pattern
    for name in slurmd-n1 slurmd-n2 slurmctld munged; do
        pattern="${name%%-*}"
        if alive "$name" "$pattern"; then
            pids+=("$(cat "$DIR/pids/$name.pid")")
            kill -TERM "$(cat "$DIR/pids/$name.pid")" 2>/dev/null
        fi
        rm -f "$DIR/pids/$name.pid"
    done
    for _ in $(seq 20); do
        local left=0
        for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left=1; done
        [ "$left" -eq 0 ] && break
        sleep 0.5
    done
    for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
    [ -n "$quiet" ] || echo "local_slurm: stopped ${#pids[@]} daemon(s)"
}

stop() {
    if alive slurmctld slurmctld; then
        # Jobs first, so no job step outlives its slurmd (bounded: 20 s).
        export SLURM_CONF="$DIR/slurm.conf"
        scancel --full --user root >/dev/null 2>&1
        for _ in $(seq 40); do
            [ -z "$(squeue -h -t RUNNING,COMPLETING -o %i 2>/dev/null)" ] && break
            sleep 0.5
        done
    fi
    stop_daemons
    if grep -qF "$HOSTS_LINE" /etc/hosts 2>/dev/null; then
        grep -vF "$HOSTS_LINE" /etc/hosts >"$DIR/hosts.tmp" && cat "$DIR/hosts.tmp" >/etc/hosts && rm -f "$DIR/hosts.tmp"
    fi
}

status() {
    local code=0
    for name in munged slurmctld slurmd-n1 slurmd-n2; do
        if alive "$name" "${name%%-*}"; then
            echo "$name: running (pid $(cat "$DIR/pids/$name.pid"))"
        else
            echo "$name: not running"
            code=1
        fi
    done
    [ "$code" -eq 0 ] && SLURM_CONF="$DIR/slurm.conf" sinfo -N
    return "$code"
}

case "$ACTION" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    env) echo "export SLURM_CONF=$DIR/slurm.conf" ;;
    *) die "usage: $0 {start|stop|status|env} [DIR]" 2 ;;
esac
