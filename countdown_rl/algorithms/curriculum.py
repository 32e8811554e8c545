"""Curricula as small pure functions: a completion-budget schedule and an easy-to-hard data order.

Budget schedule (``budget_schedule: [[0, 256], [40, 512], [60, 1024]]`` in a recipe):

1. The schedule is a list of ``[start_step, budget]`` pairs: the first starts at step 0, starts strictly increase,
   budgets are positive, and the largest budget equals ``max_completion_length`` (which sizes everything that is
   sized once: vLLM's context, the compiled static cache, the prompt/completion length checks).
2. The budget at optimizer step S is the budget of the last pair whose start is <= S. S is the number of
   optimizer steps already taken (``trainer.state.global_step``) when a rollout is generated, so with
   ``[[0, 256], [40, 512]]`` the first 40 updates train on 256-token rollouts.
3. A rollout keeps the budget it was generated with for as long as it is reused (``steps_per_generation``,
   ``num_iterations``): its generation, its length-aware reward and its Dr.GRPO normaliser all use that one budget.
   A resumed run needs no extra state: the budget is a function of the step.

Data order (``data_order`` in a recipe; training rows only, after the held-out split):

1. ``random``: the rows as the split left them; TRL shuffles every epoch (``shuffle_dataset: true``).
2. ``easy_to_hard``: a stable sort by the task's ``difficulty(row)`` (ties keep the source order).
3. ``staged``: the sorted rows cut into ``k`` contiguous stages of (nearly) equal size. Stage ``i``'s block is its
   own rows plus a replay sample of ``round(replay * len(stage i))`` rows drawn without replacement from stages
   ``0..i-1`` (fewer if fewer exist), shuffled with a seeded generator per stage; the blocks follow each other.
   Replayed rows appear twice in an epoch, so the epoch is longer than the row count.
4. With an order other than ``random`` TRL must not reshuffle: ``shuffle_dataset`` is set to false (true set
   explicitly is an error). TRL's ``RepeatSampler`` then walks the rows in order, each repeated
   ``num_generations`` times, and each epoch restarts the same order; a resumed run skips the batches it saw.

>>> budget_at([[0, 256], [40, 512], [60, 1024]], 39), budget_at([[0, 256], [40, 512], [60, 1024]], 40)
(256, 512)
>>> staged_order([3, 1, 2, 0], stages=2, replay=0.0, seed=0)
[3, 1, 0, 2]
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence
from typing import Any

__all__ = [
    "BUDGET_COLUMN",
    "DATA_ORDERS",
    "DEFAULT_REPLAY",
    "DEFAULT_STAGES",
    "budget_at",
    "data_order_indices",
    "easy_to_hard_order",
    "parse_budget_schedule",
    "shuffle_for_order",
    "staged_order",
]

BUDGET_COLUMN = "completion_budget"
"""The rollout's budget: a keyword argument of every reward call and a per-row list in the buffered rollout."""
DATA_ORDERS = ("random", "easy_to_hard", "staged")
DEFAULT_STAGES = 4
DEFAULT_REPLAY = 0.25


# ----------------------------------------------------------------------------------------------------------------
# Budget schedule
# ----------------------------------------------------------------------------------------------------------------


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value)
    return None


SCHEDULE_FORMS = "start_step:budget pairs (0:8 2:16) or a list of pairs ([[0, 8], [2, 16]])"
"""The forms a ``budget_schedule`` is written in, as its errors name them."""


def _text(item: Any) -> str | None:
    """A command-line entry as its text: argparse splits each string into its characters when a list field holds
    lists (``"0:256"`` -> ``['0', ':', '2', '5', '6']``). None for an entry that is not text."""
    if isinstance(item, str):
        return item
    if isinstance(item, (list, tuple)) and item and all(isinstance(c, str) and len(c) == 1 for c in item):
        text = "".join(item)
        return None if text.isdigit() else text  # ("0", "8"): a pair of one-digit strings, not the text "08"
    return None


