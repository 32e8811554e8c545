"""Two models on the same held-out rows: which rows only one of them got right, and the exact McNemar test.

1. :func:`paired_counts` pairs two lists of per-row correctness (same rows, same order) and counts the rows only
   the first, and only the second, got right (the discordant pairs; the rest carry no information).
2. :func:`mcnemar_exact`: the two-sided exact McNemar p-value of those two counts (a binomial(n, 1/2) tail,
   doubled), with no normal approximation, so small counts are exact.
3. :func:`detection_chance`: how likely such a comparison is to show a gain of a given size with a given p-value,
   when the true gain and the number of discordant rows are known: the size of held-out set a bar needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["detection_chance", "mcnemar_exact", "paired_counts"]


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: the binomial(n = only_a + only_b, 1/2) tail of the smaller count, doubled.

    >>> round(mcnemar_exact(38, 22), 3)
    0.052
    >>> mcnemar_exact(0, 0)
    1.0
    """
    n, k = only_a + only_b, min(only_a, only_b)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_counts(correct_a: Sequence[bool], correct_b: Sequence[bool]) -> dict[str, float]:
    """``{"only_a", "only_b", "rows", "p_value"}`` for two models' correctness on the same rows, in the same order.

    >>> paired_counts([True, True, False, False], [True, False, True, True])
    {'only_a': 1, 'only_b': 2, 'rows': 4, 'p_value': 1.0}
    """
    if len(correct_a) != len(correct_b):
        raise ValueError(f"paired rows differ in number: {len(correct_a)} and {len(correct_b)}")
    only_a = sum(bool(a) and not bool(b) for a, b in zip(correct_a, correct_b, strict=True))
    only_b = sum(bool(b) and not bool(a) for a, b in zip(correct_a, correct_b, strict=True))
    return {"only_a": only_a, "only_b": only_b, "rows": len(correct_a), "p_value": mcnemar_exact(only_a, only_b)}


def detection_chance(true_gain: float, discordant: int, rows: int, *, min_gain: float, alpha: float) -> float:
    """The chance that a paired comparison on ``rows`` rows, ``discordant`` of them solved by one model only, shows a
    gain of at least ``min_gain`` points with an exact McNemar p below ``alpha`` when its true gain is ``true_gain``
    points: each discordant row is the second model's with probability ``(discordant + gain rows) / (2 discordant)``
    (the evaluation's own binomial error; a training run's spread comes on top).

    >>> round(detection_chance(9, 60, 300, min_gain=10, alpha=0.01), 3)
    0.394
    >>> round(detection_chance(12, 60, 300, min_gain=10, alpha=0.01) ** 6, 3)  # six runs all showing it
    0.432
    """
    if not 0 < discordant <= rows:
        raise ValueError(f"discordant={discordant}: expected 1..rows ({rows})")
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha={alpha}: expected in (0, 1]")
    surplus = true_gain * rows / 100  # rows only the second model solves, less rows only the first solves
    if abs(surplus) > discordant:
        raise ValueError(f"true_gain={true_gain} points on {rows} rows needs more than {discordant} discordant rows")
    q = (discordant + surplus) / (2 * discordant)
    chance = 0.0
    for wins in range(discordant + 1):
        shown = (2 * wins - discordant) * 100 / rows
        if shown >= min_gain - 1e-9 and mcnemar_exact(wins, discordant - wins) < alpha:
            chance += math.comb(discordant, wins) * q**wins * (1 - q) ** (discordant - wins)
    return chance
