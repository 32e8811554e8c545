"""Offline MATH-like problems: small synthetic rows in MATH's layout (no download), for tests and demos.

1. Draw a level (1-5) and one of four kinds (a linear equation, a probability, a remainder, a sum of fractions).
2. Draw numbers that grow with the level; compute the exact answer with ``fractions.Fraction``.
3. Write the problem and a solution ending in ``\\boxed{answer}``, as MATH's solutions do.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

__all__ = ["generate_math"]


def _latex_number(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"


def _linear(rng: random.Random, level: int) -> tuple[str, str, str, Fraction]:
    a = rng.randint(2, 3 + 3 * level) * rng.choice((1, -1))
    b, c = rng.randint(-10 * level, 10 * level), rng.randint(-10 * level, 10 * level)
    x = Fraction(c - b, a)
    problem = f"Solve for $x$: ${a}x {'+' if b >= 0 else '-'} {abs(b)} = {c}$."
    move = f"Subtracting {b} from" if b >= 0 else f"Adding {-b} to"
    solution = (f"{move} both sides gives ${a}x = {c - b}$, so $x = \\frac{{{c - b}}}{{{a}}}$, that is "
                f"$x = \\boxed{{{_latex_number(x)}}}$.")
    return "Algebra", problem, solution, x


def _probability(rng: random.Random, level: int) -> tuple[str, str, str, Fraction]:
    red, blue = rng.randint(1, 4 * level + 2), rng.randint(1, 4 * level + 2)
    p = Fraction(red, red + blue)
    problem = (f"A bag holds {red} red marbles and {blue} blue marbles. One marble is drawn at random. "
               "What is the probability that it is red? Express your answer as a common fraction.")
    solution = f"There are {red + blue} marbles, {red} of them red, so the probability is $\\boxed{{{_latex_number(p)}}}$."
    return "Counting & Probability", problem, solution, p


def _remainder(rng: random.Random, level: int) -> tuple[str, str, str, Fraction]:
    n, m = rng.randint(10, 10 ** (level + 1)), rng.randint(3, 7 + 2 * level)
    problem = f"What is the remainder when ${n}$ is divided by ${m}$?"
    solution = f"Since ${n} = {m} \\cdot {n // m} + {n % m}$, the remainder is $\\boxed{{{n % m}}}$."
    return "Number Theory", problem, solution, Fraction(n % m)


def _sum_of_fractions(rng: random.Random, level: int) -> tuple[str, str, str, Fraction]:
    a, b = rng.randint(1, 3 + level), rng.randint(2, 4 + 2 * level)
    c, d = rng.randint(1, 3 + level), rng.randint(2, 4 + 2 * level)
    total = Fraction(a, b) + Fraction(c, d)
    problem = f"Compute $\\frac{{{a}}}{{{b}}} + \\frac{{{c}}}{{{d}}}$. Express your answer in simplest form."
    solution = (f"Over the common denominator ${b * d}$ the sum is $\\frac{{{a * d + c * b}}}{{{b * d}}}$, "
                f"which simplifies to $\\boxed{{{_latex_number(total)}}}$.")
    return "Prealgebra", problem, solution, total


_GENERATORS = (_linear, _probability, _remainder, _sum_of_fractions)


def generate_math(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` small synthetic problems in MATH's layout (problem, solution ending in a box, level, type); offline.

    >>> from countdown_rl.tasks.extraction import last_boxed
    >>> row = generate_math(1, seed=3)[0]
    >>> sorted(row), row["level"].startswith("Level "), last_boxed(row["solution"]) is not None
    (['level', 'problem', 'solution', 'type'], True, True)
    """
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        level = rng.randint(1, 5)
        kind, problem, solution, _value = rng.choice(_GENERATORS)(rng, level)
        rows.append({"problem": problem, "solution": solution, "level": f"Level {level}", "type": kind})
    return rows
