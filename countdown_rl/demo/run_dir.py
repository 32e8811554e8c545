"""The demo's folders and the process it runs in: the names of what it writes, its stage records, a run cleared.

1. Names: the run record's source (:data:`DEMO_SOURCE`, the command's name) and the files and folders a run writes
   beside the ones every run has (:mod:`countdown_rl.runs.record`): ``demo_results.json``, the RL run's
   ``recipe.yaml`` and ``data/``, the sampled and expression-pool evaluations' folders.
2. A stage folder is finished when its run record (``run_info.json``) says so with the same settings:
   :func:`finish_stage` writes it last, :func:`stage_done` reads it (``--resume`` reuses such a stage).
3. :func:`prepare_run_dir`: without ``--resume`` a previous demo run is cleared (its checkpoints would be resumed
   later); a non-empty folder this command did not write is never touched.
4. :func:`setup_environment`: offline Hub, no telemetry, passive OpenMP threads; :func:`print_header`: a stage's line.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from countdown_rl.runs.record import RunRecord, read_run_record, write_run_record

PROG = "countdown-rl demo"
DEMO_SOURCE = PROG  # the run record's source: a run directory this command may clear
RESULTS_FILE = "demo_results.json"
RL_DATA_DIR = "data"  # in the RL run's folder: the RL puzzles (train.jsonl) and the held-out ones (test.jsonl)
RECIPE_FILE = "recipe.yaml"  # in the RL run's folder: the recipe it ran, for countdown-rl train --config
# the sampled evaluations (pass@k): the SFT model's in <output_dir>, the RL model's in its run folder
ZERO_SHOT_SAMPLED_DIR, FINAL_SAMPLED_DIR = "zero_shot_sampled", "eval_sampled"
# the expression-pool evaluations (DemoConfig.expression_eval): the SFT model's in <output_dir>, the RL model's in its
# run folder
ZERO_SHOT_EXPRESSION_DIR, FINAL_EXPRESSION_DIR = "zero_shot_expression", "eval_expression"


def setup_environment(num_threads: int) -> None:
    """Offline Hub, no telemetry, and a thread setting that survives a busy machine.

    ``OMP_WAIT_POLICY=PASSIVE`` only works if set before torch loads its OpenMP runtime: with the default
    spinning threads, a 2-thread run sharing 2 cores with another process was 5-10x slower (measured).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import datasets
    import torch
    from transformers.utils import logging as hf_logging

    torch.set_num_threads(max(1, min(num_threads, os.cpu_count() or 1)))
    # The demo prints one line per stage and per few steps; the libraries' bars (tokenizing, loading, saving
    # weights) would bury them.
    datasets.disable_progress_bars()
    hf_logging.disable_progress_bar()


def read_json_or_none(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def stage_done(path: Path, stage: Mapping[str, Any]) -> bool:
    """Whether ``path`` holds a finished stage made with exactly these settings (its run record says so)."""
    try:
        record = read_run_record(path)
    except ValueError:
        return False
    return (record is not None and record.source == DEMO_SOURCE and record.status.get("state") == "finished"
            and record.extra.get("demo_stage") == json.loads(json.dumps(stage)))


def finish_stage(path: Path, stage: Mapping[str, Any], *, model: str, dataset: str) -> None:
    """Mark a stage folder finished: its run record (the same ``run_info.json`` as every run), written last."""
    write_run_record(path, RunRecord(algorithm=str(stage["stage"]), model=model, dataset=dataset, source=DEMO_SOURCE,
                                     status={"state": "finished", "step": None, "message": None},
                                     extra={"demo_stage": dict(stage)}))


def print_header(text: str) -> None:
    print(f"\n== {text} ==", flush=True)


def prepare_run_dir(run: Path, resume: bool) -> None:
    """Without --resume, clear a previous demo run (its checkpoints would otherwise be resumed later);
    refuse to touch a non-empty folder that this command did not write."""
    if resume or not run.exists():
        return
    try:
        record = read_run_record(run)
    except ValueError:
        record = None
    if record is not None and record.source == DEMO_SOURCE:
        print(f"removing the previous run in {run} (pass --resume to continue it instead)")
        shutil.rmtree(run)
    elif any(run.iterdir()):
        raise ValueError(f"{run} exists and is not a {PROG} run directory; choose another --output_dir")
