"""The reasoning-gym reward in the shape TRL's ``GRPOTrainer`` calls it: ``reasoning_gym``, the dataset's own score.

0.0 without a complete, non-empty ``<answer>`` pair; else reasoning-gym's score (0..1, some scorers give partial
credit) of the answer, screened and under a deadline (:func:`.verifier.score_answer`). Logged per batch, zeros
too: ``reasoning_gym/malformed_rows`` (rows whose ``source`` cannot be scored: None), ``reasoning_gym/timeouts``,
``reasoning_gym/scorer_errors`` (a scorer that raised or returned no number) and ``reasoning_gym/screened`` (answers
kept from an evaluating scorer); each of the last three scored 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from countdown_rl.tasks.base import RewardFunc, score_batch
from countdown_rl.tasks.reasoning_gym.problems import source_problem
from countdown_rl.tasks.reasoning_gym.verifier import (DEFAULT_TIMEOUT_SECONDS, ERROR, SCREENED, TIMEOUT,
                                                      judge_completion)

__all__ = ["FAILURE_METRICS", "MALFORMED_ROWS_METRIC", "REWARD_FUNCS", "reasoning_gym_reward"]

MALFORMED_ROWS_METRIC = "reasoning_gym/malformed_rows"
FAILURE_METRICS = {TIMEOUT: "reasoning_gym/timeouts", ERROR: "reasoning_gym/scorer_errors",
                   SCREENED: "reasoning_gym/screened"}
"""Why a scorer gave no verdict -> the ``log_metric`` name counting it per batch."""


def reasoning_gym_reward(
    completions: Sequence[Any],
    question: Sequence[Any] | None = None,
    source: Sequence[Any] | None = None,
    *,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    **kwargs: Any,
) -> list[float | None]:
    """reasoning-gym's score of the answer in the last ``<answer>`` pair (0.0 without one).

    >>> import json
    >>> source = json.dumps({"dataset": "chain_sum", "config": {}, "seed": 1, "size": 5, "index": 0})
    >>> question = "State the final answer to the following arithmetic problem: 4 - 1 - 7 ="
    >>> reasoning_gym_reward(["<answer>-4</answer>", "<answer>4</answer>", "-4"], question=[question] * 3,
    ...                      source=[source] * 3)
    [1.0, 0.0, 0.0]
    """
    failures = dict.fromkeys(FAILURE_METRICS, 0)

    def score(_index: int, text: str, row: dict[str, Any]) -> float:
        verdict, result = judge_completion(text, row["source"], timeout_seconds)
        if result is not None and result.failure is not None:
            failures[result.failure] += 1
        return verdict.reward

    log_metric = kwargs.get("log_metric")
    rewards = score_batch("reasoning_gym_reward", completions, {"question": question, "source": source},
                          lambda row: source_problem(row["question"], row["source"]), score,
                          log_metric=log_metric, malformed_metric=MALFORMED_ROWS_METRIC)
    if callable(log_metric):
        for failure, metric in FAILURE_METRICS.items():
            log_metric(metric, failures[failure])
    return rewards


REWARD_FUNCS: dict[str, RewardFunc] = {"reasoning_gym": reasoning_gym_reward}
"""Recipe name -> reward function; ``__name__`` names TRL's ``rewards/<name>/mean`` log key."""
