"""Two models on the same rows (``countdown_rl.evaluation.paired``): the discordant counts and the exact McNemar
p-value, checked against the binomial distribution enumerated outcome by outcome."""

from __future__ import annotations

import doctest
import itertools

import pytest

from countdown_rl.evaluation import paired
from countdown_rl.evaluation.paired import mcnemar_exact, paired_counts


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
