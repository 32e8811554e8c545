"""Tests for countdown_rl.tasks.countdown.puzzles: the exact solver, the seeded generator and solution traces."""

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing in this project's tests may reach the Hub

import random
import re
from fractions import Fraction
from functools import lru_cache

import pytest

from countdown_rl.tasks.countdown import puzzles
from countdown_rl.tasks.countdown.puzzles import (
    generate_countdown,
    generate_with_solutions,
    search_trace,
    solve,
    solve_tree,
    solver_trace,
)
from countdown_rl.tasks.countdown.verifier import evaluate_exact, reward_fn, uses_numbers_exactly


@lru_cache(maxsize=None)
def brute_force_values(nums: tuple) -> frozenset:
    """Every value reachable using each number exactly once: repeatedly replace any two numbers by their
    sum, product, either difference or either (defined) quotient. Independent of the solver's split search."""
    if len(nums) == 1:
        return frozenset(nums)
    out = set()
    for i in range(len(nums)):
        for j in range(i + 1, len(nums)):
            a, b = nums[i], nums[j]
            rest = nums[:i] + nums[i + 1 : j] + nums[j + 1 :]
            results = [a + b, a * b, a - b, b - a]
            results += [a / b] if b != 0 else []
            results += [b / a] if a != 0 else []
            for r in results:
                out |= brute_force_values(tuple(sorted(rest + (r,))))
    return frozenset(out)


def fractions_of(nums):
    return tuple(sorted(Fraction(x) for x in nums))


# ---------------------------------------------------------------------------------------------------- solver


def test_solver_agrees_with_brute_force_on_solvability():
    rng = random.Random(1234)
    checked = solvable = 0
    for _ in range(25):
        # Small numbers (zero included) make both outcomes common and exercise the zero special cases.
        nums = [rng.randint(0, 12) for _ in range(rng.choice([2, 3, 4]))]
        reachable = brute_force_values(fractions_of(nums))
        for target in range(0, 60):
            equation = solve(nums, target)
            assert (equation is not None) == (Fraction(target) in reachable), (nums, target, equation)
            if equation is not None:
                assert uses_numbers_exactly(equation, nums), (nums, equation)
                assert evaluate_exact(equation) == target, (nums, target, equation)
                solvable += 1
            checked += 1
    assert 0 < solvable < checked  # both outcomes were exercised


def test_solver_answers_score_full_reward():
    for p in generate_countdown(300, seed=11):
        equation = solve(p["nums"], p["target"])
        assert equation is not None
        completion = f"<think>...</think> <answer>{equation}</answer>"
        assert reward_fn(completion, {"nums": p["nums"], "target": p["target"]}) == 1.0, (p, equation)


@pytest.mark.parametrize(
    "nums,target",
    [([1, 1, 1], 99), ([1, 1, 1, 1], 100), ([2, 3], 7), ([5], 6)],
)
def test_known_unsolvable_returns_none(nums, target):
    assert Fraction(target) not in brute_force_values(fractions_of(nums))  # the premise, checked independently
    assert solve(nums, target) is None
    assert solve_tree(nums, target) is None


def test_single_number_and_zero_cases():
    assert solve([5], 5) == "5"
    equation = solve([0, 5], 0)
    assert equation is not None and evaluate_exact(equation) == 0 and uses_numbers_exactly(equation, [0, 5])


def test_solver_needs_fractional_intermediates():
    # 24 from [1, 3, 4, 6] needs 6 / (1 - 3/4): only reachable through a non-integer step.
    equation = solve([1, 3, 4, 6], 24)
    assert equation is not None
    assert reward_fn(f"<answer>{equation}</answer>", {"nums": [1, 3, 4, 6], "target": 24}) == 1.0


def test_solver_is_deterministic_and_order_independent():
    first = solve([65, 7, 7], 51)
    puzzles._reachable.cache_clear()  # same answer without the memo
    assert solve([65, 7, 7], 51) == first
    assert solve([7, 65, 7], 51) == first