def _entries(value: Any) -> Any:
    """The schedule's entries from any of its forms: pairs (YAML), ``"S:B"`` strings (command line; several may
    share one quoted string), or the whole list of pairs as one YAML/JSON string (``"[[0, 8], [2, 16]]"``).
    Anything else comes back as its text or as given, for the caller to refuse."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        return value
    texts = [_text(item) for item in items]
    if len(items) == 1 and texts[0] is not None and texts[0].lstrip().startswith("["):
        import yaml  # a JSON list is a YAML flow list; safe_load builds plain values only (never code)

        try:
            return yaml.safe_load(texts[0])
        except yaml.YAMLError:
            return texts[0]
    if isinstance(value, str):
        return value  # one "S:B" string is not a list (a recipe writes a list; the command line gives one)
    return [part for item, text in zip(items, texts) for part in (text.split() if text is not None else [item])]


def _pair(item: Any) -> Any:
    """One schedule entry: ``[S, B]`` as given, or ``"S:B"`` split."""
    if isinstance(item, str):
        item = item.replace(",", ":").split(":")
    return item


def parse_budget_schedule(value: Any, max_completion_length: int | None) -> list[list[int]]:
    """Check a ``budget_schedule`` and return it as ``[[start_step, budget], ...]``; one-line ValueError otherwise.

    Accepts pairs (YAML ``[[0, 256], [40, 512]]``), ``"S:B"`` strings (command line
    ``--budget_schedule 0:256 40:512``), or the list of pairs as one YAML/JSON string (command line
    ``--budget_schedule "[[0, 256], [40, 512]]"``).

    >>> parse_budget_schedule([[0, 16], [5, 32]], 32)
    [[0, 16], [5, 32]]
    >>> parse_budget_schedule(["0:16", "5:32"], 32)
    [[0, 16], [5, 32]]
    >>> parse_budget_schedule("[[0, 16], [5, 32]]", 32)
    [[0, 16], [5, 32]]
    >>> parse_budget_schedule([[0, 16], [5, 24]], 32)
    Traceback (most recent call last):
    ...
    ValueError: budget_schedule: the largest budget 24 must equal max_completion_length=32 (it sizes vLLM's context and the compiled cache)
    """
    entries = _entries(value)
    if isinstance(entries, (str, bytes)) or not isinstance(entries, (list, tuple)) or not entries:
        raise ValueError(f"budget_schedule: expected a non-empty list of [start_step, budget] pairs, got "
                         f"{entries!r}; write {SCHEDULE_FORMS}")
    schedule = []
    for item in entries:
        pair = _pair(item)
        ints = [_as_int(x) for x in pair] if isinstance(pair, (list, tuple)) else []
        if len(ints) != 2 or None in ints:
            shown = _text(item) if _text(item) is not None else item
            raise ValueError(f"budget_schedule: entry {shown!r} is not a pair of integers [start_step, budget]; "
                             f"write {SCHEDULE_FORMS}")
        schedule.append(ints)
    if schedule[0][0] != 0:
        raise ValueError(f"budget_schedule: the first entry must start at step 0, got {schedule[0]}")
    for before, after in zip(schedule, schedule[1:]):
        if after[0] <= before[0]:
            raise ValueError(f"budget_schedule: start steps must strictly increase, got {before[0]} then {after[0]}")
    for step, budget in schedule:
        if budget <= 0:
            raise ValueError(f"budget_schedule: budgets must be positive, got {budget} at step {step}")
    largest = max(budget for _, budget in schedule)
    if max_completion_length is None or largest != max_completion_length:
        raise ValueError(f"budget_schedule: the largest budget {largest} must equal max_completion_length="
                         f"{max_completion_length} (it sizes vLLM's context and the compiled cache)")
    return schedule


def budget_at(schedule: Sequence[Sequence[int]], step: int) -> int:
    """The completion budget at optimizer step ``step`` (steps already taken) under a checked ``schedule``.

    >>> [budget_at([[0, 40], [3, 48], [5, 64]], s) for s in range(7)]
    [40, 40, 40, 48, 48, 64, 64]
    """
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    starts = [start for start, _ in schedule]
    return int(schedule[bisect.bisect_right(starts, step) - 1][1])


# ----------------------------------------------------------------------------------------------------------------
# Data order
# ----------------------------------------------------------------------------------------------------------------


def describe_schedule(schedule: Sequence[Sequence[int]]) -> str:
    """A budget schedule for people: each budget with the optimizer step it starts at.

    >>> describe_schedule([[0, 40], [150, 48], [300, 64]])
    '40 (step 0) -> 48 (step 150) -> 64 (step 300)'
    """
    return " -> ".join(f"{budget} (step {start})" for start, budget in schedule)


def easy_to_hard_order(difficulties: Sequence[float]) -> list[int]:
    """Row indices sorted by difficulty; equal difficulties keep their source order (a stable sort).

    >>> easy_to_hard_order([2.0, 1.0, 2.0, 0.5])
    [3, 1, 0, 2]
    """
    return sorted(range(len(difficulties)), key=lambda i: difficulties[i])


def staged_order(difficulties: Sequence[float], *, stages: int = DEFAULT_STAGES, replay: float = DEFAULT_REPLAY,
                 seed: int = 0) -> list[int]:
    """Row indices in ``stages`` difficulty stages, each shuffled with a replay sample of earlier stages.

    See the module docstring (data order, 3). Returns ``len(rows) + replayed`` indices.

    >>> staged_order([0, 1, 2, 3, 4, 5, 6, 7], stages=2, replay=0.5, seed=0)  # stage 2 replays rows 0 and 1
    [1, 0, 2, 3, 0, 5, 6, 7, 1, 4]
    """
    if stages < 1:
        raise ValueError(f"curriculum_stages: must be >= 1, got {stages}")
    if not 0.0 <= replay <= 1.0:
        raise ValueError(f"curriculum_replay: must be in [0, 1], got {replay}")
    ranked = easy_to_hard_order(difficulties)
    k = max(1, min(stages, len(ranked)))
    size, extra = divmod(len(ranked), k)
    blocks, start = [], 0
    for i in range(k):
        end = start + size + (1 if i < extra else 0)
        blocks.append(ranked[start:end])
        start = end
    order: list[int] = []
    for i, block in enumerate(blocks):
        rng = random.Random(f"staged:{seed}:{i}")
        earlier = [index for b in blocks[:i] for index in b]
        replayed = rng.sample(earlier, min(len(earlier), round(replay * len(block)))) if earlier else []
        mixed = block + replayed
        rng.shuffle(mixed)
        order.extend(mixed)
    return order


def data_order_indices(difficulties: Sequence[float], order: str, *, stages: int | None = None,
                       replay: float | None = None, seed: int = 0) -> list[int]:
    """The training rows' indices for a ``data_order`` (``random`` keeps them as they are).

    >>> data_order_indices([2, 0, 1], "random"), data_order_indices([2, 0, 1], "easy_to_hard")
    ([0, 1, 2], [1, 2, 0])
    """
    if order == "random":
        return list(range(len(difficulties)))
    if order == "easy_to_hard":
        return easy_to_hard_order(difficulties)
    if order == "staged":
        return staged_order(difficulties, stages=DEFAULT_STAGES if stages is None else stages,
                            replay=DEFAULT_REPLAY if replay is None else replay, seed=seed)
    raise ValueError(f"data_order: must be one of {list(DATA_ORDERS)}, got {order!r}")


def shuffle_for_order(order: str, shuffle_dataset: bool | None) -> bool:
    """TRL's ``shuffle_dataset`` for a ``data_order``: unset follows the order; a clash is a one-line error.

    >>> shuffle_for_order("random", None), shuffle_for_order("staged", None), shuffle_for_order("staged", False)
    (True, False, False)
    """
    if order == "random":
        return True if shuffle_dataset is None else bool(shuffle_dataset)
    if shuffle_dataset:
        raise ValueError(f"shuffle_dataset: true clashes with data_order={order!r}, whose order TRL would reshuffle; "
                         "leave shuffle_dataset unset (it follows data_order)")
    return False
