"""countdown-rl: GRPO and Dr.GRPO on the Countdown task, built on Hugging Face TRL.

The trainer classes are imported lazily so that ``import countdown_rl`` (and the CLI's ``--help``) stays fast:
importing TRL costs several seconds.
"""

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_LAZY = {
    "CountdownGRPOConfig": "countdown_rl.training.config",
    "CountdownGRPOTrainer": "countdown_rl.training.trainer",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'countdown_rl' has no attribute {name!r}")
