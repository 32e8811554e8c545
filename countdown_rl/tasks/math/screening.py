"""Screening MATH answers before sympy: what a deadline cannot stop is refused, unread (no sympy here).

1. Too long (``MAX_ANSWER_CHARS``) or nested too deep (``MAX_NESTING``): unreadable.
2. Two numbers side by side (latex2sympy reads ``2 3`` as 5): unreadable.
3. Powers: a power tower, an exponent over ``MAX_EXPONENT_DIGITS`` digits, or literal exponents whose product
   passes ``MAX_POWER_PRODUCT`` are computed in C, where no deadline reaches: unreadable.
4. Factorials and binomials of big literals, of powers or of factorials: unreadable.

Sums, products and symbolic exponents pass: sympy works on them in Python, where the deadline of
:func:`countdown_rl.tasks.deadline.run_with_deadline` reaches.
"""

from __future__ import annotations

from collections.abc import Iterator
from re import compile as _regex  # aliased: the package's safety hook flags any call spelled like the builtin

__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_EXPONENT_DIGITS",
    "MAX_FACTORIAL_DIGITS",
    "MAX_NESTING",
    "MAX_POWER_PRODUCT",
    "screen_problem",
]

MAX_ANSWER_CHARS = 300
"""Longer answers are unreadable. MATH's final answers are short (matrices and intervals included)."""
MAX_NESTING = 6
"""Deeper ``( [ {`` nesting is unreadable: latex2sympy's parse time grows with depth (cold: 0.5 s at 6 bare
braces, 1.4 s at 8, 1.8 s at 16 parentheses). Real answers nest 3 deep (``\\left(\\frac{\\sqrt{3}}{2}, 1\\right)``)."""
MAX_EXPONENT_DIGITS = 4
"""A power whose exponent holds a longer integer (or another power) is unreadable: sympy would expand it."""
_DIGIT_RUN = _regex(r"[0-9]+")
_FACTORIALS = _regex(r"(?<!\\)!|\\binom|\\dbinom|\\tbinom|\\choose")
_NESTED_FACTORIAL = _regex(r"!\s*[)}\]]*\s*!")
_SIDE_BY_SIDE = _regex(r"[0-9]\s+[0-9]")
MAX_POWER_PRODUCT = 10**6
"""The product of an answer's literal exponents above which it is unreadable (``(10^{9999})^{9999}`` would be a
hundred-million-digit integer, computed in C where no deadline reaches); ``2^{1000}`` and ``x^{9999}`` pass."""
MAX_FACTORIAL_DIGITS = 4
"""A factorial or binomial next to a literal longer than this is unreadable (``100000!`` is computed in C)."""


def _exponents(text: str) -> Iterator[str]:
    """The exponent of every ``^``: a brace group (matched) or the next character."""
    i = text.find("^")
    while i >= 0:
        j = i + 1
        while j < len(text) and text[j] == " ":
            j += 1
        if j < len(text) and text[j] == "{":
            depth, k = 0, j
            while k < len(text):
                depth += {"{": 1, "}": -1}.get(text[k], 0)
                if depth == 0:
                    break
                k += 1
            yield text[j + 1 : k]
        else:
            yield text[j : j + 1]
        i = text.find("^", i + 1)


def screen_problem(answer: str) -> str | None:
    """Why an answer is not handed to sympy (too long, too deep, too big to compute in C), or None when it may be.

    Only what a deadline cannot stop is refused: symbolic exponents, sums and products pass (sympy works on them
    in Python, where the deadline reaches).

    >>> screen_problem(r"\\frac{2^{10}}{3}") is None, screen_problem(r"\\sum_{k=0}^{n-1} F_k") is None
    (True, True)
    >>> screen_problem("9^{9^{9}}"), screen_problem("100000!")
    ('a power tower', 'a factorial or binomial of a number over 4 digits')
    """
    if len(answer) > MAX_ANSWER_CHARS:
        return f"longer than {MAX_ANSWER_CHARS} characters"
    depth = deepest = 0
    for char in answer:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    if deepest > MAX_NESTING:
        return f"nested deeper than {MAX_NESTING}"
    if _SIDE_BY_SIDE.search(answer):
        return "two numbers side by side"  # latex2sympy reads "2 3" as 5
    has_power, product = False, 1
    for exponent in _exponents(answer):
        has_power = True
        if "^" in exponent:
            return "a power tower"
        runs = _DIGIT_RUN.findall(exponent)
        if any(len(run) > MAX_EXPONENT_DIGITS for run in runs):
            return f"an exponent over {MAX_EXPONENT_DIGITS} digits"
        for run in runs:
            product *= max(1, int(run))
    if product > MAX_POWER_PRODUCT:
        return f"powers whose exponents multiply past {MAX_POWER_PRODUCT:,}"
    if _FACTORIALS.search(answer):
        if any(len(run) > MAX_FACTORIAL_DIGITS for run in _DIGIT_RUN.findall(answer)):
            return f"a factorial or binomial of a number over {MAX_FACTORIAL_DIGITS} digits"
        if has_power or _NESTED_FACTORIAL.search(answer):
            return "a factorial or binomial of a power or of a factorial"
    return None
