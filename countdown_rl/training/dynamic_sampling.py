"""Dynamic sampling (DAPO's group filter, arXiv 2503.14476 section 3.2) for ``CountdownGRPOTrainer``.

A group whose completions all score alike has advantage 0 under group scaling: it teaches nothing and, with a
token-count reduction, dilutes the update. With ``dynamic_sampling: true`` each training generation batch is filled
with groups whose rewards differ: round 1 is TRL's own batch; while the batch holds fewer such groups than
``dynamic_sampling_min_groups`` and fewer than ``dynamic_sampling_max_rounds`` rounds have run, the next prompts are
drawn (:class:`PromptDraws`) and scored by the same TRL call. Each process then keeps whole groups of its own
(:func:`plan_groups`): first the differing ones in draw order, then, where too few differ, groups that do not (their
advantages are 0), so the batch keeps TRL's shape; :func:`join_rounds` concatenates the kept rows.

Which groups differ (:func:`outcome_groups_differ`, :func:`reward_groups_differ`): with a task whose columns the rows
carry, by the task's binary outcome (some but not all completions correct, as DAPO's accuracy filter: a shaped reward
would keep all-wrong groups whose formats differ); otherwise by the weighted summed reward, beyond
:data:`REWARD_TOLERANCE`. The decision is taken from gathered flags, so every process runs the same rounds (each round
has collectives).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from transformers import TrainerCallback

from countdown_rl.runs.record import update_extra

__all__ = ["REWARD_TOLERANCE", "DynamicSamplingRecord", "GroupPlan", "PromptDraws", "join_rounds",
           "outcome_groups_differ", "plan_groups", "reward_groups_differ"]

# Two summed rewards of a group differ when they are further apart than this, relative to the larger magnitude
# (at least 1): float sums of equal scores (0.1 + 0.2 vs 0.3) do not count as a difference.
REWARD_TOLERANCE = 1e-6


def reward_groups_differ(rewards: torch.Tensor, group_size: int, tolerance: float = REWARD_TOLERANCE) -> torch.Tensor:
    """Per group of ``group_size`` consecutive summed rewards (NaN: unscorable, left out), whether they differ.

    >>> reward_groups_differ(torch.tensor([0.3, 0.1 + 0.2, 0.0, 1.0, 1.0, float("nan")]), 2).tolist()
    [False, True, False]
    """
    grouped = rewards.view(-1, group_size)
    valid = ~torch.isnan(grouped)
    top = torch.where(valid, grouped, -math.inf).amax(dim=1)
    bottom = torch.where(valid, grouped, math.inf).amin(dim=1)
    scale = torch.maximum(top.abs(), bottom.abs()).clamp(min=1.0)
    return (valid.sum(dim=1) >= 2) & (top - bottom > tolerance * scale)


def outcome_groups_differ(correct: list[bool], group_size: int) -> torch.Tensor:
    """Per group of ``group_size`` consecutive completions, whether some but not all are correct.

    >>> outcome_groups_differ([True, False, True, True, False, False], 2).tolist()
    [True, False, False]
    """
    counts = torch.tensor(correct, dtype=torch.long).view(-1, group_size).sum(dim=1)
    return (counts > 0) & (counts < group_size)


@dataclass
class GroupPlan:
    """Which groups each process keeps: ``kept[rank]`` lists ``(round, group)`` of that process's own groups in draw
    order; ``differing`` counts the kept groups that differ (all processes); ``full``: at least the target."""

    kept: list[list[tuple[int, int]]]
    differing: int
    full: bool


def plan_groups(differ: torch.Tensor, num_processes: int, target: int) -> GroupPlan:
    """``differ`` (rounds, all groups), each round's groups in process order (process r holds groups
    ``r * n .. (r + 1) * n - 1``, n = groups per process): each process keeps n of its groups, first the differing
    ones in draw order, then non-differing ones in draw order; the rows go out in draw order.

    >>> plan = plan_groups(torch.tensor([[True, False, False, False], [True, True, False, False]]), 2, 4)
    >>> plan.kept, plan.differing, plan.full  # process 1 found none: filled with its first two groups
    ([[(0, 0), (1, 0)], [(0, 0), (0, 1)]], 2, False)
    """
    rounds, total = differ.shape
    per_process = total // num_processes
    kept, differing = [], 0
    for rank in range(num_processes):
        own = [(r, g) for r in range(rounds) for g in range(per_process)]
        hits = [(r, g) for r, g in own if differ[r, rank * per_process + g]][:per_process]
        misses = [(r, g) for r, g in own if not differ[r, rank * per_process + g]][:per_process - len(hits)]
        kept.append(sorted(hits + misses))
        differing += len(hits)
    return GroupPlan(kept, differing, differing >= target)


class PromptDraws:
    """The prompts of the extra rounds: a permutation of the training rows seeded from ``seed`` (a new one each pass),
    the same on every process; each round takes the next ``groups * num_processes`` rows, process r the r-th share,
    each row repeated ``group_size`` times in a row as TRL's sampler does. A resumed run starts a fresh order."""

    def __init__(self, dataset, seed: int, num_processes: int, process_index: int):
        self.dataset, self.num_processes, self.process_index = dataset, num_processes, process_index
        self.generator = torch.Generator().manual_seed(seed)
        self.order: list[int] = []

    def next_round(self, groups: int, group_size: int, columns) -> list[dict]:
        """This process's rows of the next round: ``groups`` prompts x ``group_size``, with ``columns`` only (those
        of TRL's batch)."""
        need = groups * self.num_processes
        while len(self.order) < need:
            self.order += torch.randperm(len(self.dataset), generator=self.generator).tolist()
        drawn, self.order = self.order[:need], self.order[need:]
        mine = drawn[self.process_index * groups:(self.process_index + 1) * groups]
        rows = []
        for index in mine:
            row = self.dataset[index]
            rows += [{key: row[key] for key in columns if key in row} for _ in range(group_size)]
        return rows


