"""The offline MATH problems (countdown_rl.tasks.math.problems)."""

from __future__ import annotations

from fractions import Fraction


from countdown_rl.tasks.base import Outcome
from countdown_rl.tasks.extraction import last_number
from countdown_rl.tasks.math import MathTask
from countdown_rl.tasks.math.problems import generate_math
from countdown_rl.tasks.math.rewards import math_shaped_reward
from tests.helpers.task_samples import fmt


def test_generate_is_deterministic_and_its_golds_are_judged_correct():
    task = MathTask()
    rows = task.generate(40, seed=7)
    assert rows == generate_math(40, seed=7) and rows != task.generate(40, seed=8)
    assert {r["type"] for r in rows} == {"Algebra", "Counting & Probability", "Number Theory", "Prealgebra"}
    prepared = [task.prepare_row(r) for r in rows]
    golds = [r["gold"] for r in prepared]
    assert any(g.startswith(("\\frac", "-\\frac")) for g in golds) and any(g.lstrip("-").isdigit() for g in golds)
    assert all(isinstance(r["level"], int) and 1 <= r["level"] <= 5 for r in prepared)
    for row in prepared:
        assert task.row_problem(row) is None
        assert task.judge(fmt(row["gold"]), row).outcome is Outcome.CORRECT
        assert task.judge(fmt(row["gold"]), row).reward == 1.0
        # the same value in another notation: a decimal for fractions with a short expansion
        value = Fraction(last_number(row["solution"].split("boxed")[-1]) or 0)
        if "frac" not in row["gold"]:
            assert task.judge(fmt(f"{value}.0"), row).outcome is Outcome.CORRECT
    assert math_shaped_reward([f"\\boxed{{{g}}}" for g in golds], gold=golds) == [1.1] * len(golds)
