"""Run the tests' two-process CPU launches N times, with load beside them, and count the runs that fail.

    python scripts/stress_multiprocess.py --runs 30                      # DDP, FSDP2, SLURM two-node, in turn
    python scripts/stress_multiprocess.py --runs 30 --kinds ddp --load 0  # DDP alone, nothing beside it
    python scripts/stress_multiprocess.py --runs 20 --kinds fsdp2-resume  # the FSDP2 stop-and-resume pair

1. The tiny Qwen3 and 64 puzzles are made once (as the tests' session fixtures make them).
2. ``--load`` processes run the default tier's CPU-heavy test folders in a loop beside the launches, one thread
   each: the other pytest worker of CI's slow tier, which shares the 2 cores with a two-process test.
3. Each run is one launch exactly as the slow tier's tests start it (``tests/helpers``): ``accelerate launch`` of
   DDP or of FSDP2 (``accelerate_configs/fsdp.yaml``) over 2 gloo processes, or ``slurm/train_multinode.sbatch`` on the
   local SLURM's two nodes (``scripts/local_slurm.sh``; skipped, saying why, where it cannot start); or
   (``fsdp2-resume``) the FSDP2 fixture's pair: a launch stopped by SIGTERM at step 3, then its ``--resume true``. A
   launch that hangs gets SIGABRT on every process (``tests/helpers/env.run_or_dump``): its ranks' stacks are printed. A run fails when
   it exits non-zero or its model is not written; its log is kept under ``--output_dir`` and the crash lines
   (``Fatal Python error``, a signal, gloo's errors) are printed.
4. The last line: ``N passed, F failed`` (exit 1 when F > 0).
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.env import crash_report, offline_env  # noqa: E402
from tests.helpers.train_runs import DDP_LAUNCH, FAULT_RUN, FSDP2_LAUNCH, SMOKE, accelerate_launch  # noqa: E402

KINDS = ("ddp", "fsdp2", "slurm", "fsdp2-resume")
# CPU-bound default-tier folders, one thread each: the load beside the launches.
LOAD_TESTS = ("tests/algorithms", "tests/tasks", "tests/training/test_loss.py")
SLURM_DIR = Path(os.environ.get("COUNTDOWN_RL_SLURM_DIR", "/tmp/countdown-rl-slurm"))


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="launches in all, the kinds taken in turn (default 30)")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS[:3]),
                        help="which launches (default ddp fsdp2 slurm; fsdp2-resume: the FSDP2 fixture's pair, stopped "
                        "by SIGTERM at step 3 then resumed, with its in-training evaluations)")
    parser.add_argument("--load", type=int, default=1,
                        help="processes running default-tier tests in a loop beside the launches (default 1)")
    parser.add_argument("--steps", type=int, default=4, help="training steps a launch (default 4, the smoke recipe's)")
    parser.add_argument("--output_dir", type=Path, default=None,
                        help="where failed runs' logs are kept (default: a new temporary folder)")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.load < 0 or args.steps < 1:
        parser.error("--runs and --steps must be at least 1, --load at least 0")
    return args


def make_inputs(base: Path) -> tuple[Path, Path]:
    from countdown_rl.data.jsonl import write_jsonl
    from countdown_rl.demo.tiny import save_tiny_model
    from countdown_rl.tasks.countdown.puzzles import generate_countdown

    model = save_tiny_model(base / "model", size="test", seed=0)
    puzzles = base / "puzzles.jsonl"
    write_jsonl(generate_countdown(64, seed=0), puzzles)
    return model, puzzles


def start_load(count: int, logs: Path) -> list[subprocess.Popen]:
    loop = f"while true; do {sys.executable} -m pytest -q -n 0 -p no:cacheprovider {' '.join(LOAD_TESTS)}; done"
    return [subprocess.Popen(["bash", "-c", loop], cwd=ROOT, env=offline_env(), stderr=subprocess.STDOUT,
                             stdout=open(logs / f"load-{i}.log", "w"), start_new_session=True) for i in range(count)]


def stop_load(processes: list[subprocess.Popen]) -> None:
    import signal

    for process in processes:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


def slurm_env() -> dict[str, str] | None:
    """The local cluster's client environment, the cluster started when needed; None where it cannot run."""
    if os.geteuid() != 0:
        return None
    script = ROOT / "scripts" / "local_slurm.sh"
    if subprocess.run(["bash", str(script), "status", str(SLURM_DIR)], capture_output=True).returncode != 0:
        if subprocess.run(["bash", str(script), "start", str(SLURM_DIR)], capture_output=True,
                          timeout=900).returncode != 0:
            return None
    return offline_env(SLURM_CONF=str(SLURM_DIR / "slurm.conf"), PYTHONUNBUFFERED="1",
                       PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")


def launch(kind: str, model: Path, puzzles: Path, out: Path, steps: int, env: dict | None):
    """One launch as the tests start it; (exit code, the log)."""
    train = ["--config", str(SMOKE), "--model_name_or_path", str(model), "--dataset_name", str(puzzles),
             "--output_dir", str(out), "--max_steps", str(steps), "--final_eval_size", "4"]
    if kind == "fsdp2-resume":  # tests/runs/test_engine.py's FSDP2 fixture: a stopped launch, then its resume
        evaluations = ["--eval_strategy", "steps", "--eval_steps", "2", "--eval_subset_size", "5", "--final_eval_size",
                       "7"]
        logs = []
        for fault, extra in (("signal:generation:3:TERM", []), ("none", ["--resume", "true"])):
            done = accelerate_launch(FSDP2_LAUNCH, [str(FAULT_RUN), fault, "--"], *train, *evaluations, *extra)
            logs.append(done.stdout + done.stderr)
        stopped = "interrupted by SIGTERM at step 3" in logs[0]
        return (done.returncode if stopped else "not stopped at step 3"), "\n".join(logs)
    if kind in ("ddp", "fsdp2"):
        done = accelerate_launch(DDP_LAUNCH if kind == "ddp" else FSDP2_LAUNCH, [str(FAULT_RUN), "none", "--"], *train)
        return done.returncode, done.stdout + done.stderr
    log = out.parent / f"{out.name}.slurm.out"
    # the script's own early signal (TERM 600 s before the limit) would stop a short job at once: 60 s here
    job = ["sbatch", "--wait", "--time=15", "--signal=TERM@60", f"--output={log}",
           str(ROOT / "slurm" / "train_multinode.sbatch")]
    done = subprocess.run([*job, *train], cwd=out.parent, env=env, capture_output=True, text=True, timeout=900)
    return done.returncode, done.stdout + done.stderr + (log.read_text(errors="replace") if log.exists() else "")


def main(argv=None) -> int:
    args = parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="stress-"))
    keep = args.output_dir or base / "failed"
    keep.mkdir(parents=True, exist_ok=True)
    import torch

    print(f"stress: {args.runs} launches of {', '.join(args.kinds)}, {args.load} load process(es) beside; "
          f"torch {torch.__version__}, kernels {torch.backends.cpu.get_cpu_capability()}, "
          f"vllm {'installed' if _installed('vllm') else 'not installed'}; logs of failures in {keep}", flush=True)
    kinds = list(args.kinds)
    env = None
    if "slurm" in kinds:
        env = slurm_env()
        if env is None:
            print("stress: slurm left out: the local SLURM needs root and scripts/local_slurm.sh start", flush=True)
            kinds.remove("slurm")
            if not kinds:
                return 1
    model, puzzles = make_inputs(base)
    load = start_load(args.load, base)
    counts = {k: [0, 0] for k in kinds}  # kind: [ran, failed]
    try:
        for i, kind in zip(range(args.runs), itertools.cycle(kinds)):
            out = base / f"run-{i}-{kind}"
            start = time.monotonic()
            try:
                code, log = launch(kind, model, puzzles, out, args.steps, env)
            except subprocess.TimeoutExpired as timeout:
                code, log = "timeout", f"{timeout}"
            except AssertionError as hang:  # tests.helpers.env.run_or_dump: every process's stack in the message
                code, log = "hang", str(hang)
            ok = code == 0 and (out / "model.safetensors").is_file()
            counts[kind][0] += 1
            print(f"stress: run {i + 1}/{args.runs} {kind}: {'ok' if ok else f'FAILED (exit {code})'} "
                  f"in {time.monotonic() - start:.0f} s", flush=True)
            if not ok:
                counts[kind][1] += 1
                (keep / f"run-{i}-{kind}.log").write_text(log)
                print(crash_report(log, limit=4000), flush=True)
            shutil.rmtree(out, ignore_errors=True)
    finally:
        stop_load(load)
    for kind, (ran, bad) in counts.items():
        print(f"stress: {kind}: {bad} of {ran} failed")
    failed = sum(bad for _, bad in counts.values())
    print(f"{args.runs - failed} passed, {failed} failed")
    shutil.rmtree(base / "model", ignore_errors=True)
    return 1 if failed else 0


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


if __name__ == "__main__":
    sys.exit(main())
