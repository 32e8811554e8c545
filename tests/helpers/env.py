"""The environment of a test's subprocess: offline (no Hub, no telemetry), one thread, this checkout importable."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository


def offline_env(**extra: str) -> dict[str, str]:
    """``os.environ`` plus no Hub, no telemetry, one OpenMP thread, quiet tokenizers and ``PYTHONPATH`` on this
    checkout; ``extra`` on top."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false", **extra}


def hang_guard(seconds: float) -> float:
    """A subprocess's timeout: ``seconds`` (what the run takes alone on 2 cores, with room) times 3. A test's timeout
    guards against a hang, it is no speed check, and the tests run in two worker processes (pytest-xdist): a run may
    share its core with the other worker's multi-process test (a budget-curriculum study that takes 200 s alone took
    over 400 s beside the SLURM tests' six training processes)."""
    return 3 * seconds
