"""The offline format-copy rows (countdown_rl.tasks.format_copy.problems)."""

from __future__ import annotations

import pytest

from countdown_rl.tasks import get_task
from countdown_rl.tasks.base import Outcome, Verdict
from countdown_rl.tasks.format_copy.problems import generate_numbers


# ------------------------------------------------------------------------------------------- generated data


def test_generate_is_deterministic_per_seed():
    task = get_task("format_copy")
    assert task.generate(50, seed=1) == task.generate(50, seed=1) != task.generate(50, seed=2)
    assert task.generate(0) == []


def test_generated_rows_are_valid_distinct_and_spread_over_digit_counts():
    task = get_task("format_copy")
    rows = task.generate(2000, seed=0)
    assert all(set(row) == {"number"} and task.row_problem(row) is None for row in rows)
    assert len({row["number"] for row in rows}) == 2000
    counts = {d: sum(1 for row in rows if task.difficulty(row) == d) for d in (1.0, 2.0, 3.0, 4.0)}
    assert counts == {1.0: 10, 2.0: 90, 3.0: 900, 4.0: 1000}  # the short pools are exhausted, the rest share
    assert {task.difficulty(row) for row in rows[:100]} >= {3.0, 4.0}  # shuffled, not grouped by length
    for row in rows[:200]:
        assert task.judge(f"<answer>{row['number']}</answer>", row) == Verdict(Outcome.CORRECT, str(row["number"]), 1.3)


def test_generate_follows_the_digit_options_and_refuses_too_many_rows():
    rows = get_task("format_copy", ["min_digits=3", "max_digits=3"]).generate(900, seed=0)
    assert sorted(row["number"] for row in rows) == list(range(100, 1000))
    rows = get_task("format_copy", ["min_digits=18", "max_digits=18"]).generate(5, seed=0)
    assert all(len(str(row["number"])) == 18 for row in rows)
    with pytest.raises(ValueError, match="cannot make 11 distinct numbers of 1-1 digits"):
        generate_numbers(11, min_digits=1, max_digits=1)
    assert sorted(r["number"] for r in generate_numbers(10, min_digits=1, max_digits=1)) == list(range(10))
