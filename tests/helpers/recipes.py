"""Recipes parsed and checked the way ``countdown-rl train`` does, for the recipe tests of every task."""

from __future__ import annotations

import importlib
from pathlib import Path
from unittest import mock

from countdown_rl.training.recipe import check_recipe, parse_args


def parse(path: Path, cpu: bool = True):
    """``(script, training, model)`` arguments of the recipe at ``path``, parsed by ``parse_args`` and checked by
    ``check_recipe``; GPU recipes get ``--use_cpu true`` on the command line only (``cpu=True``)."""
    parsed = parse_args(["--config", str(path), *(["--use_cpu", "true"] if cpu else [])])
    # check_recipe refuses use_vllm where vllm is not installed (it needs CUDA): vllm is cut at TRL's availability
    # check, to run the rest (task, options, template, reward names, batch arithmetic) as train checks them.
    with mock.patch.object(importlib.import_module("trl.import_utils"), "is_vllm_available", lambda *a, **k: True):
        check_recipe(*parsed)
    return parsed
