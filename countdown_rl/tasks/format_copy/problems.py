"""Offline rows of the format-copy task: distinct integers to copy, spread evenly over their digit counts.

1. One pool of d-digit numbers per digit count (``0..9`` for one digit, else ``10**(d-1)..10**d - 1``).
2. Shares: the smallest pools first, each an equal share of what is left (so the longer pools take up the rest).
3. Sample each share without replacement, then shuffle; deterministic per seed.
"""

from __future__ import annotations

import random

__all__ = ["generate_numbers"]


def generate_numbers(n: int, seed: int = 0, min_digits: int = 1, max_digits: int = 4) -> list[dict[str, int]]:
    """``n`` rows ``{"number": int}``: distinct non-negative integers, deterministic per seed, with the rows
    spread as evenly as the pools allow over the digit counts ``min_digits``..``max_digits`` (only 10 one-digit
    numbers exist, so their share goes to the longer ones). More rows than distinct numbers is a ValueError.

    >>> generate_numbers(3, seed=0) == generate_numbers(3, seed=0) != generate_numbers(3, seed=1)
    True
    >>> sorted(len(str(row["number"])) for row in generate_numbers(4, seed=1, min_digits=1, max_digits=2))
    [1, 1, 2, 2]
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    # pool of d-digit numbers: 0..9 for one digit (0 is a number to copy too), else 10**(d-1)..10**d - 1
    pools = [(0 if d == 1 else 10 ** (d - 1), 10**d - 1) for d in range(min_digits, max_digits + 1)]
    available = sum(high - low + 1 for low, high in pools)
    if n > available:
        raise ValueError(f"cannot make {n} distinct numbers of {min_digits}-{max_digits} digits (only {available})")
    rng = random.Random(seed)
    # Fill the smallest pools first, each with an equal share of what is left.
    counts, left = [], n
    for index, (low, high) in enumerate(pools):
        share = -(-left // (len(pools) - index))  # ceil: the larger pools after this one take the remainder
        take = min(high - low + 1, share)
        counts.append(take)
        left -= take
    numbers = [x for (low, high), k in zip(pools, counts, strict=True) for x in rng.sample(range(low, high + 1), k)]
    rng.shuffle(numbers)
    return [{"number": x} for x in numbers]
