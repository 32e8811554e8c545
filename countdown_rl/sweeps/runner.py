"""Running a sweep's runs: one process per run, locally, or as a SLURM job array.

1. Run, locally (:func:`run_local`): one ``countdown-rl train`` process per run, one after another (a fresh
   process each: no state, compiled graph or memory carried between runs). A finished run is skipped, an
   unfinished one resumes from its newest complete checkpoint, a failed one is recorded with its error in its
   ``sweep_run.json`` and the sweep goes on. Each run's output is appended to ``<run>/train.log``; the
   console shows ``[sweep i/n name] step k/N ...``. A signal (SIGTERM, SIGINT, SIGUSR1) is passed to the run in
   flight, which saves a checkpoint; the sweep then stops with exit code 75, like ``train``. With ``jobs`` > 1, up to
   that many runs at once on this machine (one GPU or the CPU shared: each run gets ``cores // jobs`` OpenMP
   threads unless ``OMP_NUM_THREADS`` is set); a signal goes to every run in flight, and no new one starts.
2. Or on a cluster (:func:`slurm_script`): a SLURM job array, one task per run, each running
   ``srun countdown-rl sweep SPEC --index $SLURM_ARRAY_TASK_ID`` (through ``accelerate launch`` when the spec names
   an ``accelerate_config``). The task is a job step (``srun``) because SLURM sends ``--signal`` to job steps, not to
   the batch shell. The shell traps SIGTERM, which the time limit sends to every process of the job, so it outlives
   the run and requeues the task after the run's exit 75 (checkpoint saved) both after the early signal and after
   the time limit's SIGTERM; a ``scancel`` (SIGTERM, not the time limit) is not requeued. The requeued task resumes
   from the run's newest complete checkpoint. We write the sbatch script; SLURM schedules.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from countdown_rl.files import write_atomic
from countdown_rl.runs.record import EXIT_INTERRUPTED
from countdown_rl.sweeps.spec import RUN_RECIPE, RUN_STATUS, SweepRun, SweepSpec, record_status, run_state

RUN_LOG = "train.log"
SBATCH_FILE = "sweep.sbatch"
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)  # passed on to the runs, which save a checkpoint
PROGRESS_ENV = "COUNTDOWN_RL_SWEEP_RUN"
"""Set by the sweep for each run (``i/n name``): ``countdown-rl train`` then prints one short progress line per
logging step, prefixed ``[sweep i/n name]``."""


# --------------------------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------------------------


def train_command(run: SweepRun, accelerate_config: str | None = None) -> list[str]:
    """The command that runs (or resumes) one run."""
    recipe = str(run.output_dir / RUN_RECIPE)
    if accelerate_config:
        return [sys.executable, "-m", "accelerate.commands.launch", "--config_file", accelerate_config,
                "-m", "countdown_rl.commands.train", "--config", recipe]
    return [sys.executable, "-m", "countdown_rl.commands.train", "--config", recipe]


def _last_error(lines: Sequence[str]) -> str:
    """The child's one-line error if it printed one, else its last non-empty line."""
    errors = [line for line in lines if ": error: " in line or line.startswith(("Traceback", "RuntimeError"))]
    tail = [line for line in lines if line.strip()]
    return (errors[-1] if errors else tail[-1] if tail else "no output").strip()


