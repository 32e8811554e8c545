"""The format-copy reward in the shape TRL's ``GRPOTrainer`` calls it: ``format_copy`` (GR-REINFORCE study's).

Values 0.0 (no pair), 0.2 (pair, wrong, text around it), 0.3 (pair alone, wrong), 1.2 (correct, text around it)
and the maximum 1.3 (``<answer>4821</answer>`` and nothing else); see :func:`.verifier.judge_completion`.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from countdown_rl.tasks.base import RewardFunc, score_batch
from countdown_rl.tasks.format_copy.verifier import judge_completion, number_problem

__all__ = ["MALFORMED_ROWS_METRIC", "REWARD_FUNCS", "format_copy_reward"]

MALFORMED_ROWS_METRIC = "format_copy/malformed_rows"
"""``log_metric`` name for the number of malformed ``number`` values in a batch."""


def format_copy_reward(
    completions: Sequence[Any], number: Sequence[Any] | None = None, **kwargs: Any
) -> list[float | None]:
    """The GR-REINFORCE study's format-copy reward: +1.0 correct integer, +0.2 ``<answer>`` pair, +0.1 strict XML
    (max 1.3).

    A malformed ``number`` scores None and is counted in ``log_metric("format_copy/malformed_rows", n)``.

    >>> format_copy_reward(["<answer>4821</answer>", "Here: <answer>4821</answer>", "<answer>12</answer>", "4821"],
    ...                    number=[4821] * 4)
    [1.3, 1.2, 0.3, 0.0]
    """
    return score_batch(
        "format_copy_reward",
        completions,
        {"number": number},
        lambda row: number_problem(row["number"]),
        lambda _i, text, row: judge_completion(text, operator.index(row["number"])).reward,
        log_metric=kwargs.get("log_metric"),
        malformed_metric=MALFORMED_ROWS_METRIC,
    )


REWARD_FUNCS: dict[str, RewardFunc] = {"format_copy": format_copy_reward}
"""Recipe name -> reward function; ``__name__`` names TRL's ``rewards/<name>/mean`` log key."""
