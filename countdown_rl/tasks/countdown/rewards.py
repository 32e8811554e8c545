"""Countdown reward functions in the shape TRL's ``GRPOTrainer`` calls them (no torch needed).

TRL 1.16 calls a sync reward function as ``f(prompts=..., completions=..., completion_ids=...,
**dataset_columns, trainer_state=..., log_extra=..., log_metric=...)`` and wants one float per completion; a
None means "cannot score this row" (TRL turns it into NaN and leaves it out of the advantage baseline).

1. Each completion becomes text: a plain string as is, a conversational completion (a list of messages) as the
   content of its last assistant message.
2. Each ground-truth row (the ``nums`` and ``target`` dataset columns) is validated by :func:`row_problem`, the
   same check dataset loading uses: ``nums`` a non-empty list of non-negative ints, ``target`` an int. Python ints and NumPy integer scalars are accepted (through
   ``operator.index``); bools and floats are not -- an int column never decodes to a float, so a float means a
   broken dataset, and guessing that ``36.0`` meant 36 would hide it. A malformed row scores None, and the
   batch's count of them goes to ``log_metric("countdown/malformed_rows", count)`` on every call (zeros
   included, so the logged mean is the mean per batch).
3. The text is scored by ``countdown_rl.tasks.countdown.verifier``, which only looks at ``<answer>`` tags, so it
   does not matter whether the prompt template pre-filled ``<think>``. ``unary_minus=True`` (the task option,
   bound with ``functools.partial``, which TRL names after the wrapped function) accepts ``-1 + 72 * 12``.

``get_reward_funcs(["countdown", ...])`` resolves config names through ``REWARD_FUNCS``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from countdown_rl.tasks.base import completion_text, score_batch, select_reward_funcs, short_repr
from countdown_rl.tasks.countdown import verifier

__all__ = [
    "MALFORMED_ROWS_METRIC",
    "REWARD_FUNCS",
    "completion_text",
    "countdown_reward",
    "countdown_reward_subset",
    "get_reward_funcs",
    "graduated_reward",
    "length_aware_reward",
    "row_problem",
]

MALFORMED_ROWS_METRIC = "countdown/malformed_rows"
"""``log_metric`` name for the number of malformed ground-truth rows in a batch."""

# score_row(index, completion text, validated nums, validated target) -> reward
_RowScorer = Callable[[int, str, list[int], int], float]


def _as_int(value: Any) -> int | None:
    """``value`` as a Python int when it is an integer type (numpy ints included), else None."""
    if isinstance(value, bool):  # bool is an int subclass, but True is not a puzzle number
        return None
    try:
        return operator.index(value)  # ints and numpy integer scalars; rejects floats, str, numpy.bool_
    except TypeError:
        return None


def _int_list(nums: Any) -> list[int]:
    items = nums.tolist() if hasattr(nums, "tolist") and not isinstance(nums, (list, tuple)) else nums
    return [operator.index(item) for item in items]


def row_problem(nums: Any, target: Any) -> str | None:
    """Why ``(nums, target)`` is not a Countdown puzzle, or None: the one check that loading and rewards share.

    ``nums`` must be a non-empty list (or 1-D array) of non-negative integers and ``target`` an integer.

    >>> row_problem([7, 7, 65], 51) is None, row_problem([7, -7], 0)
    (True, "'nums' is [7, -7], expected a non-empty list of non-negative integers")
    """
    if isinstance(nums, (list, tuple)):
        items = nums
    elif getattr(nums, "ndim", None) == 1 and hasattr(nums, "tolist"):  # a 1-D numpy array (numpy format)
        items = nums.tolist()
    else:
        items = None
    # A negative number cannot be written without a unary minus, so the puzzle could never be solved under the
    # default rule; no generator produces one.
    if not items or any(_as_int(item) is None or _as_int(item) < 0 for item in items):
        return f"'nums' is {short_repr(nums)}, expected a non-empty list of non-negative integers"
    if _as_int(target) is None:
        return f"'target' is {short_repr(target)}, expected an integer"
    return None


def _score_rows(
    name: str,
    completions: Sequence[Any],
    nums: Sequence[Any],
    target: Sequence[Any],
    kwargs: dict[str, Any],
    score_row: _RowScorer,
    **other_columns: Sequence[Any] | None,
) -> list[float | None]:
    """The loop shared by every Countdown reward (``score_batch`` with the Countdown row check)."""
    if "numbers_rule" in kwargs:
        raise TypeError(f"{name} takes no numbers_rule; use the 'countdown_subset' reward for the subset rule")
    columns = {"nums": nums, "target": target, **other_columns}
    return score_batch(
        name,
        completions,
        columns,
        lambda row: row_problem(row["nums"], row["target"]),
        lambda index, text, row: score_row(index, text, _int_list(row["nums"]), operator.index(row["target"])),
        log_metric=kwargs.get("log_metric"),
        malformed_metric=MALFORMED_ROWS_METRIC,
    )


def countdown_reward(
    completions: Sequence[Any], nums: Sequence[Any], target: Sequence[Any], *, unary_minus: bool = False,
    **kwargs: Any,
) -> list[float | None]:
    """Binary Countdown reward, exact-numbers rule: 1.0 correct, 0.1 answer tag but wrong, 0.0 no tag.

    >>> countdown_reward(["<answer>(65 - 7) - 7</answer>", "<answer>65 - 7</answer>", "51"],
    ...                  nums=[[7, 7, 65]] * 3, target=[51] * 3)
    [1.0, 0.1, 0.0]
    """

    def score(_index: int, text: str, row_nums: list[int], row_target: int) -> float:
        return verifier.reward_fn(text, {"nums": row_nums, "target": row_target}, "exact", unary_minus=unary_minus)

    return _score_rows("countdown_reward", completions, nums, target, kwargs, score)


def countdown_reward_subset(
    completions: Sequence[Any], nums: Sequence[Any], target: Sequence[Any], *, unary_minus: bool = False,
    **kwargs: Any,
) -> list[float | None]:
    """``countdown_reward`` under the reference setup's rule: each number used AT MOST once.

    >>> countdown_reward_subset(["<answer>65 - 7 - 7</answer>", "<answer>65 - 14</answer>"],
    ...                         nums=[[7, 7, 65, 3]] * 2, target=[51] * 2)
    [1.0, 0.1]
    """

    def score(_index: int, text: str, row_nums: list[int], row_target: int) -> float:
        return verifier.reward_fn(text, {"nums": row_nums, "target": row_target}, "subset", unary_minus=unary_minus)

    return _score_rows("countdown_reward_subset", completions, nums, target, kwargs, score)


def graduated_reward(
    completions: Sequence[Any], nums: Sequence[Any], target: Sequence[Any], *, unary_minus: bool = False,
    **kwargs: Any,
) -> list[float | None]:
    """Partial credit (``verifier.graduated_reward_fn``): 1.0 / 0.7 / 0.5 / 0.3 / 0.1 / 0.0, exact-numbers rule.

    >>> graduated_reward(["<answer>10 + 8 + 2</answer>", "<answer>10 * 8 / 2</answer>"],
    ...                  nums=[[10, 8, 2]] * 2, target=[21] * 2)
    [0.7, 0.3]
    """

    def score(_index: int, text: str, row_nums: list[int], row_target: int) -> float:
        ground_truth = {"nums": row_nums, "target": row_target}
        return verifier.graduated_reward_fn(text, ground_truth, "exact", unary_minus=unary_minus)

    return _score_rows("graduated_reward", completions, nums, target, kwargs, score)


def length_aware_reward(
    completions: Sequence[Any],
    nums: Sequence[Any],
    target: Sequence[Any],
    completion_ids: Sequence[Sequence[int]] | None = None,
    completion_budget: Sequence[int] | None = None,
    *,
    unary_minus: bool = False,
    **kwargs: Any,
) -> list[float | None]:
    """``countdown_reward`` times ``verifier.length_factor(len(completion_ids[i]), completion_budget[i])``.

    Shorter is better, relative to the rollout's completion budget: the trainer passes ``completion_budget`` (one
    entry per completion: the budget the rollout was generated with, which a ``budget_schedule`` moves). Without
    it the reference budget of 1000 tokens applies (200 tokens free).

    >>> length_aware_reward(["<answer>2 * 3</answer>"] * 2, nums=[[2, 3]] * 2, target=[6] * 2,
    ...                     completion_ids=[[0] * 150, [0] * 400])
    [1.0, 0.9]
    >>> length_aware_reward(["<answer>2 * 3</answer>"] * 2, nums=[[2, 3]] * 2, target=[6] * 2,
    ...                     completion_ids=[[0] * 200, [0] * 400], completion_budget=[500, 2000])
    [0.9, 1.0]
    """
    if completion_ids is None:
        raise ValueError(
            "length_aware_reward needs completion_ids (the token ids of each completion, which TRL's "
            "GRPOTrainer passes); call it with completion_ids=[...]"
        )

    def score(index: int, text: str, row_nums: list[int], row_target: int) -> float:
        base = verifier.reward_fn(text, {"nums": row_nums, "target": row_target}, "exact", unary_minus=unary_minus)
        budget = None if completion_budget is None else int(completion_budget[index])
        return base * verifier.length_factor(len(completion_ids[index]), budget)

    columns = {"completion_ids": completion_ids}
    if completion_budget is not None:
        columns["completion_budget"] = completion_budget
    return _score_rows("length_aware_reward", completions, nums, target, kwargs, score, **columns)


REWARD_FUNCS: dict[str, Callable[..., list[float | None]]] = {
    "countdown": countdown_reward,
    "countdown_subset": countdown_reward_subset,
    "graduated": graduated_reward,
    "length_aware": length_aware_reward,
}
"""Config name -> reward function. The function's ``__name__`` names its ``rewards/<name>/mean`` log key."""


def get_reward_funcs(names: Sequence[str]) -> list[Callable[..., list[float | None]]]:
    """The reward functions for config names, in order.

    Raises ValueError for an unknown name, a repeated name (TRL would log both under one key) or an empty list.

    >>> [f.__name__ for f in get_reward_funcs(["countdown", "length_aware"])]
    ['countdown_reward', 'length_aware_reward']
    """
    return select_reward_funcs(names, REWARD_FUNCS)
