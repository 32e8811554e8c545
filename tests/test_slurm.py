"""SLURM for real (issue #28): a local cluster (``scripts/local_slurm.sh``: munge, a controller, nodes n1 and n2 on
127.0.0.1), the package's sbatch scripts submitted to it, the tiny model trained in its jobs.

1. A two-run sweep as a job array (``countdown-rl sweep --slurm --submit``) runs to the end; ``--dry_run`` then shows
   both finished and ``countdown-rl report`` reads them.
2. Time limits and signals, one sweep task each, all submitted at once next to an uninterrupted local run of the same
   recipe: the early signal (``signal_seconds``), the time limit's SIGTERM alone (the script without its
   ``--signal`` line, as when the early signal comes too late), ``scancel --signal=USR1``, the same under
   ``accelerate_config`` (``scancel --signal=TERM``, its default), and a plain ``scancel``. Each interrupted task
   saves a checkpoint, requeues itself, resumes from that checkpoint and finishes with the uninterrupted run's
   weights, bit for bit; the cancelled one stays cancelled, its checkpoint kept. The test pauses each run at its first
   checkpoint (SIGSTOP), then signals it (for the two time-limit cases it brings the job's limit near and SLURM wakes
   it with the signal), so that the signal's time does not depend on the machine's speed; once a task was requeued
   the test lifts its limit.
3. The single-run example of docs/reliability.md, as written (only the recipe and the signal's lead time are the test's),
   paused at its first checkpoint while the test signals it, as in 2.
4. ``slurm/train_multinode.sbatch`` on two nodes: one run of 2 processes, a checkpoint, a signal, requeue, resume,
   finished, the record saying 2 processes. ``accelerate launch --num_machines 2`` under ``srun -N2`` is refused.

Every test here is ``slurm`` and ``slow`` (minutes); without root or when the cluster cannot start they skip with the
reason. Every job has a time limit; every wait is bounded; what a test submitted is cancelled at the end.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.helpers.env import ROOT, crash_report, hang_guard, offline_env, write_cpu_accelerate_config
SCRIPT = ROOT / "scripts" / "local_slurm.sh"
SMOKE = ROOT / "recipes" / "smoke" / "cpu_tiny.yaml"
FORMAT_COPY = ROOT / "recipes" / "format_copy" / "cpu_tiny.yaml"
MULTINODE = ROOT / "slurm" / "train_multinode.sbatch"
STATE_DIR = Path(os.environ.get("COUNTDOWN_RL_SLURM_DIR", "/tmp/countdown-rl-slurm"))
DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
        "PREEMPTED"}

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


class Cluster:
    """The local cluster's clients, and the jobs this session submitted (cancelled at the end)."""

    def __init__(self, conf: Path):
        self.env = offline_env(SLURM_CONF=str(conf), PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
                               PYTHONUNBUFFERED="1")
        self.jobs: list[str] = []

    def run(self, *command: str, check: bool = True, timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
        done = subprocess.run(list(command), env=kwargs.pop("env", self.env), capture_output=True, text=True,
                              timeout=timeout, **kwargs)
        assert not check or done.returncode == 0, f"{command}: {crash_report(done.stderr, 2000)}"
        return done

    def submitted(self, text: str) -> str:
        job = re.search(r"(\d+)", text).group(1)
        self.jobs.append(job)
        return job

    def sbatch(self, *args: str, cwd: Path = ROOT, env: dict | None = None) -> str:
        assert any(a.startswith("--time=") for a in args), "every job a test submits has a time limit"
        return self.submitted(self.run("sbatch", "--parsable", *args, cwd=cwd, env=env or self.env).stdout)

    def job(self, job: str) -> dict[str, str]:
        """``scontrol show job -o`` as a dict (for an array: its first task)."""
        out = self.run("scontrol", "show", "job", "-o", job, check=False).stdout.splitlines()
        return dict(re.findall(r"(\w+)=(\S*)", out[0])) if out else {}

    def jobs_now(self) -> dict[str, dict[str, str]]:
        """Every job the controller knows, in one call (an array task under its array's id): a poll stays cheap."""
        lines = self.run("scontrol", "show", "job", "-o", check=False).stdout.splitlines()
        infos = [dict(re.findall(r"(\w+)=(\S*)", line)) for line in lines]
        return {info.get("ArrayJobId", info.get("JobId")): info for info in infos if info}

    def cancel_all(self) -> None:
        if self.jobs:
            self.run("scancel", *self.jobs, check=False)


def wait_for(what: str, condition, timeout: float, every: float = 1.0):
    """Poll ``condition`` until it returns something true; fail naming ``what`` after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(every)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


@pytest.fixture(scope="session")
def slurm():
    """The local cluster: started with scripts/local_slurm.sh (and stopped after) unless it already runs."""
    if os.geteuid() != 0:
        pytest.skip("the local SLURM needs root (scripts/local_slurm.sh starts munged, slurmctld and slurmd)")
    running = subprocess.run(["bash", str(SCRIPT), "status", str(STATE_DIR)], capture_output=True, text=True)
    started = running.returncode != 0
    if started:
        done = subprocess.run(["bash", str(SCRIPT), "start", str(STATE_DIR)], capture_output=True, text=True,
                              timeout=900)
        if done.returncode != 0:
            pytest.skip(f"the local SLURM did not start: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    cluster = Cluster(STATE_DIR / "slurm.conf")
    yield cluster
    cluster.cancel_all()
    if started:
        subprocess.run(["bash", str(SCRIPT), "stop", str(STATE_DIR)], capture_output=True, timeout=120)


def run_info(run_dir: Path) -> dict:
    return json.loads((run_dir / "run_info.json").read_text())


def weights(run_dir: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(run_dir / "model.safetensors"))


def same_weights(a: Path, b: Path) -> bool:
    import torch

    wa, wb = weights(a), weights(b)
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def write_yaml(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# ---------------------------------------------------------------------------------------------------------------
# 1. A sweep array to the end
# ---------------------------------------------------------------------------------------------------------------


def test_a_two_run_sweep_array_runs_to_the_end_and_reports(slurm, tiny_model_dir, puzzles, tmp_path):
    base = yaml.safe_load(SMOKE.read_text())
    base.update(model_name_or_path=str(tiny_model_dir), dataset_name=str(puzzles), max_steps=2, final_eval_size=4)
    spec = write_yaml(tmp_path / "spec.yaml", {
        "name": "array", "base": str(write_yaml(tmp_path / "base.yaml", base)), "axes": {"beta": [0.0]},
        "seeds": [0, 1], "output_root": str(tmp_path / "sweep"), "slurm": {"time": "00:05:00", "signal_seconds": 60}})
    done = slurm.run("countdown-rl", "sweep", str(spec), "--slurm", "--submit", cwd=tmp_path, timeout=120)
    job = slurm.submitted(done.stdout.split("Submitted batch job")[-1])
    wait_for("both array tasks to end", lambda: not slurm.run("squeue", "-h", "-j", job, check=False).stdout.strip(),
             timeout=300, every=2)
    for task in ("0", "1"):
        assert slurm.job(f"{job}_{task}")["JobState"] == "COMPLETED"
    table = slurm.run("countdown-rl", "sweep", str(spec), "--dry_run", cwd=tmp_path, timeout=120).stdout
    assert len(re.findall(r"^\s+\d+\s+finished\s+beta=0,seed=", table, flags=re.M)) == 2, table
    report = slurm.run("countdown-rl", "report", str(tmp_path / "sweep"), cwd=tmp_path, timeout=300)
    [row] = list(__import__("csv").DictReader((tmp_path / "sweep" / "report" / "sweep.csv").open()))
    assert (row["point"], row["seeds"], row["finished"]) == ("beta=0", "2", "2"), report.stdout


# ---------------------------------------------------------------------------------------------------------------
# 2. Time limits and signals
# ---------------------------------------------------------------------------------------------------------------

# case: (slurm settings, accelerate, what the test does once the run saved its first checkpoint: "limit" (pause the
# run and bring its time limit near, so that SLURM itself signals it), or "scancel --signal=X", or "scancel")
CASES = {
    "early-signal": ({"time": "00:20:00", "signal_seconds": 30}, False, "limit"),
    "time-limit-sigterm": ({"time": "00:20:00", "signal_seconds": 30}, False, "limit"),  # its script loses --signal
    "scancel-usr1": ({"time": "00:20:00", "signal_seconds": 60}, False, "USR1"),
    "accelerate-scancel-term": ({"time": "00:20:00", "signal_seconds": 60}, True, "TERM"),
    "scancel": ({"time": "00:20:00", "signal_seconds": 60}, False, "cancel"),
}
# At its first checkpoint (step SAVE_STEPS) the test pauses each run's processes (SIGSTOP), then acts: a scancel, or
# the job's time limit brought to end within a minute. A paused run cannot end before its signal, whatever the load
# and however slow the test's poll (every 0.2 s), so the runs need not be long. SLURM's time-limit check runs about once
# a minute and sends the signal with a SIGCONT, which wakes the run (observed with SLURM 22.05); once a signal waits
# on one of a paused run's processes, the test sends SIGCONT to all of them too. The signal thus comes after the run
# installed its handlers and before it ended.
STEPS, SAVE_STEPS = 60, 10


def runtime_seconds(text: str) -> int:
    """SLURM's ``[D-]HH:MM:SS`` as seconds."""
    days, _, clock = text.rpartition("-")
    hours, minutes, seconds = (int(x) for x in clock.split(":"))
    return int(days or 0) * 86400 + hours * 3600 + minutes * 60 + seconds


def step_pids(job_id: str) -> list[int]:
    """The processes of the job's steps (``srun``'s tasks and their children: ``SLURM_STEP_ID`` in their
    environment), not its batch shell or ``srun`` itself."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            environ = (proc / "environ").read_bytes().split(b"\0") if proc.name.isdigit() else []
        except OSError:  # ended meanwhile, or a kernel thread
            continue
        if f"SLURM_JOB_ID={job_id}".encode() in environ and any(e.startswith(b"SLURM_STEP_ID=") for e in environ):
            pids.append(int(proc.name))
    return pids


def stopped_with_a_signal_waiting(pid: int) -> bool:
    """``pid`` is stopped (SIGSTOP) and a signal waits for it."""
    try:
        status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    except OSError:
        return False
    pending = int(status["SigPnd"], 16) | int(status["ShdPnd"], 16)
    return status["State"].strip().startswith("T") and pending != 0


def pause_steps(job_id: str) -> list[int]:
    """Stop (SIGSTOP) the processes of the job's steps: a paused run cannot end before the test's signal."""
    pids = step_pids(job_id)
    assert pids, f"no process of job {job_id} found to pause"
    signal_pids(pids, signal.SIGSTOP)
    return pids


def signal_pids(pids, sig) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def warm_model(tmp_path_factory):
    """The tiny model after a short format_copy SFT: its rewards vary within a group, so GRPO changes the weights."""
    out = tmp_path_factory.mktemp("warm") / "model"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "countdown_rl.cli", "warmup", "--task", "format_copy",
                           "--task_options", "max_digits=3", "--num_rows", "400", "--max_steps", "40", "--output_dir", str(out)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, crash_report(done.stderr, 2000)
    return out


@pytest.fixture(scope="module")
def timed(slurm, warm_model, tmp_path_factory):
    """Every case of CASES submitted at once, and the same recipe run locally without interruption."""
    tmp = tmp_path_factory.mktemp("timed")
    base = yaml.safe_load(FORMAT_COPY.read_text())
    base.update(model_name_or_path=str(warm_model), gradient_accumulation_steps=1, max_steps=STEPS,
                save_steps=SAVE_STEPS, eval_strategy="no", test_size=16, final_eval_size=8, logging_steps=10)
    base_file = write_yaml(tmp / "base.yaml", base)
    accelerate = write_cpu_accelerate_config(tmp / "cpu.yaml")

    def spec(name: str, **extra) -> Path:
        return write_yaml(tmp / f"{name}.yaml", {"name": name, "base": str(base_file), "axes": {"beta": [0.0]},
                                                 "seeds": [0], "output_root": str(tmp / name), **extra})

    for case, (settings, under_accelerate, _) in CASES.items():
        extra = {"slurm": settings, **({"accelerate_config": str(accelerate)} if under_accelerate else {})}
        slurm.run("countdown-rl", "sweep", str(spec(case, **extra)), "--slurm", cwd=tmp, timeout=hang_guard(120))
        if case == "time-limit-sigterm":
            script = tmp / case / "sweep.sbatch"
            lines = script.read_text().splitlines()
            script.write_text("\n".join(line for line in lines if not line.startswith("#SBATCH --signal")) + "\n")
    reference = subprocess.Popen([sys.executable, "-m", "countdown_rl.cli", "sweep", str(spec("reference"))],
                                 cwd=tmp, env=slurm.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    jobs, acted, paused, woken = {}, set(), {}, set()
    try:
        for case, (settings, _, _) in CASES.items():
            # --oversubscribe: all five at once (the nodes' slots would queue the fifth behind a paused one)
            jobs[case] = slurm.sbatch(f"--time={settings['time']}", "--oversubscribe", str(tmp / case / "sweep.sbatch"),
                                      cwd=tmp)
        polls = 0

        def all_done():
            nonlocal polls
            polls += 1
            for case, job in jobs.items():
                action = CASES[case][2]
                if case in acted or not any((tmp / case / "beta=0,seed=0").glob("checkpoint-*")):
                    continue
                acted.add(case)
                # every case paused first (SIGSTOP): however slow this poll, the run cannot end before its signal
                task = slurm.job(job)
                paused[case] = pause_steps(task["JobId"])
                if action == "cancel":
                    slurm.run("scancel", job)
                elif action != "limit":
                    slurm.run("scancel", f"--signal={action}", job)
                else:
                    # the limit's end in whole minutes, soon: SLURM's time-limit check (about once a minute) signals
                    # the run. With the early signal, at least a minute more than its lead: a limit under a minute
                    # away could pass before the next check, which then sends the limit's SIGTERM before the early
                    # signal (a fresh-clone CI failed so: SIGTERM, then the early SIGUSR1 too late).
                    elapsed = runtime_seconds(task["RunTime"])
                    lead = 0 if case == "time-limit-sigterm" else CASES[case][0]["signal_seconds"] + 60
                    slurm.run("scontrol", "update", f"JobId={job}_0", f"TimeLimit={(elapsed + lead) // 60 + 1}")
            for case, pids in paused.items():  # a signal waits on one of a paused run's processes: all go on
                if case not in woken and any(stopped_with_a_signal_waiting(pid) for pid in pids):
                    signal_pids(pids, signal.SIGCONT)
                    woken.add(case)
            if polls % 10:
                return False
            now = slurm.jobs_now()
            for case, job in jobs.items():
                info = now.get(job, {})
                # the second attempt gets the time to finish (retried until it holds; it waits two minutes in the queue)
                if int(info.get("Restarts", 0)) >= 1 and info.get("TimeLimit") != "00:20:00" \
                        and info.get("JobState") not in DONE:
                    slurm.run("scontrol", "update", f"JobId={job}_0", "TimeLimit=20", check=False)
            return all(now.get(job, {}).get("JobState") in DONE for job in jobs.values()) and reference.poll() is not None

        wait_for("the timed sweep tasks and the reference run", all_done, timeout=hang_guard(600), every=0.2)
        assert reference.returncode == 0, reference.stderr.read()[-2000:]
    finally:
        for pids in paused.values():
            signal_pids(pids, signal.SIGCONT)
        if reference.poll() is None:
            reference.kill()
    return {"tmp": tmp, "jobs": jobs, "info": {case: slurm.job(f"{job}_0") for case, job in jobs.items()},
            "reference": tmp / "reference" / "beta=0,seed=0"}


def task_log(timed, case: str) -> str:
    """The task's SLURM log(s) and its run's train.log (the run's own lines go there)."""
    files = [*sorted((timed["tmp"] / case / "slurm").glob("*.out")), timed["tmp"] / case / "beta=0,seed=0" / "train.log"]
    return "\n".join(p.read_text(errors="replace") for p in files if p.is_file())


@pytest.mark.parametrize("case", [c for c in CASES if c != "scancel"])
def test_an_interrupted_task_is_requeued_resumes_and_ends_as_an_uninterrupted_run(timed, case):
    info, run = timed["info"][case], timed["tmp"] / case / "beta=0,seed=0"
    log = task_log(timed, case)
    signal = {"early-signal": "SIGUSR1", "time-limit-sigterm": "SIGTERM", "scancel-usr1": "SIGUSR1",
              "accelerate-scancel-term": "SIGTERM"}[case]
    assert info["JobState"] == "COMPLETED" and int(info["Restarts"]) >= 1, (info, crash_report(log))
    if case == "time-limit-sigterm":
        assert "DUE TO TIME LIMIT" in log and "received SIGUSR1" not in log
    stops = re.findall(rf"interrupted by {signal} at step (\d+); checkpoint (\S+) saved", log)
    assert stops, crash_report(log)
    record = run_info(run)
    assert record["status"]["state"] == "finished" and record["status"]["step"] == STEPS
    # resumed from the checkpoint the signal saved (the last interruption's): no finished step lost
    assert record["resumed_from"] == stops[-1][1] and stops[-1][1].endswith(f"checkpoint-{stops[-1][0]}")
    assert json.loads((run / "sweep_run.json").read_text())["state"] == "finished"
    assert same_weights(run, timed["reference"])
    assert not same_weights(run, Path(yaml.safe_load((run / "recipe.yaml").read_text())["model_name_or_path"]))


def test_a_scancel_is_not_requeued_and_keeps_its_checkpoint(timed):
    info, run = timed["info"]["scancel"], timed["tmp"] / "scancel" / "beta=0,seed=0"
    log = task_log(timed, "scancel")
    assert info["JobState"] == "CANCELLED" and int(info["Restarts"]) == 0, info
    assert "not requeued; resubmit to go on" in log
    status = run_info(run)["status"]
    assert status["state"] == "interrupted" and Path(status["checkpoint"]).is_dir()


# ---------------------------------------------------------------------------------------------------------------
# 3. The single-run example of docs/reliability.md
# ---------------------------------------------------------------------------------------------------------------


def readme_single_run_script() -> str:
    readme = (ROOT / "docs" / "reliability.md").read_text()
    section = readme.split("## Long jobs, preemption and SLURM", 1)[1].split("\n## ", 1)[0]
    [block] = [b for b in re.findall(r"```bash\n(.*?)```", section, flags=re.S) if "#SBATCH --requeue" in b]
    return block


def signal_then_await_the_requeued_end(slurm, job: str, run: Path, name: str, logs: Path):
    """Once the run in ``run`` saved a checkpoint: pause the job's processes (SIGSTOP: however slow the test's poll,
    the run cannot end before the signal), ``scancel --signal=<name>`` the job, let them go on once the signal waits
    on one of them; wait until the job ended after a requeue. Its ``scontrol`` record and its log. (Any checkpoint:
    with save_total_limit an early one lives under a second.)"""
    wait_for("a checkpoint", lambda: any(run.glob("checkpoint-*")), timeout=300, every=0.2)
    pids = pause_steps(job)
    try:
        slurm.run("scancel", f"--signal={name}", job)
        wait_for("the signal to reach the paused run", lambda: any(stopped_with_a_signal_waiting(p) for p in pids),
                 timeout=60, every=0.1)
    finally:
        signal_pids(pids, signal.SIGCONT)
    wait_for("the job to end", lambda: slurm.job(job).get("JobState") in DONE and int(slurm.job(job)["Restarts"]),
             timeout=400, every=2)
    return slurm.job(job), (logs / f"slurm-{job}.out").read_text(errors="replace")


# Long enough that the run is still going when the test pauses it, just after its first checkpoint (step 2) appears:
# the test polls every 0.2 s; 100 steps are about 25 s on an idle machine. Also the multi-node run's length.
README_STEPS = 100


def test_the_readme_single_run_example_as_written(slurm, tiny_model_dir, puzzles, tmp_path):
    script = readme_single_run_script()
    recipe = "recipes/countdown/qwen3-1.7b/grpo_512.yaml"
    assert script.count(recipe) == 1 and (ROOT / recipe).is_file()
    out = tmp_path / "run"
    ours = (f"{SMOKE} --model_name_or_path {tiny_model_dir} --dataset_name {puzzles} --output_dir {out} "
            f"--max_steps {README_STEPS} --final_eval_size 4")
    (tmp_path / "job.sbatch").write_text(script.replace(recipe, ours))
    # the README's --signal lead (600 s) would fire at once under a short limit: the test signals like SLURM would
    job = slurm.sbatch("--time=10", "--signal=USR1@5", f"--output={tmp_path}/slurm-%j.out", str(tmp_path / "job.sbatch"),
                       cwd=ROOT)
    info, log = signal_then_await_the_requeued_end(slurm, job, out, "USR1", tmp_path)
    assert info["JobState"] == "COMPLETED" and info["Restarts"] == "1", (info, crash_report(log))
    [(step, checkpoint)] = re.findall(r"interrupted by SIGUSR1 at step (\d+); checkpoint (\S+) saved", log)
    record = run_info(out)
    assert record["status"]["state"] == "finished" and record["status"]["step"] == README_STEPS
    assert record["resumed_from"] == checkpoint == str(out / f"checkpoint-{step}")


# ---------------------------------------------------------------------------------------------------------------
# 4. One run over two nodes
# ---------------------------------------------------------------------------------------------------------------


def test_the_multinode_script_forms_one_run_that_requeues_and_resumes(slurm, tiny_model_dir, puzzles, tmp_path):
    env = {**slurm.env, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "run"
    job = slurm.sbatch("--time=10", "--signal=TERM@5", f"--output={tmp_path}/slurm-%j.out", str(MULTINODE),
                       "--config", str(SMOKE), "--model_name_or_path", str(tiny_model_dir), "--dataset_name",
                       str(puzzles), "--output_dir", str(out), "--max_steps", str(README_STEPS), "--final_eval_size", "4",
                       cwd=tmp_path, env=env)
    info, log = signal_then_await_the_requeued_end(slurm, job, out, "TERM", tmp_path)
    assert info["JobState"] == "COMPLETED" and info["Restarts"] == "1" and info["NumNodes"] == "2", crash_report(log)
    assert log.count("countdown_rl.train: process 0 of 2") == 2 and log.count("countdown_rl.train: process 1 of 2") == 2
    [(step, checkpoint)] = re.findall(r"interrupted by SIGTERM at step (\d+); checkpoint (\S+) saved", log)
    record = run_info(out)
    assert record["num_processes"] == 2 and record["engine"]["summary"] == "DDP over 2 processes on 2 nodes (gloo, cpu)"
    assert record["status"]["state"] == "finished" and record["status"]["step"] == README_STEPS
    assert record["resumed_from"] == checkpoint == str(out / f"checkpoint-{step}")


REFUSED = "countdown-rl-test-refused"


def test_two_one_process_runs_on_one_output_dir_are_refused(slurm, tiny_model_dir, puzzles, tmp_path):
    out = tmp_path / "run"
    launch = ("exec python -m accelerate.commands.launch --cpu --num_machines 2 --num_processes 2 --machine_rank "
              "$SLURM_NODEID --main_process_ip n1 --main_process_port 29731 --mixed_precision no --dynamo_backend no "
              f"-m countdown_rl.commands.train --config {SMOKE} --model_name_or_path {tiny_model_dir} "
              f"--dataset_name {puzzles} --output_dir {out} --max_steps 4 --final_eval_size 4")
    try:
        done = slurm.run("srun", "-N2", "--ntasks-per-node=1", "--time=3", f"--job-name={REFUSED}", "bash", "-c",
                         launch, check=False, timeout=300, cwd=tmp_path)
    finally:
        slurm.run("scancel", f"--name={REFUSED}", check=False)
    assert done.returncode != 0
    # each task is one of 2 SLURM tasks but a job of 1 process (runs.engine): refused before loading, nothing written.
    # Lines that start with it: accelerate >= 1.16's launcher re-raises a failed child's stderr in its own traceback
    # ("RuntimeError: countdown-rl train: error: ..."), a second copy of each task's line that is not ours.
    refusals = [line for line in done.stderr.splitlines()
                if line.startswith("countdown-rl train: error: this is one of 2 SLURM tasks")]
    assert len(refusals) == 2, crash_report(done.stderr)
    assert not out.exists()
