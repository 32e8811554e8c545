"""Sweep test helpers: a base recipe and a spec on disk, ``countdown-rl sweep`` as a process, a run's record."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from tests.helpers.env import ROOT, offline_env
SMOKE = ROOT / "recipes" / "smoke" / "cpu_tiny.yaml"
ENV = offline_env()


def base_recipe(tmp: Path, model_dir, puzzles, **overrides) -> Path:
    recipe = yaml.safe_load(SMOKE.read_text())
    recipe.update(model_name_or_path=str(model_dir), dataset_name=str(puzzles), max_steps=12, save_steps=2,
                  final_eval_size=4, eval_subset_size=0, **overrides)
    path = tmp / "base.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


def write_spec(tmp: Path, spec: dict, name: str = "spec.yaml") -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def sweep_process(spec: Path, cwd: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "countdown_rl.cli", "sweep", str(spec), *args], cwd=cwd, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_info(run_dir: Path) -> dict:
    return json.loads((run_dir / "run_info.json").read_text())
