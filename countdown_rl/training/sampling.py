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

Within a generation batch, TRL shuffles the rows and splits them into micro-batches, so a micro-batch holds
completions of several prompts and prompt-once shares little. :func:`whole_group_micro_batches`
(``group_micro_batches``) reorders TRL's shuffled rows before the split: the groups in the order TRL's shuffle
reached their first row, a group's rows contiguous (in TRL's shuffled order). It draws nothing, so every later
random draw is stock TRL's. Every row still feeds the same optimizer step, so where the loss is a sum of per-row
terms over the step (every loss type but ``bnpo``, no entropy bonus or entropy filter: the config refuses the
others) the update is TRL's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from torch.utils.data import Sampler

from countdown_rl.training.shared_prompt import distinct_prompts

__all__ = ["ResumableSampler", "whole_group_micro_batches"]


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


def whole_group_micro_batches(batches: list[dict]) -> list[dict]:
    """TRL's micro-batches of one generation batch (shuffled, split) re-split with each prompt's rows together
    (module docstring); keys as TRL's: a tensor or list per row, a 0-d tensor or None for the whole batch.

    >>> ids = torch.tensor([[1], [2], [1], [3], [2], [3]])
    >>> micro = [{"prompt_ids": ids[i:i + 2], "prompt_mask": torch.ones(2, 1), "row": list(range(i, i + 2)),
    ...           "num_items_in_batch": torch.tensor(6)} for i in (0, 2, 4)]
    >>> [(m["prompt_ids"].flatten().tolist(), m["row"]) for m in whole_group_micro_batches(micro)]
    [([1, 1], [0, 2]), ([2, 2], [1, 4]), ([3, 3], [3, 5])]
    """
    merged = {}
    for key, first in batches[0].items():
        values = [batch[key] for batch in batches]
        if first is None or (torch.is_tensor(first) and first.ndim == 0):
            merged[key] = first
        elif torch.is_tensor(first):
            merged[key] = torch.cat(values)
        else:
            merged[key] = [row for value in values for row in value]
    firsts, inverse = distinct_prompts(merged["prompt_ids"], merged["prompt_mask"])
    order = torch.argsort(firsts[inverse].cpu(), stable=True)  # by the group's first row, then TRL's order
    size = len(order) // len(batches)
    out = []
    for start in range(0, len(order), size):
        rows = order[start:start + size]
        out.append({key: value if value is None or (torch.is_tensor(value) and value.ndim == 0)
                    else value[rows.to(value.device)] if torch.is_tensor(value) else [value[i] for i in rows.tolist()]
                    for key, value in merged.items()})
    return out
