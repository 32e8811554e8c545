"""MATH reward functions in the shape TRL's ``GRPOTrainer`` calls them.

1. ``r1_zero`` (:func:`math_r1_zero_reward`, the MATH ablations): 1.0 when the R1-Zero format holds and the extracted
   answer is right, else 0.0.
2. ``math_shaped`` (:func:`math_shaped_reward`, the GR-REINFORCE study): 1.1 / 0.2 / 0.1 / 0.0 from the last box, with a
   last-number fallback when no box is complete.

Rows are checked by :func:`.verifier.gold_problem` (the check loading shares); a malformed ``gold`` scores None
and is counted in ``log_metric("math/malformed_rows", n)``; comparisons past their deadline are wrong and counted
in ``log_metric("math/timeouts", n)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from countdown_rl.tasks.base import RewardFunc, score_batch
from countdown_rl.tasks.extraction import has_box_opening, last_boxed, last_number
from countdown_rl.tasks.math.verifier import (DEFAULT_TIMEOUT_SECONDS, RIGHT, TIMEOUT, WRONG, extract, gold_number,
                                             gold_problem, verdict)

__all__ = ["MALFORMED_ROWS_METRIC", "REWARD_FUNCS", "TIMEOUTS_METRIC", "math_r1_zero_reward", "math_shaped_reward"]

MALFORMED_ROWS_METRIC = "math/malformed_rows"
TIMEOUTS_METRIC = "math/timeouts"
"""``log_metric`` name for the number of comparisons in a batch that ran past their deadline (scored wrong)."""


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _score_against_gold(name: str, completions: Sequence[Any], gold: Sequence[Any], score, log_metric,
                        timeouts: list[int]) -> list[float | None]:
    """``score`` each completion against its row's gold (a malformed gold is the row's problem, logged), then log how
    many gradings ran out of time (``timeouts[0]``, counted by ``score``)."""
    rewards = score_batch(name, completions, {"gold": gold}, lambda row: gold_problem(row["gold"]), score,
                          log_metric=log_metric, malformed_metric=MALFORMED_ROWS_METRIC)
    if callable(log_metric):
        log_metric(TIMEOUTS_METRIC, timeouts[0])
    return rewards


def math_r1_zero_reward(
    completions: Sequence[Any],
    gold: Sequence[Any],
    *,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    **kwargs: Any,
) -> list[float | None]:
    """The MATH ablations' reward: 1.0 when :func:`r1_zero_format` holds AND the answer is equivalent, else 0.0.

    The answer is :func:`extract`'s (the last ``<answer>`` content). Logged per batch: ``math/format_reward`` (share
    formatted) and ``math/answer_reward`` (share whose extracted answer is right, whatever the format).

    >>> math_r1_zero_reward(["x </think> <answer>0.75</answer>", "x </think> <answer>1</answer>",
    ...                      "<answer>0.75</answer>"], gold=[r"\\frac{3}{4}"] * 3)
    [1.0, 0.0, 0.0]
    """
    formats: list[float] = []
    answers: list[float] = []
    timeouts = [0]

    def score(_index: int, text: str, row: dict[str, Any]) -> float:
        found = extract(text)
        result = WRONG if found.answer is None else verdict(found.answer, row["gold"], timeout_seconds=timeout_seconds)
        timeouts[0] += result == TIMEOUT
        right = result == RIGHT
        formats.append(float(found.formatted))
        answers.append(float(right))
        return 1.0 if found.formatted and right else 0.0

    log_metric = kwargs.get("log_metric")
    rewards = _score_against_gold("math_r1_zero_reward", completions, gold, score, log_metric, timeouts)
    if callable(log_metric):
        if formats:
            log_metric("math/format_reward", _mean(formats))
            log_metric("math/answer_reward", _mean(answers))
    return rewards


def math_shaped_reward(
    completions: Sequence[Any],
    gold: Sequence[Any],
    *,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    **kwargs: Any,
) -> list[float | None]:
    """The GR-REINFORCE study's shaped reward, at most 1.1; tags play no part.

    With a complete box: 0.1 for the box + 1.0 when the last box's content is equivalent (1.1 or 0.1). Without
    one: 0.1 for an unclosed ``\\boxed{`` + 0.1 when the text's :func:`last_number` equals the gold (0.0 to 0.2).
    The last number is a fallback for a missing box: the seed scores a clean ``\\boxed{36}`` at 1.1, not 1.2.

    >>> math_shaped_reward([r"\\boxed{36}", r"\\boxed{35}", "so 36", r"\\boxed{3 so 36", "none"], gold=["36"] * 5)
    [1.1, 0.1, 0.1, 0.2, 0.0]
    """

    timeouts = [0]

    def score(_index: int, text: str, row: dict[str, Any]) -> float:
        boxed = last_boxed(text)
        if boxed is not None:
            result = verdict(boxed, row["gold"], timeout_seconds=timeout_seconds)
            timeouts[0] += result == TIMEOUT
            return 1.1 if result == RIGHT else 0.1
        reward = 0.1 if has_box_opening(text) else 0.0
        number = last_number(text)
        if number is not None and number == gold_number(row["gold"].strip(), timeout_seconds):
            reward += 0.1
        return round(reward, 1)  # 0.1 + 0.1 is 0.2, not 0.20000000000000001

    return _score_against_gold("math_shaped_reward", completions, gold, score, kwargs.get("log_metric"), timeouts)


REWARD_FUNCS: dict[str, RewardFunc] = {"r1_zero": math_r1_zero_reward, "math_shaped": math_shaped_reward}
"""Recipe name -> reward function; ``__name__`` names its ``rewards/<name>/mean`` log key."""
