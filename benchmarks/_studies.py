"""Pieces shared by the study scripts (``gr_reinforce_study.py``, ``normaliser_ablation.py``): they write a base recipe
and sweep specs, run the sweeps with ``countdown-rl sweep`` and read the numbers back with the sweep report.

* ``write_yaml``: a recipe or spec file (keys in the given order).
* ``run_sweeps``: each spec's runs, ``jobs`` at a time. With ``jobs == 1`` that is ``countdown-rl sweep SPEC`` (one
  run after another); with more, ``countdown-rl sweep SPEC --index I`` processes side by side, as a SLURM array
  would run them, each with ``threads`` torch threads. Finished runs are skipped either way.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def write_yaml(path: str | Path, data: Mapping[str, Any]) -> Path:
    import yaml

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(dict(data), sort_keys=False, default_flow_style=None), encoding="utf-8")
    return path


def _env(threads: int) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false"}


def run_sweeps(specs: Sequence[Path], *, jobs: int = 1, threads: int = 2) -> dict[str, int]:
    """Run every spec's runs; returns ``{spec: exit code}`` (0 all finished, 1 some failed)."""
    from countdown_rl.sweeps.spec import prepare

    command = [sys.executable, "-m", "countdown_rl.cli", "sweep"]
    codes = {}
    if jobs <= 1:
        for spec in specs:
            codes[str(spec)] = subprocess.call([*command, str(spec)], env=_env(threads))
        return codes
    tasks = []
    for spec in specs:
        _, runs = prepare(spec)  # checked whole, sweep.json and recipes written, before any run starts
        tasks += [(spec, run.index) for run in runs]

    def one(task) -> int:
        spec, index = task
        done = subprocess.run([*command, str(spec), "--index", str(index)], env=_env(threads),
                              capture_output=True, text=True)
        last = [line for line in done.stdout.splitlines() if "finished" in line or "failed" in line]
        print(last[-1] if last else f"{spec.name} #{index}: exit {done.returncode}", flush=True)
        return done.returncode

    started = time.time()
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(one, tasks))
    for spec in specs:
        codes[str(spec)] = max((code for (s, _), code in zip(tasks, results) if s == spec), default=0)
    print(f"{len(tasks)} runs, {jobs} at a time: {time.time() - started:.0f} s", flush=True)
    return codes

