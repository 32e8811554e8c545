"""Two models on the same rows (``countdown_rl.evaluation.paired``): the discordant counts, the exact McNemar
p-value and the chance of detecting a gain, checked against the binomial distribution enumerated outcome by
outcome."""

from __future__ import annotations

import doctest
import itertools

import pytest

from countdown_rl.evaluation import paired
from countdown_rl.evaluation.paired import detection_chance, mcnemar_exact, paired_counts


def test_the_module_examples_hold():
    assert doctest.testmod(paired).failed == 0


def enumerated_p_value(only_a: int, only_b: int) -> float:
    """The two-sided exact p-value by brute force: every way n fair coins can fall, the outcomes at least as
    unbalanced as the observed split."""
    n = only_a + only_b
    observed = abs(only_a - only_b)
    extreme = sum(abs(2 * sum(flips) - n) >= observed for flips in itertools.product((0, 1), repeat=n))
    return extreme / 2**n


@pytest.mark.parametrize(("only_a", "only_b"), [(0, 0), (1, 0), (3, 3), (1, 9), (9, 1), (2, 10), (0, 12), (5, 7)])
def test_the_p_value_is_the_exact_binomial_tail(only_a, only_b):
    assert mcnemar_exact(only_a, only_b) == pytest.approx(enumerated_p_value(only_a, only_b), abs=1e-12)


def test_only_the_discordant_rows_count():
    a = [True, True, False, False, True, False]
    b = [True, False, True, True, True, False]
    assert paired_counts(a, b) == {"only_a": 1, "only_b": 2, "rows": 6, "p_value": mcnemar_exact(1, 2)}
    assert paired_counts(b, a)["only_a"] == 2


def test_paired_counts_refuses_unpaired_rows():
    with pytest.raises(ValueError, match="paired rows differ in number: 2 and 1"):
        paired_counts([True, False], [True])


def enumerated_detection_chance(true_gain, discordant, rows, min_gain, alpha):
    """Every way the discordant rows can fall, each the second model's with the probability the true gain implies,
    weighed, and the outcomes that show ``min_gain`` points with the brute-force p below ``alpha`` summed."""
    q = (discordant + true_gain * rows / 100) / (2 * discordant)
    p_values = {wins: enumerated_p_value(wins, discordant - wins) for wins in range(discordant + 1)}
    total = 0.0
    for flips in itertools.product((0, 1), repeat=discordant):
        wins = sum(flips)
        if (2 * wins - discordant) * 100 / rows >= min_gain and p_values[wins] < alpha:
            total += q**wins * (1 - q) ** (discordant - wins)
    return total


@pytest.mark.parametrize(("true_gain", "discordant", "min_gain", "alpha"),
                         [(10, 12, 10, 0.05), (20, 12, 10, 0.05), (0, 10, 5, 0.5), (-5, 12, 0, 1.0)])
def test_detection_chance_is_the_enumerated_one(true_gain, discordant, min_gain, alpha):
    got = detection_chance(true_gain, discordant, 40, min_gain=min_gain, alpha=alpha)
    assert got == pytest.approx(enumerated_detection_chance(true_gain, discordant, 40, min_gain, alpha), abs=1e-12)


def test_detection_chance_rises_with_the_true_gain_and_falls_with_the_bar():
    chances = [detection_chance(gain, 65, 300, min_gain=10, alpha=0.01) for gain in (6, 9, 12, 15)]
    assert chances == sorted(chances) and chances[0] < 0.2 < 0.8 < chances[-1]
    assert detection_chance(12, 65, 300, min_gain=12, alpha=0.01) < detection_chance(12, 65, 300, min_gain=8, alpha=0.01)


@pytest.mark.parametrize(("args", "message"), [
    ((10, 0, 300), "discordant=0: expected 1..rows"),
    ((10, 301, 300), "discordant=301: expected 1..rows"),
    ((30, 60, 300), "true_gain=30 points on 300 rows needs more than 60 discordant rows"),
])
def test_detection_chance_refuses_impossible_inputs(args, message):
    with pytest.raises(ValueError, match=message):
        detection_chance(*args, min_gain=10, alpha=0.01)
    with pytest.raises(ValueError, match="alpha=0: expected in"):
        detection_chance(10, 60, 300, min_gain=10, alpha=0)
