"""The training rows' order: the same in every epoch whether a run began at epoch 0 or resumed in that epoch.

TRL's ``RepeatSampler`` seeds one generator when it is built and draws one permutation per pass over the data, so
epoch e's order is the generator's (e+1)-th draw. A resumed run builds a fresh sampler: resumed in epoch 0 it is
exact (transformers' ``skip_first_batches`` draws epoch 0's order and skips the batches done), but resumed in epoch
e >= 1 its first draw is epoch 0's order again, and every later step trains on other prompts than the uninterrupted
run did. :class:`ResumableSampler` wraps TRL's sampler:

1. before a pass, it reads the trainer's epoch (``int(state.epoch)``: the epoch under way, restored from the
   checkpoint on a resume);
2. if fewer passes were drawn than that epoch, it starts the passes it missed (one draw each, TRL's own) so that
   the next pass is the epoch's own order;
3. then it yields TRL's pass unchanged. An uninterrupted run never misses a pass: its order is stock TRL's.

The epoch comes from the trainer's state, not from ``set_epoch``: accelerate does not forward ``set_epoch`` to a
sampler under both a process shard and a skip of done batches (a multi-process run resumed mid-epoch).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from torch.utils.data import Sampler

__all__ = ["ResumableSampler"]


class ResumableSampler(Sampler):
    """TRL's train sampler with each epoch's order independent of where the run started (module docstring).

    >>> import torch
    >>> from trl.trainer.utils import RepeatSampler
    >>> stock = RepeatSampler(range(4), mini_repeat_count=1, batch_size=2, seed=0)
    >>> first, second = list(stock), list(stock)                       # an uninterrupted run's epochs 0 and 1
    >>> fresh = RepeatSampler(range(4), mini_repeat_count=1, batch_size=2, seed=0)
    >>> list(ResumableSampler(fresh, epoch=lambda: 1)) == second      # a run resumed in epoch 1
    True
    """

    def __init__(self, sampler: Sampler, epoch: Callable[[], float]):
        self.sampler = sampler
        self.epoch = epoch
        self.passes = 0  # passes drawn from `sampler` so far, the catch-up ones included

    def __len__(self) -> int:
        return len(self.sampler)

    def __iter__(self) -> Iterator[int]:
        epoch = int(self.epoch() or 0)
        while self.passes < epoch:  # a resumed run: draw the orders of the epochs it did not run here
            next(iter(self.sampler), None)  # TRL draws a pass's permutation at its first index
            self.passes += 1
        self.passes += 1
        yield from self.sampler
