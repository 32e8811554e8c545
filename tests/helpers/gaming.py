"""Gaming probes shared by the reward property tests of every task (issue 22): a wrong answer dressed up, a right
answer beside a wrong one, the places an answer may sit, and deterministic hypothesis settings."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

PROPERTY = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
"""Deterministic (``derandomize=True``) and small enough for the default tier."""


def disguises(wrong: str, right: str) -> list[str]:
    """Answer texts that give a wrong answer, dressed up, or offer a right answer beside a wrong one."""
    return [
        f"\\text{{{wrong}}}", f"\\mathrm{{{wrong}}}", f"\\boxed{{{wrong}}}", f"{wrong}\\text{{ cm}}",
        f"{wrong} cm", f"{wrong} apples", f"{wrong}. That is final.", f"{wrong}, {right}", f"{wrong} or {right}",
        f"{right} or {wrong}", f"{wrong} \\text{{ or }} {right}", f"{wrong}\\text{{{right}}}",
        f"{wrong} = {right}", f"{right} = {wrong}", f"{wrong} ({right})", f"\\text{{{wrong} {right}}}",
    ]


def wrappers(answer: str) -> list[str]:
    """Where an answer may sit in a completion, for a task that reads tags."""
    return [f"Let me think. </think> <answer>{answer}</answer>", f"<answer>{answer}</answer>"]


def full_of(func, texts: list[str], **columns) -> list[float]:
    """``func`` over ``texts`` with each dataset column repeated once per text."""
    n = len(texts)
    return func(texts, **{k: [v] * n for k, v in columns.items()})


numbers = st.integers(min_value=0, max_value=10**6)
fractions = st.tuples(st.integers(1, 99), st.integers(2, 99)).filter(lambda t: t[0] % t[1] != 0)

