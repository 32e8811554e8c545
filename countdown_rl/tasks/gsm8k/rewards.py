"""GSM8K reward functions in the shape TRL's ``GRPOTrainer`` calls them.

1. ``gsm8k`` (:func:`gsm8k_reward`, the GSM8K write-up): 1.0 correct, 0.0 otherwise.
2. ``gsm8k_format`` (:func:`gsm8k_format_reward`): 1.0 correct; 0.1 a complete ``<answer>`` pair but not
   correct; 0.0 otherwise.

Correctness is :func:`.verifier.judge_completion`'s under the task's ``answer_order``; a malformed ``gold``
scores None and is counted in ``log_metric("gsm8k/malformed_rows", n)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from countdown_rl.tasks.base import Outcome, RewardFunc, score_batch
from countdown_rl.tasks.gsm8k.verifier import (
    CORRECT_REWARD,
    DEFAULT_ANSWER_ORDER,
    NO_REWARD,
    check_answer_order,
    gold_problem,
    has_answer_tags,
    judge_completion,
)

__all__ = ["MALFORMED_ROWS_METRIC", "REWARD_FUNCS", "TAG_FORMAT_REWARD", "gsm8k_format_reward", "gsm8k_reward"]

TAG_FORMAT_REWARD = 0.1
"""Reward of ``gsm8k_format`` when a complete ``<answer>`` pair is present but the answer is not correct."""

MALFORMED_ROWS_METRIC = "gsm8k/malformed_rows"
"""``log_metric`` name for the number of malformed ``gold`` values in a batch."""


def _score(
    name: str, completions: Sequence[Any], gold: Sequence[Any] | None, kwargs: dict[str, Any], score_row: Any
) -> list[float | None]:
    return score_batch(
        name,
        completions,
        {"gold": gold},
        lambda row: gold_problem(row["gold"]),
        score_row,
        log_metric=kwargs.get("log_metric"),
        malformed_metric=MALFORMED_ROWS_METRIC,
    )


def gsm8k_reward(
    completions: Sequence[Any],
    gold: Sequence[Any] | None = None,
    *,
    answer_order: Sequence[str] = DEFAULT_ANSWER_ORDER,
    **kwargs: Any,
) -> list[float | None]:
    """Binary GSM8K reward (the GSM8K write-up): 1.0 correct, 0.0 otherwise; None for a malformed ``gold``.

    >>> gsm8k_reward(["<answer>72</answer>", "<answer>71</answer>", "72", "<answer>72</answer>"],
    ...              gold=["72", "72", "72", "abc"])
    [1.0, 0.0, 0.0, None]
    """
    order = check_answer_order(answer_order)
    return _score(
        "gsm8k_reward", completions, gold, kwargs,
        lambda _i, text, row: judge_completion(text, row["gold"], order).reward,
    )


def gsm8k_format_reward(
    completions: Sequence[Any],
    gold: Sequence[Any] | None = None,
    *,
    answer_order: Sequence[str] = DEFAULT_ANSWER_ORDER,
    **kwargs: Any,
) -> list[float | None]:
    """Format-aware GSM8K reward: 1.0 correct; 0.1 a complete ``<answer>`` pair but not correct; 0.0 otherwise.

    Correctness follows ``answer_order`` (so a correct ``\\boxed{}`` without tags still scores 1.0); the 0.1 is
    for the tags alone, whatever ``answer_order`` says, to teach the format the prompts ask for.

    >>> gsm8k_format_reward(["<answer>72</answer>", "<answer>seventy-two</answer>", "I think 72"],
    ...                     gold=["72"] * 3)
    [1.0, 0.1, 0.0]
    """
    order = check_answer_order(answer_order)

    def score(_index: int, text: str, row: dict[str, Any]) -> float:
        if judge_completion(text, row["gold"], order).outcome is Outcome.CORRECT:
            return CORRECT_REWARD
        return TAG_FORMAT_REWARD if has_answer_tags(text) else NO_REWARD

    return _score("gsm8k_format_reward", completions, gold, kwargs, score)


REWARD_FUNCS: dict[str, RewardFunc] = {"gsm8k": gsm8k_reward, "gsm8k_format": gsm8k_format_reward}
"""Recipe name -> reward function; ``__name__`` names TRL's ``rewards/<name>/mean`` log key."""
