"""The trainer's side of a safe long run: atomic checkpoints, the non-finite guard, training under signals.

1. :class:`AtomicCheckpointMixin`: transformers' ``_save_checkpoint`` writes into a staging folder
   (``_get_output_dir`` points there while it runs); the main process then publishes it whole and rotates
   (:mod:`countdown_rl.runs.checkpoints`).
2. :class:`NonFiniteMixin`: ``training_step`` notes a non-finite loss; ``_get_grad_norm``, which the Trainer calls
   after clipping and right before ``optimizer.step()``, drops the gradients of a non-finite step
   (:mod:`countdown_rl.runs.non_finite`); :class:`NonFiniteCallback` stops training there with ``non_finite: stop``.
3. :func:`run_training` trains under the signal handlers (:mod:`countdown_rl.runs.preemption`) and turns the way
   training ended into the run's status in ``run_info.json`` and, if it did not finish, one line and an exit code:
   interrupted -> 75 (resume with ``--resume true``), non-finite -> 1. A signal that came too late to stop
   before the last step stops nothing (``runs.preemption``): one line says so and the run finishes.
4. :class:`StepLimitMixin`: a run resumed from a checkpoint at ``max_steps`` (or past a lowered one) trains no
   step. transformers' loop checks ``should_training_stop`` only after a step, so it would train one more
   (``step 13/12``); ``get_batch_samples``, which it calls at the start of each step, stops it before any batch is
   drawn, and the run goes on to its final save and evaluation.

The mixins override private transformers methods (and a public one whose place in the private loop they rely on),
so they live in :mod:`countdown_rl.training` (pinned by ``tests/training/test_trl_pin.py``).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import torch
from transformers import TrainerCallback

from countdown_rl.runs.checkpoints import STAGING, finish_staged_save, last_complete_checkpoint, staged_checkpoint
from countdown_rl.runs.non_finite import non_finite_loss, non_finite_verdict
from countdown_rl.runs.record import EXIT_INTERRUPTED, EXIT_NON_FINITE, TRAINER_STATE, set_status
from countdown_rl.training.trainer import CountdownGRPOTrainer

__all__ = ["AtomicCheckpointMixin", "NonFiniteCallback", "NonFiniteMixin", "ReliableCountdownGRPOTrainer",
           "StepLimitMixin", "reliable_trainer_class", "run_training"]


class AtomicCheckpointMixin:
    """Trainer mixin: checkpoints are written to a staging folder and published whole (module docstring, 1)."""

    _staging_save = False

    def _get_output_dir(self, trial):
        out = super()._get_output_dir(trial)
        return os.path.join(out, STAGING) if self._staging_save else out

    def _save_checkpoint(self, model, trial):
        run_dir = Path(super()._get_output_dir(trial))
        staged = staged_checkpoint(run_dir, self.state.global_step)
        if self.args.should_save:
            shutil.rmtree(staged, ignore_errors=True)  # a save that died half-way
        self.accelerator.wait_for_everyone()
        self._staging_save = True
        try:
            super()._save_checkpoint(model, trial)  # its rotation only sees the staging folder: deletes nothing
        finally:
            self._staging_save = False
        self.accelerator.wait_for_everyone()
        if self.args.should_save:
            if self.state.best_model_checkpoint and Path(self.state.best_model_checkpoint) == staged:
                # the state file was written with the staging path: point it at the published folder
                self.state.best_model_checkpoint = str(run_dir / staged.name)
                self.state.save_to_json(str(staged / TRAINER_STATE))
            best = {Path(self.state.best_model_checkpoint)} if self.state.best_model_checkpoint else set()
            finish_staged_save(staged, run_dir, self.args.save_total_limit, keep=best)
        self.accelerator.wait_for_everyone()


class NonFiniteMixin:
    """Trainer mixin (module docstring, 2); ``non_finite`` is ``"stop"`` or ``"skip"``."""

    non_finite = "stop"
    non_finite_skipped = 0
    non_finite_event: tuple[int, str, float] | None = None  # (step, quantity, value) that stopped the run
    _bad_loss: float | None = None

    def training_step(self, model, inputs, num_items_in_batch=None):
        loss = super().training_step(model, inputs, num_items_in_batch)
        if self._bad_loss is None:
            self._bad_loss = non_finite_loss(loss)
        return loss

    def _get_grad_norm(self, model, grad_norm=None):
        grad_norm = super()._get_grad_norm(model, grad_norm)
        bad_loss, self._bad_loss = self._bad_loss, None
        if self.accelerator.num_processes > 1:
            flag = torch.tensor([float(bad_loss is not None)], device=self.accelerator.device)
            if self.accelerator.reduce(flag, "sum").item() and bad_loss is None:
                bad_loss = float("nan")  # another process saw it
        verdict = non_finite_verdict(bad_loss, grad_norm)
        if verdict is None:
            return grad_norm
        model.zero_grad(set_to_none=True)  # the optimizer skips parameters without gradients
        step = self.state.global_step + 1
        if self.non_finite == "skip":
            self.non_finite_skipped += 1
        elif self.non_finite_event is None:
            self.non_finite_event = (step, *verdict)
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


class StepLimitMixin:
    """Trainer mixin: no step past ``max_steps``, also when resumed at it (module docstring, 4)."""

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        if self.state.global_step >= self.state.max_steps:
            # Only a resume gets here (a run's last step stops the loop itself). No batch: the loop trains nothing,
            # breaks on the flag and ends training as usual (on_train_end, metrics); every rank alike.
            self.control.should_training_stop = True
            return [], None
        return super().get_batch_samples(epoch_iterator, num_batches, device)


class ReliableCountdownGRPOTrainer(AtomicCheckpointMixin, NonFiniteMixin, StepLimitMixin, CountdownGRPOTrainer):
    """``CountdownGRPOTrainer`` with atomic checkpoints, the non-finite guard and the step limit (mixins first: they
    wrap its methods)."""


def reliable_trainer_class(base: type = CountdownGRPOTrainer) -> type:
    """``base`` with atomic checkpoints, the non-finite guard and the step limit:
    :class:`ReliableCountdownGRPOTrainer` for ours, the same mixins on another trainer class."""
    if base is CountdownGRPOTrainer:
        return ReliableCountdownGRPOTrainer
    return type(f"Reliable{base.__name__}", (AtomicCheckpointMixin, NonFiniteMixin, StepLimitMixin, base), {})


def _say(prog: str, kind: str, message: str) -> None:
    print(f"{prog}: {kind}: {message}", file=sys.stderr, flush=True)


def run_training(trainer, checkpoint: str | None, *, non_finite: str = "stop",
                 prog: str = "countdown-rl train") -> int | None:
    """Train (resuming from ``checkpoint``); None if training finished, else the exit code after one line."""
    from countdown_rl.runs.preemption import Preemption, PreemptionCallback

    output_dir = trainer.args.output_dir
    main = trainer.accelerator.is_main_process
    trainer.non_finite = non_finite
    trainer.add_callback(NonFiniteCallback(trainer))
    with Preemption(prog) as preemption:
        # TRL's micro-step counter says where a generation cycle ends (a checkpoint inside one would not resume
        # bit-exactly)
        callback = PreemptionCallback(preemption, trainer, micro_step=lambda: getattr(trainer, "_step", 0))
        trainer.add_callback(callback)
        trainer.train(resume_from_checkpoint=checkpoint)
    step = trainer.state.global_step
    if trainer.non_finite_event is not None:
        bad_step, quantity, value = trainer.non_finite_event
        last = last_complete_checkpoint(output_dir)
        message = (f"step {bad_step}: {quantity} is {value} (not applied); the last good checkpoint is "
                   f"{last or 'none (no checkpoint was saved yet)'}; pass non_finite: skip to skip such steps, or "
                   "lower the learning rate and resume")
        if main:
            set_status(output_dir, "failed", step=bad_step - 1, message=message,
                       checkpoint=str(last) if last else None)
            _say(prog, "error", message)
        return EXIT_NON_FINITE
    if callback.stopped_at is not None:
        last = last_complete_checkpoint(output_dir)
        message = (f"interrupted by {preemption.signal_name} at step {step}; checkpoint {last} saved; resume with "
                   "the same command and --resume true")
        if main:
            set_status(output_dir, "interrupted", step=step, message=f"interrupted at step {step}",
                       signal=preemption.signal_name, checkpoint=str(last) if last else None)
            _say(prog, "stopped", message)
        return EXIT_INTERRUPTED
    if preemption.requested and main:  # the line the signal printed promised a stop: say why there was none
        _say(prog, "note", f"training reached its last step ({step} of {trainer.state.max_steps}) before "
             f"{preemption.signal_name} could stop it: the run goes on to its final save and evaluation (a second "
             "signal stops it; --resume true then trains no step)")
    return None
