"""The format-copy verifier (countdown_rl.tasks.format_copy.verifier): extraction, integers, strict XML, judging."""

from __future__ import annotations

import pytest

from countdown_rl.tasks.base import Outcome, Verdict
from countdown_rl.tasks.format_copy import FormatCopyTask
from countdown_rl.tasks.format_copy.verifier import (
    MAX_DIGITS,
    extract_answer,
    is_strict,
    judge_completion,
    parse_integer,
)


# -------------------------------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer>4821</answer>", "4821"),
        ("<answer>  4821\n</answer>", "4821"),
        ("<answer>1</answer><answer>2</answer>", "2"),  # the last pair wins
        ("<answer>1</answer> <answer>2", "1"),  # an unclosed trailing tag is no pair
        ("<answer><answer>5</answer>", "5"),
        ("<answer></answer>", ""),
        ("<answer>\u00a07</answer>", "\u00a07"),  # only ASCII whitespace is stripped
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    "text", ["4821", "<answer>4821", "4821</answer>", "</answer>4821<answer>", "<ANSWER>1</ANSWER>", "", None, 4821]
)
def test_extract_answer_none(text):
    assert extract_answer(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("4821", 4821), ("0", 0), ("0042", 42), ("-7", -7), ("9" * MAX_DIGITS, int("9" * MAX_DIGITS))],
)
def test_parse_integer(text, expected):
    assert parse_integer(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "-", "+7", "--7", "4,821", "4821.0", "48 21", "1e3", "0x10", "four", "\u0663", "\uff17", "\u22127",
     "9" * (MAX_DIGITS + 1), "9" * 10_000, None, 7],
)
def test_parse_integer_rejects(text):
    assert parse_integer(text) is None


@pytest.mark.parametrize(
    ("text", "strict"),
    [
        ("<answer>4821</answer>", True),
        ("\n <answer>4821</answer>\n", True),  # ASCII whitespace around the pair is allowed
        ("<answer>oops</answer>", True),  # strictness is about the shape, not the content
        ("<answer></answer>", True),
        ("Sure: <answer>4821</answer>", False),
        ("<answer>4821</answer>.", False),
        ("<answer>4821</answer><|im_end|>", False),
        ("<answer>1</answer><answer>2</answer>", False),
        ("<answer><answer>2</answer>", False),
        ("<answer>4821", False),
        ("\u00a0<answer>4821</answer>", False),  # a no-break space is text outside the tags
        ("", False),
        (None, False),
    ],
)
def test_is_strict(text, strict):
    assert is_strict(text) is strict


# -------------------------------------------------------------------------------------------------- judging


@pytest.mark.parametrize(
    ("text", "number", "outcome", "answer", "reward"),
    [
        ("<answer>4821</answer>", 4821, Outcome.CORRECT, "4821", 1.3),
        (" <answer> 4821 </answer>\n", 4821, Outcome.CORRECT, "4821", 1.3),
        ("<answer>04821</answer>", 4821, Outcome.CORRECT, "04821", 1.3),  # the integer, not the string
        ("The number is <answer>4821</answer>", 4821, Outcome.CORRECT, "4821", 1.2),
        ("<answer>1</answer><answer>4821</answer>", 4821, Outcome.CORRECT, "4821", 1.2),
        ("<answer>4821</answer><answer>1</answer>", 4821, Outcome.PARTIAL, "1", 0.2),  # the last pair counts
        ("<answer>4812</answer>", 4821, Outcome.PARTIAL, "4812", 0.3),
        ("<answer>4,821</answer>", 4821, Outcome.PARTIAL, "4,821", 0.3),
        ("<answer>\u0664\u0668\u0662\u0661</answer>", 4821, Outcome.PARTIAL, "\u0664\u0668\u0662\u0661", 0.3),
        ("<answer></answer>", 4821, Outcome.PARTIAL, "", 0.3),
        ("ok <answer></answer>", 4821, Outcome.PARTIAL, "", 0.2),
        ("<answer>-0</answer>", 0, Outcome.CORRECT, "-0", 1.3),
        ("4821", 4821, Outcome.FAILED, None, 0.0),
        ("<answer>4821", 4821, Outcome.FAILED, None, 0.0),
        ("", 4821, Outcome.FAILED, None, 0.0),
    ],
)
def test_judge(text, number, outcome, answer, reward):
    assert FormatCopyTask().judge(text, {"number": number}) == Verdict(outcome, answer, reward)


def test_judge_caps_the_recorded_answer():
    verdict = judge_completion("<answer>" + "7" * 100_000 + "</answer>", 7)
    assert verdict.outcome is Outcome.PARTIAL and len(verdict.answer) == 200 and verdict.reward == 0.3
