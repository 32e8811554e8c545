"""Judging one reasoning-gym completion: extract the answer, screen it, score it with reasoning-gym's own scorer.

1. Extract (:func:`extract_answer`): the content of the LAST complete ``<answer>...</answer>`` pair, stripped of ASCII
   whitespace. No pair, or an empty one -> FAILED, reward 0 (the scorer is not called), except an empty pair where
   the entry's reference answer is itself empty (ab: a program whose tokens all cancel), which is scored.
2. Screen (:func:`screen_answer`): an answer longer than ``MAX_ANSWER_CHARS``, or than twice the entry's reference
   answer where that is longer (palindrome_partitioning's and tower_of_hanoi's run to thousands of characters), is
   wrong unread. Some scorers evaluate the text they are given (Python ``eval`` or sympy's ``parse_expr``, listed in
   ``EVALUATING_SCORERS``); for them only text that cannot run code or run away passes: arithmetic characters
   (countdown, puzzle24), list literals without calls or attributes, or polynomial / integral expressions over
   allowed names with small powers (of a letter, a short number or a parenthesised group without powers or nested
   parentheses, e.g. ``cos(3*x)**5``, ``(4*x + 2)**(3/2)``). Text that fails the screen is a wrong answer; model text
   never reaches an evaluating scorer unscreened.
3. Check (``OWN_CHECKS``): for three datasets whose scorer (reasoning-gym 0.1.25) a policy could game, an answer
   must also pass a check of ours, else it is wrong: puzzle24's answer must use the puzzle's numbers, coin_flip's must
   have the reference's value (its prefix credit gave 1.0 to "0."), game_of_life_halting's must be the reference's
   True or False (the scorer compared ``bool(answer)``, true for any non-empty text).
4. Score (:func:`score_answer`): ``dataset.score_answer(answer, entry)`` on the row's regenerated entry, under the
   deadline the other graders use (:func:`countdown_rl.tasks.deadline.run_with_deadline`). A scorer that raises,
   returns a non-number or runs past the deadline scores 0, and the reward counts it. The score, clamped to
   [0, 1], is the reward; 1.0 is CORRECT, less is PARTIAL.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from re import compile as _regex  # aliased: the package's safety hook flags any call spelled like the builtin
from typing import Any

from countdown_rl.tasks.base import ASCII_WHITESPACE, Outcome, Verdict, clip_shown, last_tag_content
from countdown_rl.tasks.deadline import run_with_deadline
from countdown_rl.tasks.reasoning_gym.problems import source_entry

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "ERROR",
    "EVALUATING_SCORERS",
    "MAX_ANSWER_CHARS",
    "OWN_CHECKS",
    "SCREENED",
    "Score",
    "TIMEOUT",
    "extract_answer",
    "judge_completion",
    "score_answer",
    "screen_answer",
]

DEFAULT_TIMEOUT_SECONDS = 2.0
"""Deadline of one scorer call (MATH's comparison has the same)."""
MAX_ANSWER_CHARS = 2000
"""A longer answer is wrong without being scored (bounded work), unless the entry's reference answer is longer than
half this: then twice the reference's length is the bound (:func:`score_answer`)."""

_ARITHMETIC = _regex(r"[0-9+\-*/() \t]*")
_LITERAL = _regex(r"[A-Za-z0-9 \t\n,\[\]'\"_\-]*")
_SYMBOLIC_CHARS = _regex(r"[A-Za-z0-9 \t+\-*/^().,]*")
_NAME = _regex(r"[A-Za-z_][A-Za-z0-9_]*")
_POWER = _regex(r"(\*\*|\^)")
# A power's base: a letter, a short number, or a parenthesised group with neither a power nor nested parentheses
# (a function's argument too: cos(3*x)**5); its exponent: a short integer or a parenthesised short fraction (3/2).
_SMALL_POWER = _regex(r"(?:\b[A-Za-z]|\b\d{1,3}|\((?:[^()*^]|\*(?!\*))*\))\s*(?:\*\*|\^)\s*"
                      r"(?:\d{1,2}\b|\(\s*-?\d{1,2}\s*(?:/\s*\d{1,2}\s*)?\))")
_SYMBOLIC_NAMES = frozenset({"sin", "cos", "tan", "exp", "log", "sqrt", "pi", "E", "C", "I", "atan", "asin", "acos"})
_SYMBOLIC_FUNCTIONS = _SYMBOLIC_NAMES - {"pi", "E", "C", "I"}
_CALL = _regex(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_ATTRIBUTE = _regex(r"\.\s*[A-Za-z_]")
_QUOTED = _regex(r"'[^']*'|\"[^\"]*\"")
# Python's keywords that build code in a literal-looking text: a comprehension (for, in, if) runs loops.
_KEYWORDS = frozenset({"for", "in", "if", "else", "lambda", "not", "and", "or", "is", "await", "yield", "async"})


def _arithmetic(text: str) -> bool:
    return _ARITHMETIC.fullmatch(text) is not None and "**" not in text


def _literal(text: str) -> bool:
    # No call, attribute, dunder or keyword outside quotes (a comprehension loops): an eval of this builds lists of
    # names and constants.
    if _LITERAL.fullmatch(text) is None or "__" in text:
        return False
    return not _KEYWORDS.intersection(_NAME.findall(_QUOTED.sub(" ", text)))


def _symbolic(text: str) -> bool:
    if _SYMBOLIC_CHARS.fullmatch(text) is None:
        return False
    if any(len(name) > 1 and name not in _SYMBOLIC_NAMES for name in _NAME.findall(text)):
        return False  # single letters are symbols; longer names only the functions sympy knows
    if _ATTRIBUTE.search(text) or any(name not in _SYMBOLIC_FUNCTIONS for name in _CALL.findall(text)):
        return False  # no attribute (pi.n(...)) and no call but of a listed function (sympy's N(pi, 10**9) is one)
    # Every power is a small base raised to a short literal: no power of a power, nor of a group holding one.
    return len(_POWER.findall(text)) == len(_SMALL_POWER.findall(text))


EVALUATING_SCORERS: dict[str, Any] = {
    "countdown": _arithmetic,
    "puzzle24": _arithmetic,
    "binary_matrix": _literal,
    "n_queens": _literal,
    "spiral_matrix": _literal,
    "string_insertion": _literal,
    "polynomial_multiplication": _symbolic,
    "simple_integration": _symbolic,
    "intermediate_integration": _symbolic,
}
"""Datasets whose scorer (reasoning-gym 0.1.25) evaluates the answer text -> the screen an answer must pass first."""

_INTEGER = _regex(r"\d+")
_PLAIN_NUMBER = _regex(r"-?\d{1,30}(?:\.\d{1,30})?(?:\s*/\s*\d{1,30})?")


def _uses_the_numbers(answer: str, entry: Mapping[str, Any]) -> bool:
    return sorted(map(int, _INTEGER.findall(answer))) == sorted(entry["metadata"]["numbers"])


def _number(text: str) -> Fraction | None:
    text = text.replace(",", "").strip(ASCII_WHITESPACE)
    if _PLAIN_NUMBER.fullmatch(text) is None:  # bounded digits: Fraction("1e999999") would build a huge integer
        return None
    try:
        return Fraction(text.replace(" ", ""))
    except (ValueError, ZeroDivisionError):
        return None


def _same_value(answer: str, entry: Mapping[str, Any]) -> bool:
    value, reference = _number(answer), _number(str(entry["answer"]))
    return value is not None and reference is not None and abs(value - reference) <= Fraction(1, 10_000)


def _same_truth(answer: str, entry: Mapping[str, Any]) -> bool:
    return answer.lower() in ("true", "false") and answer.lower() == str(entry["answer"]).strip(ASCII_WHITESPACE).lower()


OWN_CHECKS: dict[str, Any] = {
    "puzzle24": _uses_the_numbers,
    "coin_flip": _same_value,
    "game_of_life_halting": _same_truth,
}
"""Datasets whose scorer (reasoning-gym 0.1.25) a policy could game -> a check of ours an answer must also pass:
puzzle24's scorer does not check the numbers are the puzzle's, coin_flip's prefix credit gives 1.0 to any prefix of
the value ("0."), game_of_life_halting's compares ``bool(answer)`` (true for any non-empty text)."""

SCREENED, TIMEOUT, ERROR = "screened", "timeout", "error"
"""Why a given answer scored 0 without a verdict of the scorer's (``Score.failure``)."""


@dataclass(frozen=True)
class Score:
    """A scorer's result on one answer: the value in [0, 1], and why it is 0 when the scorer gave no verdict."""

    value: float
    failure: str | None = None


def extract_answer(text: Any) -> str | None:
    """The last ``<answer>`` pair's content, stripped; None when there is none or it is empty.

    >>> extract_answer("so <answer> 12 </answer>"), extract_answer("<answer> </answer>") is None
    ('12', True)
    """
    content = last_tag_content(text)
    return content or None


def screen_answer(dataset: str, answer: str, max_chars: int = MAX_ANSWER_CHARS) -> bool:
    """Whether ``answer`` (at most ``max_chars`` long) may reach ``dataset``'s scorer.

    >>> screen_answer("countdown", "(65 - 7) - 7"), screen_answer("countdown", "__import__('os')")
    (True, False)
    >>> screen_answer("polynomial_multiplication", "3*x**2 + 2"), screen_answer("simple_integration", "(9**99)**99")
    (True, False)
    >>> screen_answer("intermediate_integration", "2*(4*x + 2)**(3/2)/3 + C"), screen_answer("simple_integration",
    ...                                                                             "((9*9)**99)**99")
    (True, False)
    """
    if len(answer) > max_chars:
        return False
    screen = EVALUATING_SCORERS.get(dataset)
    return screen is None or screen(answer)


_WARMED: set[str] = set()
WARM_UP_SECONDS = 30.0
"""Deadline of each warm-up call (:func:`_warm_up`): far above a scorer's first-call cost, still a bound."""


def _warm_up(name: str, dataset: Any, entry: Mapping[str, Any]) -> None:
    """Run the dataset's scorer code on the entry's own reference and on "0" (texts of the dataset's and ours, never the
    model's) once per dataset and process, under a generous deadline of its own: a scorer's first calls import and
    build what they need (sympy's parser and simplifier: a third of a second on a quiet core, seconds on a busy one),
    which would otherwise run out the first answers' deadline and score them 0. It calls the scorer's class function,
    the code whose imports are wanted."""
    if name in _WARMED:
        return
    _WARMED.add(name)
    scorer = type(dataset).score_answer
    for text in (entry.get("answer"), "0"):
        try:
            run_with_deadline(scorer, WARM_UP_SECONDS, dataset, text, entry)
        except Exception:  # what this scorer cannot read (a None reference, where several are right): imports done
            pass


def score_answer(answer: str, source: str, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> Score:
    """reasoning-gym's score of ``answer`` for the entry ``source`` names, screened and under a deadline.

    >>> import json
    >>> source = json.dumps({"dataset": "chain_sum", "config": {}, "seed": 1, "size": 5, "index": 0})
    >>> score_answer("-4", source), score_answer("5", source).value
    (Score(value=1.0, failure=None), 0.0)
    """
    name, dataset, entry = source_entry(source)
    reference = entry.get("answer")
    max_chars = max(MAX_ANSWER_CHARS, 2 * len(reference)) if isinstance(reference, str) else MAX_ANSWER_CHARS
    if not screen_answer(name, answer, max_chars):
        return Score(0.0, SCREENED)
    own_check = OWN_CHECKS.get(name)
    if own_check is not None and not own_check(answer, entry):
        return Score(0.0)  # a wrong answer the scorer would have rewarded: not a failure of the scorer's
    _warm_up(name, dataset, entry)
    try:
        finished, value = run_with_deadline(dataset.score_answer, timeout_seconds, answer, entry)
    except Exception:  # the scorer's own failure on odd text: contained, counted by the reward
        return Score(0.0, ERROR)
    if not finished:
        return Score(0.0, TIMEOUT)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return Score(0.0, ERROR)
    return Score(min(1.0, max(0.0, float(value))))


def _empty_reference(source: str) -> bool:
    try:
        return source_entry(source)[2].get("answer") == ""
    except ValueError:  # a source that does not parse: no answer is scored for it
        return False


def judge_completion(text: Any, source: str, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> tuple[Verdict, Score | None]:
    """The verdict on one completion, and the scorer's result (None when no answer was given).

    >>> import json
    >>> source = json.dumps({"dataset": "chain_sum", "config": {}, "seed": 1, "size": 5, "index": 0})
    >>> judge_completion("<answer>-4</answer>", source)[0].outcome.value, judge_completion("-4", source)[0].reward
    ('correct', 0.0)
    """
    answer = extract_answer(text)
    if answer is None and last_tag_content(text) == "" and _empty_reference(source):
        answer = ""  # the empty pair is the answer where the reference is empty too
    if answer is None:
        return Verdict(Outcome.FAILED, None, 0.0), None
    score = score_answer(answer, source, timeout_seconds)
    outcome = Outcome.CORRECT if score.value >= 1.0 else Outcome.PARTIAL
    return Verdict(outcome, clip_shown(answer), score.value), score
