"""Deprecated import path: the trainer now lives in :mod:`countdown_rl.training.trainer`.

Kept as a thin re-export because ``from countdown_rl.trainer import CountdownGRPOTrainer`` is what scripts written
against the first layout say; import from ``countdown_rl`` or ``countdown_rl.training.trainer`` instead. This
module goes in a later release.
"""

import warnings

from countdown_rl.training.trainer import CountdownGRPOConfig, CountdownGRPOTrainer

warnings.warn("countdown_rl.trainer is deprecated; import CountdownGRPOConfig / CountdownGRPOTrainer from "
              "countdown_rl (or countdown_rl.training.trainer)", DeprecationWarning, stacklevel=2)

__all__ = ["CountdownGRPOConfig", "CountdownGRPOTrainer"]