def test_unsolvable_four_numbers_meet_in_the_middle_without_the_whole_sets_values():
    """An unsolvable puzzle is settled by looking each half's values up in the other's: each proper sub-multiset's
    values are computed once, the whole set's never (a search over them is what makes 4 numbers slow). Counted, not
    timed, so that a loaded machine cannot fail it."""
    rng = random.Random(99)
    cases = []
    while len(cases) < 5:
        nums = [rng.randint(1, 99) for _ in range(4)]
        target = rng.randint(1, 100)
        if Fraction(target) not in brute_force_values(fractions_of(nums)):
            cases.append((nums, target))
    for nums, target in cases:
        puzzles._reachable.cache_clear()  # cold: no help from earlier calls
        assert solve(nums, target) is None
        assert puzzles._reachable.cache_info().misses <= 2 ** len(nums) - 2, (nums, target)


@pytest.mark.parametrize(
    "nums,target", [([], 1), ([1, True], 2), ([1, "2"], 3), ([1, -2], 3), ([1, 2], 1.5), ([1, 2], None), ("12", 3)]
)
def test_solver_rejects_bad_input(nums, target):
    with pytest.raises(ValueError):
        solve(nums, target)


# ---------------------------------------------------------------------------------------------------- traces


STEP = re.compile(r"^(\d+(?:/\d+)?) ([-+*/]) (\d+(?:/\d+)?) = (-?\d+(?:/\d+)?)$")


def test_trace_steps_are_correct_and_answer_scores_full_reward():
    for p in generate_countdown(100, seed=5):
        trace = solver_trace(p["nums"], p["target"])
        match = re.fullmatch(r"<think>(.*)</think> <answer>(.*)</answer>", trace)
        assert match, trace
        steps = match.group(1).split(", ")
        assert len(steps) == len(p["nums"]) - 1  # one step per operation
        for step in steps:
            m = STEP.match(step)
            assert m, step
            a, op, b, c = Fraction(m[1]), m[2], Fraction(m[3]), Fraction(m[4])
            assert {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else None}[op] == c, step
        assert Fraction(STEP.match(steps[-1])[4]) == p["target"]
        assert reward_fn(trace, {"nums": p["nums"], "target": p["target"]}) == 1.0
        assert len(trace) < 200  # a short target for tiny models


def test_trace_without_opening_think_and_for_unsolvable():
    trace = solver_trace([7, 7, 65], 51, open_think=False)
    assert not trace.startswith("<think>") and "</think> <answer>" in trace
    assert reward_fn("<think>" + trace, {"nums": [7, 7, 65], "target": 51}) == 1.0
    with pytest.raises(ValueError, match="no equation"):
        solver_trace([1, 1, 1], 99)


def _replay_attempt(attempt: str, nums) -> Fraction:
    """Check one written attempt step by step: every step's arithmetic is right and takes its operands from the
    numbers still in play (each given number used once); returns the one value left at the end."""
    pool = [Fraction(n) for n in nums]
    for step in attempt.split(", "):
        m = STEP.match(step)
        assert m, step
        a, op, b, c = Fraction(m[1]), m[2], Fraction(m[3]), Fraction(m[4])
        assert {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else None}[op] == c, step
        pool.remove(a)  # ValueError if the operand is not in play
        pool.remove(b)
        pool.append(c)
    assert len(pool) == 1, attempt
    return pool[0]


def test_search_trace_writes_checked_wrong_attempts_then_the_solution():
    failed_counts = []
    for p in generate_countdown(200, seed=6):
        nums, target = p["nums"], p["target"]
        trace = search_trace(nums, target, max_failed=2, seed=0)
        match = re.fullmatch(r"<think>(.*)</think> <answer>(.*)</answer>", trace)
        assert match, trace
        *failed, last = match.group(1).split("; ")
        assert len(failed) <= 2 and len(set(failed)) == len(failed)
        assert all(_replay_attempt(a, nums) != target for a in failed), trace
        assert _replay_attempt(last, nums) == target
        assert f"<think>{last}</think>" in solver_trace(nums, target)  # the solution is the solver's
        assert reward_fn(trace, {"nums": nums, "target": target}) == 1.0
        failed_counts.append(len(failed))
    assert set(failed_counts) == {0, 1, 2}  # the number of wrong attempts varies


