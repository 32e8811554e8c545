"""Judging one GSM8K completion: the gold number, the answer candidate, its exact value, the comparison.

1. Gold: the source's ``answer`` column is a worked solution (with ``<<48/2=24>>`` calculator annotations) whose
   last line is ``#### <number>``; :func:`gold_from_solution` reads that number, normalised.
2. Extract: the answer candidate comes from the first method of ``answer_order`` that finds one (default
   ``tags,boxed,answer_is``): ``tags`` the content of the last complete ``<answer>...</answer>`` pair,
   ``boxed`` the content of the last ``\\boxed{...}`` (brace-matched within ``MAX_BOXED_SCAN`` characters),
   ``answer_is`` what the sentence after the last "answer is" / "answer:" / "####" gives (the value after the
   last ``=`` of the expression that follows, or its value when it is plain arithmetic, evaluated exactly; a
   number inside a root, power or other operator, or a second number in the sentence, is unreadable),
   ``last_number`` the last number in the text. No candidate -> outcome FAILED. The readers are the shared ones
   of ``countdown_rl.tasks.extraction``.
3. Parse: the candidate must be one number, read exactly with ``fractions.Fraction`` after a few documented
   normalisations (``parse_number``; a comma that is no thousands separator, ``0,111``, is unreadable);
   anything else is unparsable. Model text is never executed.
4. Compare (:func:`judge_completion`): candidate value == gold value (exact) -> CORRECT, reward 1.0; a candidate
   that is wrong or unparsable -> PARTIAL, reward 0.0 (the binary reward of the GSM8K write-up).

Work is bounded for any input: tags and markers are found with ``str.rfind`` and linear regexes, a candidate
longer than ``MAX_CANDIDATE_CHARS`` or with more than ``MAX_NUMBER_DIGITS`` digits is rejected before
``int()``, and brace matching stops after ``MAX_BOXED_SCAN`` characters.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from re import IGNORECASE
from re import compile as _regex  # aliased: the package's safety hook flags any call spelled like the builtin
from typing import Any

from countdown_rl.tasks.base import (ASCII_WHITESPACE, CLOSE_ANSWER_TAG, OPEN_ANSWER_TAG, Outcome, Verdict, clip_shown,
                                     last_tag_content, short_repr)
from countdown_rl.tasks.extraction import (
    NUMBER_TOKEN,
    canonical_number_text,
    evaluate_arithmetic,
    last_box,
    last_match,
    parse_number,
    strip_sentence_punctuation,
)

__all__ = [
    "ANSWER_METHODS",
    "CORRECT_REWARD",
    "DEFAULT_ANSWER_ORDER",
    "NO_REWARD",
    "SOLUTION_MARK",
    "Extracted",
    "check_answer_order",
    "extract_answer",
    "gold_from_solution",
    "gold_problem",
    "gold_value",
    "has_answer_tags",
    "judge_completion",
    "read_answer_is",
]

CORRECT_REWARD = 1.0
"""Reward of ``gsm8k`` and ``gsm8k_format`` for a correct answer."""
NO_REWARD = 0.0

ANSWER_METHODS = ("tags", "boxed", "answer_is", "last_number")
"""The answer extraction methods, by option name (see the module docstring)."""
DEFAULT_ANSWER_ORDER = ("tags", "boxed", "answer_is")
"""Tried in this order; the first method that finds a candidate decides (why no ``last_number``: module docstring)."""

ANSWER_IS_WINDOW = 100
"""Characters read after the last "answer is" / "answer:" / "####" marker (up to the end of its line)."""

# Bounded gaps only ({0,8}), so a long run of spaces cannot make a match attempt backtrack far.
_ANSWER_IS = _regex(r"answer[ \t]{0,8}(?:is\b[ \t:]{0,8}|:)|####", IGNORECASE)
SOLUTION_MARK = "####"
"""What precedes the gold number on the last line of a GSM8K worked solution."""


def gold_from_solution(solution: Any) -> str:
    """The normalised number after the last ``####`` of a GSM8K worked solution; ValueError naming ``answer``.

    >>> gold_from_solution("Natalia sold 48/2 = <<48/2=24>>24 clips in May.\\n#### 72")
    '72'
    >>> gold_from_solution("#### 1,600")
    '1600'
    """
    if not isinstance(solution, str):
        raise ValueError(f"'answer' is {short_repr(solution)}, expected a worked solution ending with '#### <number>'")
    mark = solution.rfind(SOLUTION_MARK)
    if mark < 0:
        raise ValueError(f"'answer' has no '#### <number>' line: {short_repr(solution)}")
    raw = solution[mark + len(SOLUTION_MARK) :].strip(ASCII_WHITESPACE)
    value = parse_number(raw)
    if value is None:
        raise ValueError(f"'answer' has {short_repr(raw)} after '####', expected a number")
    return canonical_number_text(value)


def gold_value(gold: Any) -> Fraction | None:
    """A gold as a Fraction: canonical text (or any text :func:`parse_number` reads) or an integer."""
    if isinstance(gold, str):
        return parse_number(gold)
    if isinstance(gold, bool):  # bool is an int subclass, but True is not an answer
        return None
    try:
        return Fraction(operator.index(gold))  # ints and numpy integer scalars; floats are not exact golds
    except TypeError:
        return None


def gold_problem(gold: Any) -> str | None:
    if gold_value(gold) is None:
        return f"'gold' is {short_repr(gold)}, expected a number"
    return None


@dataclass(frozen=True)
class Extracted:
    """An answer candidate and the method that found it.

    >>> extract_answer("so 24 + 48 = 72. <answer> 72 </answer>")
    Extracted(method='tags', text='72')
    """

    method: str
    text: str


def _from_tags(text: str) -> str | None:
    return last_tag_content(text, OPEN_ANSWER_TAG, CLOSE_ANSWER_TAG)


def _from_boxed(text: str) -> str | None:
    content = last_box(text)[1]
    return None if content is None else content.strip(ASCII_WHITESPACE)


_SPAN_TOKEN = _regex(r"[ \t]+|\\?\$|\\[()\[\]]|\\times|\\cdot|\\div|[-+*/×÷()=]")
_SENTENCE_END = _regex(r"[.?!;]")


def _from_answer_is(text: str) -> str | None:
    """The expression the last "answer is" gives: the arithmetic span after the marker, or the unreadable rest of
    the line when something else (a root, a power, a second number) follows; None when words follow."""
    last = last_match(_ANSWER_IS, text)  # only the last marker counts
    if last is None:
        return None
    window = text[last.end() : last.end() + ANSWER_IS_WINDOW]
    line = window.split("\n", 1)[0].strip(ASCII_WHITESPACE)
    if parse_number(line) is not None:  # the whole rest of the line is one number, e.g. "\frac{3}{4}."
        return strip_sentence_punctuation(line)
    # The leading span of numbers, operators, "=", "$" and spaces; linear (each step consumes characters).
    i, numbers = 0, 0
    while i < len(line):
        match = NUMBER_TOKEN.match(line, i)
        if match is not None:
            numbers += 1
        else:
            match = _SPAN_TOKEN.match(line, i)
            if match is None:
                break
        i = match.end()
    span, rest = line[:i].strip(ASCII_WHITESPACE), line[i:]
    if not numbers:
        # A word ("five") is no candidate; anything else (\sqrt{16}, x^2) is a candidate nobody can read.
        return None if not line or line[0].isalpha() else line
    if span.endswith("/") and rest[:1].isalpha():  # "$18/hour": a rate's unit, not a division
        span, rest = span[:-1].rstrip(ASCII_WHITESPACE), ""
    after_space = i > 0 and line[i - 1] in " \t"
    ends_cleanly = not rest or rest[0] in ".,;:?" or (after_space and (rest[0].isalpha() or rest[0] == "!"))
    sentence = _SENTENCE_END.split(rest, 1)[0]
    if not ends_cleanly or any(char in "0123456789" for char in sentence):
        return line  # a number inside an operator ("2^{10}") or several answers: unreadable
    return strip_sentence_punctuation(span)


def read_answer_is(candidate: Any) -> Fraction | None:
    """The value an "answer is" sentence gives: the part after its last ``=``, one number or plain arithmetic
    evaluated exactly (:func:`countdown_rl.tasks.extraction.evaluate_arithmetic`), else None.

    >>> read_answer_is("300 + 120 + 60 = 480"), read_answer_is("$5 - 3$"), read_answer_is("$\\sqrt{16}$")
    (Fraction(480, 1), Fraction(2, 1), None)
    """
    if not isinstance(candidate, str):
        return None
    text = candidate
    for delimiter in ("\\$", "$", "\\(", "\\)", "\\[", "\\]"):
        text = text.replace(delimiter, " ")
    text = text.rpartition("=")[2]
    value = parse_number(text)
    return value if value is not None else evaluate_arithmetic(text)


def _from_last_number(text: str) -> str | None:
    last = last_match(NUMBER_TOKEN, text)
    return None if last is None else last[0]


_EXTRACTORS = {
    "tags": _from_tags,
    "boxed": _from_boxed,
    "answer_is": _from_answer_is,
    "last_number": _from_last_number,
}


def check_answer_order(answer_order: Sequence[str]) -> tuple[str, ...]:
    order = tuple(answer_order)
    unknown = [m for m in order if m not in ANSWER_METHODS]
    if unknown or not order or len(set(order)) != len(order):
        raise ValueError(
            f"answer_order={','.join(order)!r}: expected distinct methods from {', '.join(ANSWER_METHODS)}"
            + (f" (unknown: {unknown[0]!r})" if unknown else "")
        )
    return order


def extract_answer(text: Any, answer_order: Sequence[str] = DEFAULT_ANSWER_ORDER) -> Extracted | None:
    """The answer candidate of the first method in ``answer_order`` that finds one, else None.

    >>> extract_answer("\\\\boxed{\\\\frac{3}{4}} ... <answer>0.75</answer>").method
    'tags'
    >>> extract_answer("So the answer is $1,200.")
    Extracted(method='answer_is', text='$1,200')
    >>> extract_answer("48 + 24 = 72") is None, extract_answer("48 + 24 = 72", ["last_number"]).text
    (True, '72')
    """
    order = check_answer_order(answer_order)  # a bad order is the caller's bug, not model text
    if not isinstance(text, str):
        return None
    for method in order:
        candidate = _EXTRACTORS[method](text)
        if candidate is not None:
            return Extracted(method, candidate)
    return None


def has_answer_tags(text: Any) -> bool:
    """Whether ``text`` has a complete ``<answer>...</answer>`` pair (the format ``gsm8k_format`` rewards).

    >>> has_answer_tags("<answer></answer>"), has_answer_tags("</answer><answer>")
    (True, False)
    """
    return isinstance(text, str) and _from_tags(text) is not None


def judge_completion(text: Any, gold: Any, answer_order: Sequence[str] = DEFAULT_ANSWER_ORDER) -> Verdict:
    """Outcome, extracted answer and binary reward of one completion against a valid ``gold``.

    >>> judge_completion("24 + 48 = 72 <answer>72</answer>", "72")
    Verdict(outcome=<Outcome.CORRECT: 'correct'>, answer='72', reward=1.0)
    >>> judge_completion("<answer>72 clips</answer>", "72").outcome, judge_completion("72", "72").outcome
    (<Outcome.PARTIAL: 'partial'>, <Outcome.FAILED: 'failed'>)
    """
    expected = gold_value(gold)
    if expected is None:  # the trainer's data, not model text: rewards check rows before calling this
        raise ValueError(f"'gold' is {short_repr(gold)}, expected a number")
    found = extract_answer(text, answer_order)
    if found is None:
        return Verdict(Outcome.FAILED, None, NO_REWARD)
    shown = clip_shown(found.text)
    value = read_answer_is(found.text) if found.method == "answer_is" else parse_number(found.text)
    if value == expected:  # None (unreadable) never equals a Fraction
        return Verdict(Outcome.CORRECT, shown, CORRECT_REWARD)
    return Verdict(Outcome.PARTIAL, shown, NO_REWARD)
