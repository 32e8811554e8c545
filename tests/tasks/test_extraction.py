"""The shared answer readers (countdown_rl.tasks.extraction): numbers, their canonical text, sentence punctuation,
plain arithmetic; with the cases of issue 22."""

from __future__ import annotations

from fractions import Fraction

import pytest

from countdown_rl.tasks.extraction import (
    canonical_number_text,
    evaluate_arithmetic,
    parse_number,
    strip_sentence_punctuation,
)


# ------------------------------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("72", Fraction(72)),
        ("  72 \n", Fraction(72)),
        ("72.", Fraction(72)),  # end of a sentence
        ("100,", Fraction(100)),  # a sentence's comma or semicolon is not part of the number either
        ("72;", Fraction(72)),
        ("$72$.", Fraction(72)),
        ("$72.$", Fraction(72)),
        ("1,000", Fraction(1000)),
        ("1,234,567", Fraction(1234567)),
        ("1,000.50", Fraction(2001, 2)),
        ("$18.00", Fraction(18)),
        ("$18", Fraction(18)),
        ("\\$18", Fraction(18)),
        ("18.0", Fraction(18)),
        ("18.00", Fraction(18)),
        ("0.75", Fraction(3, 4)),
        (".5", Fraction(1, 2)),
        ("3/4", Fraction(3, 4)),
        ("6/8", Fraction(3, 4)),
        ("-3", Fraction(-3)),
        ("-3/4", Fraction(-3, 4)),
        ("-$5", Fraction(-5)),
        ("$-5", Fraction(-5)),
        ("25%", Fraction(25)),  # the number of percent, as GSM8K's golds write it
        ("12.5\\%", Fraction(25, 2)),
        ("007", Fraction(7)),
        ("\\boxed{72}", Fraction(72)),
        ("\\frac{3}{4}", Fraction(3, 4)),
        ("\\dfrac{3}{4}", Fraction(3, 4)),
        ("-\\frac{1}{8}", Fraction(-1, 8)),
        ("\\boxed{\\frac{3}{4}}", Fraction(3, 4)),
        ("$72$", Fraction(72)),
        ("\\(72\\)", Fraction(72)),
        ("1{,}000", Fraction(1000)),
        ("9" * 24, Fraction(int("9" * 24))),  # at the digit cap
    ],
)
def test_parse_number(text, expected):
    assert parse_number(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        ".",
        "-",
        "$",
        "%",
        "1,00",  # commas only in groups of three
        "1,0000",
        ",100",
        "0,111",  # a comma that is no thousands separator: unreadable, not 111
        "1,22",
        "72..",  # one full stop is the sentence's; more is not
        "1.000,5",
        "12 apples",
        "about 12",
        "twelve",
        "1 000",
        "- 3",
        "+3",
        "--3",
        "3/0",
        "1/2/3",
        "1.5/3",
        "3/-4",
        "1e3",
        "0x10",
        "\u0663",  # Arabic-Indic three
        "\uff17",  # fullwidth seven
        "\u22123",  # Unicode minus sign
        "\\boxed{1}{2}",
        "9" * 25,  # past MAX_NUMBER_DIGITS
        "9" * 10_000,
        "1" + ",000" * 20,  # past MAX_CANDIDATE_CHARS
        None,
        72,
        b"72",
    ],
)
def test_parse_number_rejects(text):
    assert parse_number(text) is None


def test_three_quarters_two_ways_are_equal_and_commas_matter():
    assert parse_number("3/4") == parse_number("0.75") == parse_number("\\frac{3}{4}")
    assert parse_number("1,000") == 1000 and parse_number("1,00") is None


def test_canonical_number_text_is_canonical():
    assert [canonical_number_text(parse_number(t)) for t in ("1,200", "$18.00", "0.75", "-3", "2.5")] == [
        "1200", "18", "3/4", "-3", "5/2"]


# ------------------------------------------------------------------------------------- sentence punctuation


@pytest.mark.parametrize(
    ("text", "expected"),
    [("5.", "5"), ("$5$.", "$5$"), ("$5.$", "$5$"), (" 5 , ", "5"), ("1, 2, \\ldots", "1, 2, \\ldots"),
     ("5..", "5.."), ("5\\;", "5\\;")],
)
def test_strip_sentence_punctuation(text, expected):
    assert strip_sentence_punctuation(text) == expected


def test_shared_number_and_arithmetic_readers():
    assert parse_number("0,111") is None and parse_number("1,22") is None and parse_number("1,222") == 1222
    assert evaluate_arithmetic("300 + 120 + 60") == 480 and evaluate_arithmetic("-(2 - 5) * 2") == 6
    for unreadable in ("2^{10}", "\\sqrt{16}", "2 3", "5!", "x + 1", "(1 + 2", "1 +", "4 / 0", "9" * 70):
        assert evaluate_arithmetic(unreadable) is None, unreadable