def test_search_trace_is_deterministic_per_seed_and_bounded():
    p = {"nums": [3, 4, 5, 6], "target": 19}
    traces = [search_trace(p["nums"], p["target"], seed=s) for s in range(20)]
    assert traces == [search_trace(p["nums"], p["target"], seed=s) for s in range(20)]
    assert len(set(traces)) > 5  # the seed changes the attempts
    assert search_trace([7, 7, 65], 51, max_failed=0) == solver_trace([7, 7, 65], 51)
    assert not search_trace([7, 7, 65], 51, open_think=False).startswith("<think>")
    # [1, 1] has only three wrong chains (1 * 1, 1 - 1, 1 / 1): asking for up to 50 stops after a bounded number
    # of tries instead of looping.
    *failed, _ = search_trace([1, 1], 2, max_failed=50, seed=0)[len("<think>"):].split("</think>")[0].split("; ")
    assert len(failed) <= 3
    for bad in ({"max_failed": -1}, {"min_failed": 3, "max_failed": 2}):
        with pytest.raises(ValueError, match="min_failed <= max_failed"):
            search_trace([7, 7, 65], 51, **bad)
    assert all(search_trace([3, 4, 5, 6], 19, min_failed=2, max_failed=2, seed=s).count("; ") == 2 for s in range(5))
    with pytest.raises(ValueError, match="no equation"):
        search_trace([1, 1, 1], 99)


# ------------------------------------------------------------------------------------------------- generator


def test_generator_ranges_types_and_uniqueness():
    rows = generate_countdown(500, seed=3)
    assert len(rows) == 500
    keys = set()
    for row in rows:
        assert set(row) == {"nums", "target"}
        assert 3 <= len(row["nums"]) <= 4
        assert all(type(x) is int and 1 <= x <= 99 for x in row["nums"])
        assert type(row["target"]) is int and 1 <= row["target"] <= 100
        keys.add((row["target"], tuple(sorted(row["nums"]))))
    assert len(keys) == 500  # no duplicates, even with the numbers reordered
    counts = {len(r["nums"]) for r in rows}
    assert counts == {3, 4}


def test_generator_puzzles_are_solvable():
    for row in generate_countdown(60, seed=8, verify=False):  # solvable by construction, checked independently
        assert Fraction(row["target"]) in brute_force_values(fractions_of(row["nums"]))


def test_generator_is_deterministic_per_seed():
    assert generate_countdown(50, seed=1) == generate_countdown(50, seed=1)
    assert generate_countdown(50, seed=1) != generate_countdown(50, seed=2)
    assert generate_countdown(20, seed=1) == generate_countdown(50, seed=1)[:20]  # a prefix is stable


def test_generator_custom_ranges():
    kwargs = dict(min_numbers=2, max_numbers=5, min_number=5, max_number=20, min_target=10, max_target=60)
    rows = generate_countdown(40, seed=0, **kwargs)
    for row in rows:
        assert 2 <= len(row["nums"]) <= 5
        assert all(5 <= x <= 20 for x in row["nums"])
        assert 10 <= row["target"] <= 60
    assert generate_countdown(0) == []


def test_generator_errors():
    # Two numbers from {1, 2} reach only 7 distinct puzzles with targets in 1..4.
    with pytest.raises(RuntimeError, match="distinct puzzles"):
        generate_countdown(8, min_numbers=2, max_numbers=2, max_number=2, max_target=4)
    assert len(generate_countdown(7, min_numbers=2, max_numbers=2, max_number=2, max_target=4)) == 7
    with pytest.raises(ValueError):
        generate_countdown(5, min_numbers=4, max_numbers=3)
    with pytest.raises(ValueError):
        generate_countdown(5, min_target=10, max_target=1)


def test_generate_with_solutions():
    rows = generate_with_solutions(30, seed=4)
    assert [{k: r[k] for k in ("nums", "target")} for r in rows] == generate_countdown(30, seed=4)
    for r in rows:
        assert reward_fn(f"<answer>{r['solution']}</answer>", {"nums": r["nums"], "target": r["target"]}) == 1.0
