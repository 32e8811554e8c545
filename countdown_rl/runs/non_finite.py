"""Non-finite training steps: a NaN or infinite loss or gradient norm never reaches the weights.

1. Each micro-step's loss is checked (:func:`non_finite_loss`); right before ``optimizer.step()`` the gradient norm
   is (:func:`non_finite_verdict`). With several processes the loss verdict is all-reduced (the gradient norm is
   already global).
2. Either way the gradients are dropped (``zero_grad(set_to_none=True)``): the optimizer skips parameters without
   gradients, so neither the weights nor the Adam moments take the bad step.
3. ``non_finite: stop`` (default): training stops at that step without saving a checkpoint, so the last good
   checkpoint stays the newest; the caller reports ``step N: <quantity> is nan`` in one line. ``non_finite: skip``:
   training goes on; ``non_finite_skipped`` (a running count) is added to every log.

The trainer's side (the Trainer methods that call these) is :mod:`countdown_rl.training.reliability`.

>>> non_finite_verdict(None, 1.5), non_finite_verdict(None, float("inf")), non_finite_verdict(float("nan"), 1.0)
(None, ('grad_norm', inf), ('loss', nan))
"""

from __future__ import annotations

import math

NON_FINITE = ("stop", "skip")


def non_finite_loss(loss) -> float | None:
    """The loss (a tensor) as a float when any element of it is NaN or infinite, else None."""
    import torch  # here: the recipe's parser imports this module for NON_FINITE, and stays fast

    return None if torch.isfinite(loss).all() else float(loss.detach().float().sum())


def non_finite_verdict(bad_loss: float | None, grad_norm) -> tuple[str, float] | None:
    """``(quantity, value)`` of the step's first non-finite quantity (the loss first, then the gradient norm), or
    None when both are finite (``grad_norm`` None counts as 0)."""
    norm = float(grad_norm) if grad_norm is not None else 0.0
    if bad_loss is None and math.isfinite(norm):
        return None
    return ("loss", bad_loss) if bad_loss is not None else ("grad_norm", norm)
