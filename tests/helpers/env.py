"""The environment of a test's subprocess: offline (no Hub, no telemetry), one thread, this checkout importable."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository


def offline_env(**extra: str) -> dict[str, str]:
    """``os.environ`` plus no Hub, no telemetry, one OpenMP thread, quiet tokenizers and ``PYTHONPATH`` on this
    checkout; ``extra`` on top."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false", **extra}
