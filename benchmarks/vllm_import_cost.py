"""What importing the trainer costs a process with and without vLLM, side by side in one run.

    python benchmarks/vllm_import_cost.py --repeats 5

1. In fresh interpreters, taken in turn (``--repeats`` of each), import ``countdown_rl.training.trainer`` (TRL's
   ``GRPOTrainer`` with it): as is, and after :func:`countdown_rl.generation.vllm_import.leave_vllm_out` (what
   ``countdown-rl train`` does when the recipe does not use vLLM).
2. Each reports the import's wall time, the shared libraries mapped into the process and the vLLM modules loaded.
3. A Markdown table of the medians, and the ratio of the two import times. Where vllm is not installed both rows
   are the same process, and the first line says so.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import markdown_table, median  # noqa: E402

PROBE = """
import json, sys, time
if sys.argv[1] == "left out":
    from countdown_rl.generation.vllm_import import leave_vllm_out
    leave_vllm_out()
start = time.perf_counter()
import countdown_rl.training.trainer
seconds = time.perf_counter() - start
libraries = {line.split()[-1] for line in open("/proc/self/maps") if ".so" in line}
vllm = sum(1 for name, module in sys.modules.items() if name.split(".")[0] == "vllm" and module is not None)
print(json.dumps({"seconds": seconds, "libraries": len(libraries), "vllm_modules": vllm}))
"""
MODES = ("as is", "left out")


def measure(mode: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE, mode], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"vllm_import_cost: the probe ({mode}) failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes of each kind (default 5)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    import importlib.util

    import torch

    installed = importlib.util.find_spec("vllm") is not None
    print(f"vllm_import_cost: vllm {'installed' if installed else 'not installed: both rows are the same process'}"
          f"; torch {torch.__version__}, kernels {torch.backends.cpu.get_cpu_capability()}, {args.repeats} "
          "fresh processes of each, in turn", flush=True)
    rows = {mode: [] for mode in MODES}
    for _ in range(args.repeats):
        for mode in MODES:
            rows[mode].append(measure(mode))
    table = []
    for mode, runs in rows.items():
        seconds = [run["seconds"] for run in runs]
        table.append([mode, f"{median(seconds):.1f}", f"{min(seconds):.1f}-{max(seconds):.1f}",
                      runs[-1]["libraries"], runs[-1]["vllm_modules"]])
    print()
    print(markdown_table(["vLLM", "import s (median)", "min-max", "shared libraries", "vLLM modules"], table))
    ratio = median(r["seconds"] for r in rows["as is"]) / median(r["seconds"] for r in rows["left out"])
    print(f"\nimport time as is / left out: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
