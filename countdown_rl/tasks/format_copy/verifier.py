"""Judging one format-copy completion: extract the last ``<answer>`` pair, read an integer, compare, sum the reward.

1. Extract (:func:`extract_answer`): the content of the LAST complete ``<answer>...</answer>`` pair (``str.rfind``,
   linear), stripped of ASCII whitespace. No complete pair -> outcome FAILED.
2. Parse (:func:`parse_integer`): the content must be an integer written in ASCII digits (an optional leading
   ``-``; leading zeros allowed, ``0042`` is 42), at most ``MAX_DIGITS`` digits, checked before ``int()``;
   anything else is no integer. Integer == the row's ``number`` -> CORRECT, else PARTIAL.
3. Reward (:func:`judge_completion`, the GR-REINFORCE study's): +1.0 the integer in the last pair equals ``number``;
   +0.2 a complete ``<answer>`` pair is present; +0.1 strict XML (:func:`is_strict`): the completion, stripped of
   ASCII whitespace, is exactly one ``<answer>...</answer>`` pair with nothing before or after it.
"""

from __future__ import annotations

import operator
from typing import Any

from countdown_rl.tasks.base import (ASCII_WHITESPACE, CLOSE_ANSWER_TAG, OPEN_ANSWER_TAG, Outcome, Verdict, clip_shown,
                                     last_tag_content, short_repr)

__all__ = [
    "CORRECT_REWARD",
    "MAX_DIGITS",
    "MAX_REWARD",
    "REWARD_VALUES",
    "STRICT_REWARD",
    "TAG_REWARD",
    "extract_answer",
    "is_strict",
    "judge_completion",
    "number_problem",
    "parse_integer",
]

CORRECT_REWARD = 1.0
"""Reward part for the correct integer inside the last ``<answer>`` pair."""
TAG_REWARD = 0.2
"""Reward part for a complete ``<answer>...</answer>`` pair."""
STRICT_REWARD = 0.1
"""Reward part for strict XML: one pair and nothing outside it (ASCII whitespace around it allowed)."""
MAX_REWARD = CORRECT_REWARD + TAG_REWARD + STRICT_REWARD
"""1.3: correct, tagged and strict."""
REWARD_VALUES = (0.0, 0.2, 0.3, 1.2, 1.3)
"""Every value ``format_copy`` can return for a valid row (the sums above, rounded as returned)."""

MAX_DIGITS = 18
"""Longest integer read from a tag (checked before ``int()``), and the most digits a row's number may have."""

_ASCII_DIGITS = frozenset("0123456789")  # str.isdigit() also accepts Unicode digits such as U+0663


def extract_answer(text: Any) -> str | None:
    """Content of the last complete ``<answer>...</answer>`` pair, stripped of ASCII whitespace, else None.

    >>> extract_answer("<answer>12</answer> <answer> 4821 </answer>"), extract_answer("<answer>4821") is None
    ('4821', True)
    """
    return last_tag_content(text, OPEN_ANSWER_TAG, CLOSE_ANSWER_TAG)


def parse_integer(text: Any) -> int | None:
    """``text`` as an integer when it is ``-?[0-9]+`` with at most ``MAX_DIGITS`` digits, else None.

    >>> parse_integer("4821"), parse_integer("0042"), parse_integer("-7")
    (4821, 42, -7)
    >>> parse_integer("4,821") is None, parse_integer("+7") is None, parse_integer("\u0663") is None
    (True, True, True)
    """
    if not isinstance(text, str):
        return None
    digits = text[1:] if text.startswith("-") else text
    # Length first: a 10,000-digit run is rejected without touching int().
    if not digits or len(digits) > MAX_DIGITS or not _ASCII_DIGITS.issuperset(digits):
        return None
    return int(text)


def is_strict(text: Any) -> bool:
    """Whether ``text`` is exactly one ``<answer>...</answer>`` pair, ASCII whitespace around it allowed.

    >>> is_strict(" <answer>4821</answer>\\n"), is_strict("Sure! <answer>4821</answer>")
    (True, False)
    >>> is_strict("<answer>1</answer><answer>2</answer>")
    False
    """
    if not isinstance(text, str):
        return False
    body = text.strip(ASCII_WHITESPACE)
    if not (body.startswith(OPEN_ANSWER_TAG) and body.endswith(CLOSE_ANSWER_TAG)):
        return False
    # The two tags cannot overlap (">" is not "<"), so the body holds both; one pair means none inside.
    inner = body[len(OPEN_ANSWER_TAG) : len(body) - len(CLOSE_ANSWER_TAG)]
    return OPEN_ANSWER_TAG not in inner and CLOSE_ANSWER_TAG not in inner


def number_problem(number: Any) -> str | None:
    """Why a row's ``number`` cannot be copied, or None: the check rewards and dataset loading share."""
    if not isinstance(number, bool):  # bool is an int subclass, but True is not a number to copy
        try:
            value = operator.index(number)  # ints and numpy integer scalars; floats and strings are not
        except TypeError:
            value = None
        if value is not None and len(str(abs(value))) <= MAX_DIGITS:
            return None
    return f"'number' is {short_repr(number)}, expected an integer of at most {MAX_DIGITS} digits"


def judge_completion(text: Any, number: int) -> Verdict:
    """Outcome (CORRECT / PARTIAL: a pair, wrong / FAILED: no pair), the tag content and the summed reward.

    >>> judge_completion("<answer>4821</answer>", 4821)
    Verdict(outcome=<Outcome.CORRECT: 'correct'>, answer='4821', reward=1.3)
    >>> judge_completion("I copy: <answer>4812</answer>", 4821).reward, judge_completion("4821", 4821).reward
    (0.2, 0.0)
    """
    content = extract_answer(text)
    if content is None:
        return Verdict(Outcome.FAILED, None, 0.0)
    correct = parse_integer(content) == number
    reward = (CORRECT_REWARD if correct else 0.0) + TAG_REWARD + (STRICT_REWARD if is_strict(text) else 0.0)
    # round(): 1.0 + 0.2 + 0.1 is 1.3000000000000003 in binary floating point; the documented value is 1.3.
    shown = clip_shown(content)
    return Verdict(Outcome.CORRECT if correct else Outcome.PARTIAL, shown, round(reward, 6))