def run_one(run: SweepRun, total: int, *, accelerate_config: str | None = None, echo: bool = False,
            started: Callable[[subprocess.Popen], None] | None = None,
            env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    """Run (or resume) one run in a child process; its output is appended to ``<run>/train.log``. Returns the exit
    code and the output's last lines. A signal to this process is passed on to the child, which saves a
    checkpoint and exits 75; a child that a signal killed before it could handle one (SLURM signals every process
    of a job step, the child included, also while it starts) counts as interrupted (75): it resumes from its newest
    complete checkpoint, if any. ``started`` (several runs at once): called with the child process, and the caller
    passes the signals on (only the main thread may handle them); ``env`` replaces this process's environment."""
    run.output_dir.mkdir(parents=True, exist_ok=True)
    env = {**(os.environ if env is None else env), PROGRESS_ENV: f"{run.index + 1}/{total} {run.name}",
           "PYTHONUNBUFFERED": "1"}
    recent: deque[str] = deque(maxlen=200)  # the output's tail, for the error line of a failed run
    with open(run.output_dir / RUN_LOG, "a", encoding="utf-8") as log:
        log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {shlex.join(train_command(run, accelerate_config))}\n")
        log.flush()
        child = subprocess.Popen(train_command(run, accelerate_config), stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, env=env, errors="replace")
        forwarded = {}

        def forward(signum, _frame):
            if child.poll() is None:
                child.send_signal(signum)

        if started is not None:
            started(child)
        else:
            for sig in FORWARDED:
                forwarded[sig] = signal.signal(sig, forward)
        try:
            for line in child.stdout:
                log.write(line)
                recent.append(line.rstrip("\n"))
                progress = line.find("[sweep ")  # may follow a progress bar's last frame on the same line
                if echo or ": error: " in line:
                    print(line, end="", flush=True)
                elif progress >= 0:
                    print(line[progress:], end="", flush=True)
            code = child.wait()
            if code < 0 and -code in FORWARDED:
                recent.append(f"stopped by {signal.Signals(-code).name} before it could save a checkpoint")
                code = EXIT_INTERRUPTED
            return code, list(recent)
        finally:
            for sig, handler in forwarded.items():
                signal.signal(sig, handler)
            if child.poll() is None:
                child.kill()


def _run_recorded(spec: SweepSpec, run: SweepRun, total: int, echo: bool, **how) -> str:
    """Run (or skip, or resume) one run and record its status; returns ``finished``, ``skipped``, ``interrupted`` or
    ``failed``. ``how`` goes to :func:`run_one`."""
    head = f"[sweep {run.index + 1}/{total} {run.name}]"
    state = run_state(run)
    if state == "finished":
        print(f"{head} finished before: skipped", flush=True)  # its sweep_run.json (time taken) is kept
        return "skipped"
    print(f"{head} {'resuming' if state != 'new' else 'starting'} -> {run.output_dir}", flush=True)
    started = time.time()
    record_status(run, state="running", started=started)
    code, lines = run_one(run, total, accelerate_config=spec.accelerate_config, echo=echo, **how)
    seconds = round(time.time() - started, 1)
    if code == 0:
        record_status(run, state="finished", seconds=seconds)
        print(f"{head} finished in {seconds:.0f} s", flush=True)
        return "finished"
    if code == EXIT_INTERRUPTED or run_state(run) == "interrupted":  # accelerate's launcher exits 1, not 75
        record_status(run, state="interrupted", seconds=seconds, returncode=code)
        print(f"{head} interrupted (checkpoint saved); rerun the same command to go on", flush=True)
        return "interrupted"
    error = _last_error(lines)
    record_status(run, state="failed", seconds=seconds, returncode=code, error=error)
    print(f"{head} failed (exit {code}): {error}; see {run.output_dir / RUN_LOG}", flush=True)
    return "failed"


def _run_concurrently(spec: SweepSpec, chosen: Sequence[SweepRun], total: int, echo: bool,
                      jobs: int) -> dict[str, str]:
    """Up to ``jobs`` runs at once, each in a thread that waits on its child; this (main) thread passes a signal to
    every child in flight and starts no new run after one. Returns each run's outcome by name."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // jobs)))  # the cores split between runs
    children: list[subprocess.Popen] = []
    outcomes: dict[str, str] = {}
    stopped: list[int] = []
    lock = threading.Lock()

    def started(child):
        with lock:
            children.append(child)
        if stopped:  # a signal came while this child was starting
            child.send_signal(stopped[0])

    def forward(signum, _frame):
        stopped.append(signum)
        with lock:
            live = [child for child in children if child.poll() is None]
        for child in live:
            child.send_signal(signum)

    def work(run):
        outcomes[run.name] = _run_recorded(spec, run, total, echo, started=started, env=env)

    handlers = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    threads: list[threading.Thread] = []
    try:
        queue = list(chosen)
        while queue or any(t.is_alive() for t in threads):
            threads = [t for t in threads if t.is_alive()]
            while queue and not stopped and len(threads) < jobs:
                thread = threading.Thread(target=work, args=(queue.pop(0),), daemon=True)
                thread.start()
                threads.append(thread)
            if stopped:
                queue.clear()
            time.sleep(0.2)
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    return outcomes


def run_local(spec: SweepSpec, runs: Sequence[SweepRun], *, only: Sequence[int] | None = None,
              echo: bool = False, jobs: int = 1) -> int:
    """Run the runs (``only``: these indices), one after another or ``jobs`` at once; returns 0, 1 (some run failed)
    or 75 (stopped by a signal; rerun the same command to go on)."""
    if jobs < 1:
        raise ValueError(f"--jobs must be positive, got {jobs}")
    if jobs > 1 and spec.accelerate_config:
        raise ValueError(f"--jobs {jobs}: the runs of {spec.path} go through accelerate_config, each on every GPU it "
                         "names; run them one at a time (or with --slurm)")
    chosen = [r for r in runs if only is None or r.index in only]
    if jobs > 1:
        outcomes = _run_concurrently(spec, chosen, len(runs), echo, jobs)
        if "interrupted" in outcomes.values() or len(outcomes) < len(chosen):
            return EXIT_INTERRUPTED
        failed = [run.name for run in chosen if outcomes[run.name] == "failed"]
    else:
        failed = []
        for run in chosen:
            outcome = _run_recorded(spec, run, len(runs), echo)
            if outcome == "interrupted":
                return EXIT_INTERRUPTED
            if outcome == "failed":
                failed.append(run.name)
    if failed:
        print(f"{len(failed)} of {len(chosen)} run(s) failed: {', '.join(failed)} (details in each {RUN_STATUS})")
        return 1
    return 0


# --------------------------------------------------------------------------------------------------------------
# SLURM
# --------------------------------------------------------------------------------------------------------------


def slurm_signal(spec: SweepSpec) -> str:
    """The early signal's name: the spec's ``slurm.signal``, else TERM under ``accelerate_config`` (torchrun, which
    ``accelerate launch`` runs for several processes, forwards SIGTERM to its workers but dies of SIGUSR1) and USR1
    for a plain process."""
    return spec.slurm.get("signal", "TERM" if spec.accelerate_config else "USR1")


def requeue_lines(run: str, job: str) -> list[str]:
    """Bash lines that run the job step ``run`` with the shell kept alive through SIGTERM, then requeue ``job`` when
    the step exits 75, unless the SIGTERM was a ``scancel`` (the job's reason is then not ``TimeLimit``).

    Bash runs a trap only once the foreground command has ended, so the step finishes its checkpoint first (``srun``
    waits for its tasks); SIGKILL follows SIGTERM after the cluster's ``KillWait`` (30 s by default).

    >>> requeue_lines("srun countdown-rl train --config r.yaml --resume true", "$SLURM_JOB_ID")[2:4]
    ["trap 'term=1' TERM", 'srun countdown-rl train --config r.yaml --resume true']
    """
    return [
        "# The time limit sends SIGTERM to every process of the job, this shell included: trap it, so the shell",
        "# outlives the run (which saves a checkpoint and exits 75) and can requeue the job.",
        "trap 'term=1' TERM",
        run,
        "code=$?",
        f"if [ \"$code\" -eq {EXIT_INTERRUPTED} ]; then",
        "  # interrupted with a checkpoint saved: back in the queue (the requeued job resumes), except after a scancel",
        "  if [ -z \"${term:-}\" ] || scontrol show job \"$SLURM_JOB_ID\" | grep -q 'Reason=TimeLimit'; then",
        f"    scontrol requeue \"{job}\"",
        "  else",
        "    echo \"cancelled (SIGTERM before the time limit): not requeued; resubmit to go on\" >&2",
        "  fi",
        "fi",
        "exit \"$code\"",
    ]


def slurm_script(spec: SweepSpec, runs: Sequence[SweepRun], *, executable: str = "countdown-rl") -> str:
    """An sbatch script: a job array with one task per run, each running its run through ``sweep --index``.

    The task runs as a job step (``srun``), which gets the early signal (:func:`slurm_signal`) ``signal_seconds``
    before the time limit: ``train`` saves a checkpoint and exits 75, and the task requeues itself. The same when
    the time limit's SIGTERM comes first (:func:`requeue_lines`). The requeued task resumes from that checkpoint.
    """
    s = spec.slurm
    root = spec.output_root.resolve()
    array = f"0-{len(runs) - 1}" + (f"%{s['max_parallel']}" if "max_parallel" in s else "")
    lines = [
        "#!/bin/bash",
        f"# countdown-rl sweep {spec.name}: {len(runs)} runs ({spec.path}), one array task each.",
        f"# Submit: sbatch {root / SBATCH_FILE}   Report: countdown-rl report {root}",
        f"#SBATCH --job-name={spec.name}",
        f"#SBATCH --array={array}",
        f"#SBATCH --output={root}/slurm/%A_%a.out",
        "#SBATCH --open-mode=append",
        f"#SBATCH --signal={slurm_signal(spec)}@{s.get('signal_seconds', 600)}",
        "#SBATCH --requeue",
        "#SBATCH --ntasks=1",
    ]
    for key, flag in (("partition", "partition"), ("account", "account"), ("qos", "qos"), ("time", "time"),
                      ("nodes", "nodes"), ("gpus_per_task", "gpus-per-task"), ("cpus_per_task", "cpus-per-task"),
                      ("mem", "mem")):
        if key in s:
            lines.append(f"#SBATCH --{flag}={s[key]}")
    lines += [f"#SBATCH {arg}" for arg in s.get("sbatch_args", [])]
    lines += ["", "set -uo pipefail", f"cd {shlex.quote(str(Path.cwd()))}"]
    lines += list(s.get("setup", []))
    # srun does not pass the job's --cpus-per-task on to the step (SLURM >= 22.05): name it again.
    step = "srun --ntasks=1" + (f" --cpus-per-task={s['cpus_per_task']}" if "cpus_per_task" in s else "")
    lines += [
        "",
        "# The array index is the run's index in sweep.json (the run table: countdown-rl sweep SPEC --dry_run).",
        "# A job step (srun), because SLURM sends the early signal to job steps, not to this shell.",
        *requeue_lines(f"{step} {executable} sweep {shlex.quote(str(spec.path.resolve()))} "
                       f"--index \"$SLURM_ARRAY_TASK_ID\"", "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"),
        "",
    ]
    return "\n".join(lines)


def write_slurm(spec: SweepSpec, runs: Sequence[SweepRun]) -> Path:
    """Write ``<output_root>/sweep.sbatch`` (and the ``slurm/`` log folder); returns the script's path."""
    path = spec.output_root / SBATCH_FILE
    (spec.output_root / "slurm").mkdir(parents=True, exist_ok=True)
    write_atomic(path, slurm_script(spec, runs).encode("utf-8"))
    path.chmod(0o755)
    return path
