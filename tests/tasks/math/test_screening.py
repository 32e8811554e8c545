"""The MATH screen (countdown_rl.tasks.math.screening): what never reaches sympy."""

from __future__ import annotations

import pytest

from countdown_rl.tasks.math.screening import screen_problem


@pytest.mark.parametrize(
    "answer,expected",
    [
        (r"\frac{\sqrt{3}}{2}", None),
        (r"\left(\frac{\sqrt{3}}{2}, -\frac{1}{2}\right)", None),
        ("2^{1000}", None),
        ("10!", None),
        ("9^{9^{9}}", "a power tower"),
        ("x^{10^{10}}", "a power tower"),
        ("2^{100000}", "an exponent over 4 digits"),
        ("1000000!", "a factorial or binomial of a number over 4 digits"),
        (r"\binom{100000}{50000}", "a factorial or binomial of a number over 4 digits"),
        (r"\sum_{i=1}^{10} i", None),  # sums and symbolic exponents are the deadline's to bound
        (r"F_n=\sum_{k=0}^{n-1}F_kF_{n-k-1}", None),
        ("(x+1)^{9999}", None),
        ("(10^{9999})^{9999}", "powers whose exponents multiply past 1,000,000"),
        ("(10!)!", "a factorial or binomial of a power or of a factorial"),
        ("2 3", "two numbers side by side"),
        ("{" * 7 + "1" + "}" * 7, "nested deeper than 6"),
        ("1" * 301, "longer than 300 characters"),
    ],
)
def test_screen_problem(answer, expected):
    assert screen_problem(answer) == expected
