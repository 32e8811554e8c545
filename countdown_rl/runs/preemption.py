"""Stopping cleanly on SIGTERM, SIGINT or SIGUSR1 (SLURM's ``--signal``): one more step, a checkpoint, exit.

1. :class:`Preemption` replaces the handlers of the three signals while training runs. The first signal only sets
   a flag (and prints one line): the step in flight (generation, backward, optimizer step) finishes.
   Later signals print one line and are otherwise ignored, so a second Ctrl-C or ``scancel`` cannot break the
   checkpoint being written (only SIGKILL can, and then the save is in a staging folder: see ``checkpoints``).
2. :class:`PreemptionCallback` checks the flag at every step end; with several processes the flag is all-reduced
   first (a signal may reach one rank only), so every rank stops at the same step. It stops at the next step that
   ends a generation cycle (``steps_per_generation * num_iterations`` micro-steps: TRL buffers completions across
   steps, and a checkpoint inside a cycle would not resume bit-exactly), asks the Trainer to save a checkpoint
   there (model, optimizer, scheduler, RNG and the data position in ``trainer_state.json``) and to stop. A signal
   during a scheduled save stops right after it (``on_save``): that checkpoint is already the current step. At the
   last step (``max_steps``) a signal stops nothing: training ends there anyway and the run finishes as usual
   (final save, evaluation, status ``finished``), not ``interrupted`` with no step left to train.
3. The caller (:func:`countdown_rl.training.reliability.run_training`) records ``interrupted at step N`` in the run's
   status and exits with ``runs.record.EXIT_INTERRUPTED`` (75, EX_TEMPFAIL: "try again") and one line saying how
   to resume.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable

from transformers import TrainerCallback

SIGNALS = tuple(s for s in (signal.SIGTERM, signal.SIGINT, getattr(signal, "SIGUSR1", None)) if s is not None)


class Preemption:
    """A context manager holding our handlers for :data:`SIGNALS` (the previous ones come back on exit)."""

    def __init__(self, prog: str = "countdown-rl train"):
        self.prog = prog
        self.received: list[str] = []
        self.saving = False
        self._previous: dict[int, object] = {}

    @property
    def requested(self) -> bool:
        return bool(self.received)

    @property
    def signal_name(self) -> str | None:
        return self.received[0] if self.received else None

    def _handle(self, signum, frame) -> None:
        name = signal.Signals(signum).name
        self.received.append(name)
        if len(self.received) == 1:
            message = "finishing the current step, then saving a checkpoint and stopping"
        else:
            message = ("already stopping; " + ("the checkpoint is being written, " if self.saving else "")
                       + "this signal is ignored (SIGKILL would lose only the checkpoint in progress)")
        print(f"{self.prog}: received {name}: {message}", file=sys.stderr, flush=True)

    def __enter__(self) -> Preemption:
        for sig in SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()


class PreemptionCallback(TrainerCallback):
    """Turns a received signal into ``should_save`` + ``should_training_stop`` at a resumable step end."""

    def __init__(self, preemption: Preemption, trainer, micro_step: Callable[[], int]):
        self.preemption = preemption
        self.trainer = trainer
        self.micro_step = micro_step  # micro-steps done so far (TRL's counter: the trainer's side reads it)
        self.stopped_at: int | None = None

    def _requested_anywhere(self) -> bool:
        import torch

        flag = self.preemption.requested
        accelerator = self.trainer.accelerator
        if accelerator.num_processes > 1:
            flag = bool(accelerator.reduce(torch.tensor([float(flag)], device=accelerator.device), "sum").item())
        return flag

    def _at_cycle_end(self) -> bool:
        trainer = self.trainer
        generate_every = trainer.args.steps_per_generation * getattr(trainer, "num_iterations", 1)
        return self.micro_step() % generate_every == 0

    @staticmethod
    def _training_left(state) -> bool:
        # False at the last step: the Trainer stops there itself (DefaultFlowCallback), so a stop asked for now
        # would record a finished run as interrupted. The same on every rank (one global_step): no collective is
        # skipped on one rank only.
        return state.global_step < state.max_steps

    def on_step_end(self, args, state, control, **kwargs):
        if self.stopped_at is None and self._training_left(state) and self._requested_anywhere() \
                and self._at_cycle_end():
            self.stopped_at = state.global_step
            self.preemption.saving = True
            control.should_save = True
            control.should_training_stop = True
        return control

    def on_save(self, args, state, control, **kwargs):
        if self.stopped_at is not None:
            self.preemption.saving = False
        elif self._training_left(state) and self._requested_anywhere() and self._at_cycle_end():
            # the signal came during a scheduled save: that checkpoint is the one to stop at, no extra step
            self.stopped_at = state.global_step
            control.should_training_stop = True
        return control
