"""Running a sweep's runs: one process per run, locally, or as a SLURM job array.

1. Run, locally (:func:`run_local`): one ``countdown-rl train`` process per run, one after another (a fresh
   process each: no state, compiled graph or memory carried between runs). A finished run is skipped, an
   unfinished one resumes from its newest complete checkpoint, a failed one is recorded with its error in its
   ``sweep_run.json`` and the sweep goes on. Each run's output is appended to ``<run>/train.log``; the
   console shows ``[sweep i/n name] step k/N ...``. A signal (SIGTERM, SIGINT, SIGUSR1) is passed to the run in
   flight, which saves a checkpoint; the sweep then stops with exit code 75, like ``train``.
2. Or on a cluster (:func:`slurm_script`): a SLURM job array, one task per run, each running
   ``countdown-rl sweep SPEC --index $SLURM_ARRAY_TASK_ID`` (through ``accelerate launch`` when the spec names an
   ``accelerate_config``); exit 75 requeues the task. We write the sbatch script; SLURM schedules.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from countdown_rl.files import write_atomic
from countdown_rl.runs.record import EXIT_INTERRUPTED
from countdown_rl.sweeps.spec import RUN_RECIPE, RUN_STATUS, SweepRun, SweepSpec, record_status, run_state

RUN_LOG = "train.log"
SBATCH_FILE = "sweep.sbatch"
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


def run_one(run: SweepRun, total: int, *, accelerate_config: str | None = None,
            echo: bool = False) -> tuple[int, list[str]]:
    """Run (or resume) one run in a child process; its output is appended to ``<run>/train.log``. Returns the exit
    code and the output's last lines. A signal to this process is passed on to the child, which saves a
    checkpoint and exits 75."""
    run.output_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, PROGRESS_ENV: f"{run.index + 1}/{total} {run.name}", "PYTHONUNBUFFERED": "1"}
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

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
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
            return child.wait(), list(recent)
        finally:
            for sig, handler in forwarded.items():
                signal.signal(sig, handler)
            if child.poll() is None:
                child.kill()


def run_local(spec: SweepSpec, runs: Sequence[SweepRun], *, only: Sequence[int] | None = None,
              echo: bool = False) -> int:
    """Run the runs one after another (``only``: these indices); returns 0, 1 (some run failed) or 75 (stopped by a
    signal; rerun the same command to go on)."""
    chosen = [r for r in runs if only is None or r.index in only]
    failed = []
    for run in chosen:
        head = f"[sweep {run.index + 1}/{len(runs)} {run.name}]"
        state = run_state(run)
        if state == "finished":
            print(f"{head} finished before: skipped", flush=True)  # its sweep_run.json (time taken) is kept
            continue
        print(f"{head} {'resuming' if state != 'new' else 'starting'} -> {run.output_dir}", flush=True)
        started = time.time()
        record_status(run, state="running", started=started)
        code, lines = run_one(run, len(runs), accelerate_config=spec.accelerate_config, echo=echo)
        seconds = round(time.time() - started, 1)
        if code == 0:
            record_status(run, state="finished", seconds=seconds)
            print(f"{head} finished in {seconds:.0f} s", flush=True)
        elif code == EXIT_INTERRUPTED or run_state(run) == "interrupted":  # accelerate's launcher exits 1, not 75
            record_status(run, state="interrupted", seconds=seconds, returncode=code)
            print(f"{head} interrupted (checkpoint saved); rerun the same command to go on", flush=True)
            return EXIT_INTERRUPTED
        else:
            error = _last_error(lines)
            record_status(run, state="failed", seconds=seconds, returncode=code, error=error)
            print(f"{head} failed (exit {code}): {error}; see {run.output_dir / RUN_LOG}", flush=True)
            failed.append(run.name)
    if failed:
        print(f"{len(failed)} of {len(chosen)} run(s) failed: {', '.join(failed)} (details in each {RUN_STATUS})")
        return 1
    return 0


# --------------------------------------------------------------------------------------------------------------
# SLURM
# --------------------------------------------------------------------------------------------------------------


def slurm_script(spec: SweepSpec, runs: Sequence[SweepRun], *, executable: str = "countdown-rl") -> str:
    """An sbatch script: a job array with one task per run, each running its run through ``sweep --index``.

    The task's time limit sends SIGUSR1 ``signal_seconds`` before the end (``train`` saves a checkpoint and exits
    75) and a task that exits 75 requeues itself; the requeued task resumes from that checkpoint.
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
        f"#SBATCH --signal={s.get('signal', 'USR1')}@{s.get('signal_seconds', 600)}",
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
    lines += [
        "",
        "# The array index is the run's index in sweep.json (the run table: countdown-rl sweep SPEC --dry_run).",
        f"{executable} sweep {shlex.quote(str(spec.path.resolve()))} --index \"$SLURM_ARRAY_TASK_ID\"",
        "code=$?",
        f"if [ \"$code\" -eq {EXIT_INTERRUPTED} ]; then",
        "  # interrupted with a checkpoint saved: back in the queue, the requeued task resumes",
        "  scontrol requeue \"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\"",
        "fi",
        "exit \"$code\"",
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
