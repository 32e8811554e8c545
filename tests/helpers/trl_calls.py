"""Reward functions called the way TRL 1.16's GRPOTrainer calls them, shared by the reward tests of every task."""

from __future__ import annotations

import time
from typing import Any


class MetricLog:
    """A stand-in for TRL's ``log_metric``: records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []

    def __call__(self, name: str, value: float) -> None:
        self.calls.append((name, value))


def trl_reward_call(func, completions, columns: dict[str, Any], *, prompt: str, completion_tokens: int, **extra):
    """Call ``func`` with every keyword TRL passes to a sync reward function: prompts, completions, completion ids,
    the dataset ``columns``, ``trainer_state``, ``log_extra`` and a :class:`MetricLog`; ``extra`` overrides any.
    Returns the rewards and the metric log."""
    n = len(completions)
    kwargs = {
        "prompts": [prompt] * n,
        "completions": completions,
        "completion_ids": [[1] * completion_tokens] * n,
        **columns,
        "trainer_state": object(),
        "log_extra": lambda column, values: None,
        "log_metric": MetricLog(),
    }
    kwargs.update(extra)
    return func(**kwargs), kwargs["log_metric"]


def timed(fn, *args, **kwargs):
    """``fn``'s result and its wall time in seconds."""
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start