# right-padding values of the per-token tensors (0 for the rest); prompts are left-padded
_PAD = {"tool_mask": 1, "importance_sampling_ratio": 1.0}


def join_rounds(outputs: list[dict], rows: list[list[int]], pad_token_id: int,
                pad_to_multiple_of: int | None = None) -> dict:
    """The rows ``rows[i]`` of each round's output ``outputs[i]``, concatenated: per-row tensors re-padded (prompts
    left, to the kept prompts' longest; completions and per-token tensors right), per-row lists kept aligned; other
    entries (``num_items_in_batch``, which the caller recomputes) are the first round's.

    >>> a = {"prompt_ids": torch.tensor([[0, 5], [6, 7]]), "prompt_mask": torch.tensor([[0, 1], [1, 1]]),
    ...      "completion_ids": torch.tensor([[1], [2]]), "budget": [8, 8], "num_items_in_batch": 2}
    >>> b = {"prompt_ids": torch.tensor([[9]]), "prompt_mask": torch.tensor([[1]]),
    ...      "completion_ids": torch.tensor([[3, 4]]), "budget": [8], "num_items_in_batch": 2}
    >>> out = join_rounds([a, b], [[0], [0]], pad_token_id=0)
    >>> out["prompt_ids"].tolist(), out["completion_ids"].tolist(), out["budget"]
    ([[5], [9]], [[1, 0], [3, 4]], [8, 8])
    """
    parts = [(out, torch.tensor(keep, dtype=torch.long)) for out, keep in zip(outputs, rows, strict=True) if keep]
    joined = {}
    for key, first in parts[0][0].items():
        n = parts[0][0]["prompt_ids"].size(0)
        if torch.is_tensor(first) and first.dim() >= 1 and first.size(0) == n:
            chosen = [out[key][keep.to(out[key].device)] for out, keep in parts]
            if first.dim() > 1:
                width = max(t.size(1) for t in chosen)
                left = key in ("prompt_ids", "prompt_mask")
                value = pad_token_id if key.endswith("_ids") else _PAD.get(key, 0)
                chosen = [torch.nn.functional.pad(t, (width - t.size(1), 0) if left else (0, width - t.size(1)),
                                                  value=value) for t in chosen]
            joined[key] = torch.cat(chosen)
        elif isinstance(first, list) and len(first) == n:
            joined[key] = [out[key][i] for out, keep in parts for i in keep.tolist()]
        else:
            joined[key] = first
    # prompts: left padding only as wide as the longest kept prompt needs (as a batch of these rows alone)
    width, need = joined["prompt_mask"].size(1), int(joined["prompt_mask"].sum(dim=1).max())
    if pad_to_multiple_of:
        need = -(-need // pad_to_multiple_of) * pad_to_multiple_of
    if need < width:
        joined["prompt_ids"] = joined["prompt_ids"][:, width - need:]
        joined["prompt_mask"] = joined["prompt_mask"][:, width - need:]
    return joined


class DynamicSamplingRecord(TrainerCallback):
    """Keeps the run record's ``extra.dynamic_sampling`` to the settings and what ran (at each checkpoint and at the
    end): generation batches, rounds, prompts drawn, differing groups kept, batches short of the target."""

    def __init__(self, trainer):
        self.trainer = trainer

    def _update(self, args) -> None:
        if self.trainer.accelerator.is_main_process:
            update_extra(args.output_dir, dynamic_sampling=self.trainer.dynamic_sampling_ran)

    def on_train_begin(self, args, state, control, **kwargs):
        self._update(args)

    def on_save(self, args, state, control, **kwargs):
        self._update(args)

    def on_train_end(self, args, state, control, **kwargs):
        self._update(args)
