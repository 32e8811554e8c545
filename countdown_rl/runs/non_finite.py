"""Non-finite training steps: a NaN or infinite loss or gradient norm never reaches the weights.

1. ``training_step`` notes a non-finite loss (any micro-step of the optimizer step); ``_get_grad_norm``, which the
   Trainer calls after clipping and right before ``optimizer.step()``, checks the gradient norm. With several
   processes the loss verdict is all-reduced (the gradient norm is already global).
2. Either way the gradients are dropped (``zero_grad(set_to_none=True)``): the optimizer skips parameters without
   gradients, so neither the weights nor the Adam moments take the bad step.
3. ``non_finite: stop`` (default): :class:`NonFiniteCallback` stops training at that step without saving a
   checkpoint, so the last good checkpoint stays the newest; the caller reports ``step N: <quantity> is nan`` in one
   line. ``non_finite: skip``: training goes on; ``non_finite_skipped`` (a running count) is added to every log.
"""

from __future__ import annotations

import math

import torch
from transformers import TrainerCallback


class NonFiniteMixin:
    """Trainer mixin (module docstring); ``non_finite`` is ``"stop"`` or ``"skip"``."""

    non_finite = "stop"
    non_finite_skipped = 0
    non_finite_event: tuple[int, str, float] | None = None  # (step, quantity, value) that stopped the run
    _bad_loss: float | None = None

    def training_step(self, model, inputs, num_items_in_batch=None):
        loss = super().training_step(model, inputs, num_items_in_batch)
        if self._bad_loss is None and not torch.isfinite(loss).all():
            self._bad_loss = float(loss.detach().float().sum())
        return loss

    def _get_grad_norm(self, model, grad_norm=None):
        grad_norm = super()._get_grad_norm(model, grad_norm)
        bad_loss, self._bad_loss = self._bad_loss, None
        if self.accelerator.num_processes > 1:
            flag = torch.tensor([float(bad_loss is not None)], device=self.accelerator.device)
            if self.accelerator.reduce(flag, "sum").item() and bad_loss is None:
                bad_loss = math.nan  # another process saw it
        norm = float(grad_norm) if grad_norm is not None else 0.0
        if bad_loss is None and math.isfinite(norm):
            return grad_norm
        quantity, value = ("loss", bad_loss) if bad_loss is not None else ("grad_norm", norm)
        model.zero_grad(set_to_none=True)  # the optimizer skips parameters without gradients
        step = self.state.global_step + 1
        if self.non_finite == "skip":
            self.non_finite_skipped += 1
        elif self.non_finite_event is None:
            self.non_finite_event = (step, quantity, value)
        return grad_norm

    def log(self, logs, *args, **kwargs):
        if "loss" in logs and self.non_finite == "skip":
            logs["non_finite_skipped"] = self.non_finite_skipped
        return super().log(logs, *args, **kwargs)


class NonFiniteCallback(TrainerCallback):
    """Stops training, without a checkpoint, at the step :class:`NonFiniteMixin` found non-finite."""

    def __init__(self, trainer):
        self.trainer = trainer

    def on_step_end(self, args, state, control, **kwargs):
        if self.trainer.non_finite_event is not None:
            control.should_save = False
            control.should_evaluate = False
            control.should_training_stop = True
        return control
