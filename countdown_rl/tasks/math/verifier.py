"""Judging one MATH answer: extract it, clean it, and compare it with the gold through math-verify.

1. Extract (:func:`extract`, with the shared readers of ``countdown_rl.tasks.extraction``): the content of the
   last complete ``<answer>...</answer>`` pair (with a box inside it, the box's content); without tags, the
   content of the last complete ``\\boxed{...}`` / ``\\fbox{...}``. Nothing -> FAILED.
2. Clean (:func:`clean_answer`, :func:`split_unit`): outer ``$`` and one sentence-ending ``.``, ``,`` or ``;``
   dropped; ``\\text`` / ``\\mathrm`` around one symbol read as that symbol (``2\\mathrm{i}`` is ``2i``); a
   trailing unit split off (both sides with a unit: the units must match as text); any other text command makes
   the answer text, compared as text (``\\text{(C)}`` = ``(C)``), never dropped.
3. Screen (:mod:`.screening`): what a deadline cannot stop never reaches sympy.
4. Compare (:func:`verdict`): equal texts and plain numbers are decided without sympy; otherwise both sides are
   normalised by math-verify's own normaliser (its unit stripping off: it drops any final ``\\text{...}``) and
   parsed WHOLE by latex2sympy (not ``math_verify.parse``, whose regular expressions may read a prefix, and whose
   plain expression extractor hands text to sympy's ``parse_expr``); a side that does not parse whole is never
   equal. Then ``math_verify.verify(gold, answer)``. Parsed golds, parses and verdicts are cached.

Time limit, in every thread and process: :func:`countdown_rl.tasks.deadline.run_with_deadline` (a watchdog thread
that raises in the overrunning thread; math-verify's own ``signal.alarm`` timeouts are off) bounds parsing the
gold (``GOLD_ATTEMPTS`` tries) and each comparison by ``timeout_seconds`` (default ``DEFAULT_TIMEOUT_SECONDS``).
A timeout is a wrong answer (``"timeout"``), not cached.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from fractions import Fraction
from re import compile as _regex  # aliased: the package's safety hook flags any call spelled like the builtin
from typing import Any

from countdown_rl.tasks.base import last_tag_content, short_repr
from countdown_rl.tasks.deadline import run_with_deadline
from countdown_rl.tasks.extraction import last_box, last_boxed, strip_sentence_punctuation
from countdown_rl.tasks.math.screening import screen_problem

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "GOLD_ATTEMPTS",
    "RIGHT",
    "TIMEOUT",
    "WRONG",
    "Extraction",
    "clean_answer",
    "equivalent",
    "extract",
    "gold_number",
    "gold_problem",
    "r1_zero_format",
    "split_unit",
    "verdict",
]

DEFAULT_TIMEOUT_SECONDS = 2.0
"""Per-completion deadline for parsing and comparing (main thread). Real MATH answers took at most 0.45 s on a
first, cold parse in our measurements (a few ms once warm), so 2 s leaves a 4x margin and caps a 64-completion batch
of pathological answers at about two minutes."""

_THINK_THEN_ANSWER = _regex(r"</think>\s*<answer>")


def r1_zero_format(text: str) -> bool:
    """The R1-Zero format: some ``</think>`` followed (whitespace only between) by ``<answer>``, closed later by ``</answer>``.

    The r1_zero prompt already opens ``<think>``, so the completion starts inside the reasoning; text after the
    final ``</answer>`` is ignored (the seed's sampler stops at it; TRL's generation may run on).

    >>> r1_zero_format("2 + 2 = 4 </think> <answer>4</answer>"), r1_zero_format("<answer>4</answer>")
    (True, False)
    """
    match = _THINK_THEN_ANSWER.search(text)
    return match is not None and text.find("</answer>", match.end()) >= 0


@dataclass(frozen=True)
class Extraction:
    """What a completion offers as its final answer.

    ``source``: "tag" (an ``<answer>`` pair), "box" (the last box, no tags) or "none". ``answer``: the text to
    compare, None when nothing readable was found (no answer, or a box inside the tags that never closes).
    ``formatted``: whether :func:`r1_zero_format` holds.
    """

    source: str
    answer: str | None
    formatted: bool


def extract(text: str) -> Extraction:
    """The completion's answer: last ``<answer>`` content (its box's content if it has one), else the last box.

    >>> extract("... </think> <answer> $\\\\boxed{0.5}$ </answer>")
    Extraction(source='tag', answer='0.5', formatted=True)
    >>> extract("so the answer is \\\\boxed{7}.")
    Extraction(source='box', answer='7', formatted=False)
    """
    formatted = r1_zero_format(text)
    tag = last_tag_content(text)
    if tag is not None:
        boxed, inner = last_box(tag)
        if boxed:  # a box inside the tags holds the answer; one that never closes leaves nothing readable
            return Extraction("tag", None if inner is None else inner.strip(), formatted)
        return Extraction("tag", tag, formatted)
    boxed = last_boxed(text)
    if boxed is not None:
        return Extraction("box", boxed.strip(), formatted)
    return Extraction("none", None, formatted)


# --------------------------------------------------------------------------------------------------------------
# Cleaning (no sympy): what the answer says, read the same way on both sides
# --------------------------------------------------------------------------------------------------------------

_TEXT_COMMANDS = (r"text|textrm|textit|textbf|textsf|texttt|textnormal|textup|mathrm|mathit|mathbf|mathsf|mathtt"
                  r"|mathnormal|mbox|hbox")
# \mathrm{e}, \text{ x }, \mathrm e, \text{10}: a text command around one symbol (a letter, or a plain number) is
# that symbol, so "2\mathrm{i}" is 2i (not 2 with a unit dropped) and "\frac{1}{\text{x}}" is 1/x.
_TEXT_SYMBOL = _regex(
    rf"\\(?:{_TEXT_COMMANDS})(?![A-Za-z])\s*(?:\{{\s*([A-Za-z]|[0-9]+(?:\.[0-9]+)?)\s*\}}|\s([A-Za-z0-9])(?![A-Za-z0-9]))"
)
_TEXT_COMMAND = _regex(rf"\\(?:{_TEXT_COMMANDS})(?![A-Za-z])")
# A trailing unit: "5\text{ cm}", "5\,\mbox{inches}", "3 \text{square feet}^2" (letters, spaces and dots only).
_TEXT_UNIT = _regex(
    rf"(?P<math>.*?[^\s\\])(?:\s|\\[,;:! ])*\\(?:{_TEXT_COMMANDS})\s*\{{\s*(?P<unit>[A-Za-z][A-Za-z .]*?)\s*\}}"
    r"(?:\s*\^\s*\{?\s*[23]\s*\}?)?"
)
_BARE_UNIT = _regex(r"(?P<math>.*?[0-9}])\s+(?P<unit>[A-Za-z]{2,}(?: [A-Za-z]{2,})?)")
_SPACES_RUN = _regex(r"\s+")
_CHOICE = _regex(r"\(?([A-Za-z])\)?")


@functools.lru_cache(maxsize=1)
def _bare_units() -> frozenset[str]:
    """math-verify's own list of unit words (its normaliser strips them; here they are compared instead)."""
    from latex2sympy2_extended.math_normalization import units  # math-verify's (pinned) dependency

    return frozenset(units)


def clean_answer(latex: str) -> str:
    """The answer as written, without what is not part of it: outer ``$``, a sentence's final punctuation,
    a text command around one symbol.

    >>> [clean_answer(t) for t in ["$5$.", r"2\\mathrm{i}", r"\\frac{1}{\\text{x}}", r"\\mathrm e^3", r"\\text{(A)}"]]
    ['5', '2i', '\\\\frac{1}{x}', 'e^3', '\\\\text{(A)}']
    """
    s = strip_sentence_punctuation(latex)
    if len(s) >= 2 and s.startswith("$") and s.endswith("$"):
        s = strip_sentence_punctuation(s.strip("$"))
    boxed, inner = last_box(s)
    if boxed and inner is not None and s.startswith(("\\boxed", "\\fbox")) and s.endswith("}"):
        if len(inner) == len(s) - s.index("{") - 2:  # the box is the whole answer: its content is
            s = strip_sentence_punctuation(inner)
    return _TEXT_SYMBOL.sub(lambda m: m[1] or m[2], s).strip()


def _unit_key(unit: str) -> str:
    key = _SPACES_RUN.sub(" ", unit.strip(" .")).lower()
    for plural in ("es", "s"):
        if key.endswith(plural) and len(key) > len(plural) + 1:
            return key[: -len(plural)]
    return key


def split_unit(answer: str) -> tuple[str, str | None]:
    """(the mathematical part, the trailing unit or None): ``5\\text{ cm}`` -> ('5', 'cm').

    >>> split_unit(r"5\\text{ cm}^2"), split_unit("12 inches"), split_unit(r"2\\pi r"), split_unit(r"\\text{(A)}")
    (('5', 'cm'), ('12', 'inch'), ('2\\\\pi r', None), ('\\\\text{(A)}', None))
    """
    match = _TEXT_UNIT.fullmatch(answer)
    if match is not None:
        return match["math"].strip(), _unit_key(match["unit"])
    match = _BARE_UNIT.fullmatch(answer)
    if match is not None:
        word = match["unit"]
        if word in _bare_units() or word.rstrip("s") in _bare_units() or word[:-2] in _bare_units():
            return match["math"].strip(), _unit_key(word)
    return answer, None


def _text_key(answer: str) -> str:
    """A text answer as compared: text commands and ``$`` dropped, spaces collapsed, case folded, ``(A)`` as ``a``."""
    s = _TEXT_COMMAND.sub("", answer).replace("$", "")
    s = s.replace("{", "").replace("}", "")
    s = _SPACES_RUN.sub(" ", s).strip().casefold()
    choice = _CHOICE.fullmatch(s)
    return choice[1] if choice else s


# --------------------------------------------------------------------------------------------------------------
# Comparing (math-verify)
# --------------------------------------------------------------------------------------------------------------


class _DropDisabledTimeoutWarning(logging.Filter):
    """math-verify warns once that its timeouts are off; here the deadline of run_with_deadline replaces them."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Timeout is disabled" not in record.getMessage()


@functools.lru_cache(maxsize=1)
def _math_verify() -> Any:
    """math_verify, imported on first use (it pulls in sympy: about a second), warmed up, its timeout warning muted."""
    import math_verify

    for name in ("math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).addFilter(_DropDisabledTimeoutWarning())
    # One small parse and symbolic comparison now, outside any deadline: sympy imports some modules on first use,
    # and an import cut short by the deadline would leave them half-initialised.
    _verify.__wrapped__("x+1", "(1+x)^1", math_verify)
    return math_verify


@functools.lru_cache(maxsize=1)
def _normalization() -> Any:
    """math-verify's LaTeX normalisation, minus its unit stripping (it drops any final ``\\text{...}``, also
    ``\\frac{1}{\\text{x}}``'s, leaving ``\\frac{1}{``): units are split off and compared by :func:`split_unit`."""
    from latex2sympy2_extended.latex2sympy2 import NormalizationConfig

    return NormalizationConfig(basic_latex=True, units=False, malformed_operators=True, nits=True, boxed="last",
                               equations=False)


_SPACES = _regex(r"(?<![A-Za-z])\s+|\s+(?![A-Za-z])")  # spaces next to a non-letter (kept: "\pi r" is not "\pir")


@functools.lru_cache(maxsize=65536)
def _canonical(latex: str) -> str:
    """The LaTeX math-verify would parse for ``latex`` (its own normalisation, units kept), insignificant spaces
    dropped. Equal canonical forms are equal answers without parsing: ``\\displaystyle x``, ``\\dfrac`` /
    ``\\frac``, ``\\left( \\right)`` all normalise alike. Regular expressions over <= 300 characters (~0.1 ms).
    """
    from latex2sympy2_extended.latex2sympy2 import normalize_latex  # math-verify's own (pinned) dependency

    try:
        normalized = normalize_latex("\\boxed{" + latex + "}", config=_normalization())
    except Exception:  # noqa: BLE001 - a normaliser failure only loses the shortcut
        return latex
    return _SPACES.sub("", normalized)


@functools.lru_cache(maxsize=8192)
def _parse(latex: str) -> tuple[Any, ...]:
    """The sympy value of the WHOLE normalised answer, or () when it does not parse whole (cached).

    latex2sympy is called directly: math-verify's ``parse`` would search the text with regular expressions (a
    part of it may match: ``\\frac{1}{2}]`` reads as 1/2) and retry the last ``=`` part after a failure.
    """
    from latex2sympy2_extended.latex2sympy2 import latex2sympy, normalize_latex
    from math_verify.grader import should_treat_as_complex

    normalized = normalize_latex("\\boxed{" + latex + "}", config=_normalization())
    try:
        value = latex2sympy(normalized, is_real=not should_treat_as_complex(normalized), convert_degrees=False,
                            normalization_config=None)
    except Exception:  # noqa: BLE001 - the parser's syntax errors: not parsed whole
        return ()
    return () if value is None else (value,)


GOLD_ATTEMPTS = 3
"""A gold whose parse overran the deadline this many times is read no more (only the shortcuts can match it)."""
_gold_timeouts: dict[str, int] = {}  # only golds that overran: a handful


def _parsed_gold(gold: str, timeout_seconds: float) -> tuple[Any, ...] | None:
    """The parsed gold (cached), or None when it is screened out, does not parse whole, overran its deadline, or
    gave up after retries."""
    if screen_problem(gold) is not None or _gold_timeouts.get(gold, 0) >= GOLD_ATTEMPTS:
        return None
    _math_verify()  # imported before any deadline is armed
    finished, parsed = run_with_deadline(_parse, timeout_seconds, gold)
    if not finished:
        # Retried (a cold start or a loaded machine can overrun once) but not forever: one slow gold must not
        # cost a deadline for every completion of the run.
        _gold_timeouts[gold] = _gold_timeouts.get(gold, 0) + 1
        return None
    return parsed or None


@functools.lru_cache(maxsize=65536)
def _verify(gold: str, answer: str, mv: Any = None) -> bool:
    """math-verify's verdict on two whole parses (cached); only completed verdicts are cached."""
    mv = mv or _math_verify()
    gold_value, answer_value = _parse(gold), _parse(answer)
    if not gold_value or not answer_value:
        return False  # either side not parsed whole: never equal (equal texts were decided before)
    return bool(mv.verify(list(gold_value), list(answer_value), timeout_seconds=None))


_PLAIN_INT = _regex(r"-?[0-9]{1,15}")
_SIMPLE_NUMBER = _regex(
    r"\$?(-?)(?:([0-9]{1,15}(?:\.[0-9]{1,15})?)|([0-9]{1,15})/([0-9]{1,15})"
    r"|\\[dt]?frac\{([0-9]{1,15})\}\{([0-9]{1,15})\})\$?"
)


def _simple_number(text: str) -> Fraction | None:
    """The exact value of ``7``, ``-0.75``, ``3/4`` or ``\\frac{3}{4}`` (optionally in ``$...$``), else None."""
    match = _SIMPLE_NUMBER.fullmatch(text)
    if match is None:
        return None
    sign, decimal, num, den, frac_num, frac_den = match.groups()
    if decimal is not None:
        value = Fraction(decimal)
    else:
        numerator, denominator = int(num or frac_num), int(den or frac_den)
        if denominator == 0:
            return None
        value = Fraction(numerator, denominator)
    return -value if sign else value


RIGHT, WRONG, TIMEOUT = "right", "wrong", "timeout"
_LETTER = _regex(r"[A-Za-z]")
_COMMAND_NAME = _regex(r"\\[A-Za-z]+")


def _number_shortcut(answer: str, gold: str) -> str | None:
    """RIGHT / WRONG where equal texts or plain numbers decide without sympy, else None."""
    if answer == gold:
        return RIGHT
    if _PLAIN_INT.fullmatch(answer) and _PLAIN_INT.fullmatch(gold):
        return RIGHT if int(answer) == int(gold) else WRONG  # what math-verify concludes too, without sympy
    answer_number = _simple_number(answer)
    if answer_number is not None and answer_number == _simple_number(gold):
        return RIGHT  # 0.75 = 3/4 = \frac{3}{4} exactly; unequal values still go to math-verify (it rounds floats)
    return None


def verdict(answer: str, gold: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> str:
    """``"right"``, ``"wrong"`` or ``"timeout"`` (a comparison that ran past its deadline: wrong, and counted).

    >>> verdict("5.", "5"), verdict(r"2\\mathrm{i}", "2"), verdict(r"5\\text{ cm}", r"5\\text{ m}")
    ('right', 'wrong', 'wrong')
    """
    answer, gold = clean_answer(answer), clean_answer(gold)
    if not answer or not gold:
        return WRONG
    shortcut = _number_shortcut(answer, gold)
    if shortcut is not None:
        return shortcut
    (answer, answer_unit), (gold, gold_unit) = split_unit(answer), split_unit(gold)
    if answer_unit is not None and gold_unit is not None and answer_unit != gold_unit:
        return WRONG  # both name a unit: it is part of the answer (one side alone: MATH's golds often omit it)
    shortcut = _number_shortcut(answer, gold)
    if shortcut is not None:
        return shortcut
    if "=" in answer and "=" not in gold and not _LETTER.search(_COMMAND_NAME.sub("", answer.partition("=")[0])):
        return WRONG  # "3 = 5" is no answer of 5: only a variable's equation ("x = 5") names its value
    if _TEXT_COMMAND.search(answer) or _TEXT_COMMAND.search(gold):
        # Words are compared as text (\text{(A)} = (A), \text{Sunday} = sunday), never dropped or read as symbols.
        return RIGHT if _text_key(answer) == _text_key(gold) else WRONG
    if screen_problem(answer) is not None:
        return WRONG
    if _canonical(answer) == _canonical(gold):
        return RIGHT
    if _parsed_gold(gold, timeout_seconds) is None:  # the gold first, under a deadline of its own
        return WRONG
    finished, right = run_with_deadline(_verify, timeout_seconds, gold, answer)
    if not finished:
        return TIMEOUT  # not cached: a timeout under load must not stick
    return RIGHT if right else WRONG


def equivalent(answer: str, gold: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> bool:
    """Whether ``answer`` equals ``gold`` (both LaTeX): :func:`verdict` is ``"right"``.

    >>> equivalent("0.5", r"\\frac{1}{2}"), equivalent("1/2", r"\\dfrac12"), equivalent("(1, 2]", "(1,2)")
    (True, True, False)
    """
    return verdict(answer, gold, timeout_seconds=timeout_seconds) == RIGHT


def gold_number(gold: str, timeout_seconds: float) -> Fraction | None:
    """The gold as an exact number (for the last-number rule), or None when it is not a plain number."""
    simple = _simple_number(clean_answer(gold))
    if simple is not None:
        return simple
    import sympy

    for value in _parsed_gold(split_unit(clean_answer(gold))[0], timeout_seconds) or ():
        if isinstance(value, sympy.Rational):
            return Fraction(int(value.p), int(value.q))
        if isinstance(value, sympy.Float):
            return Fraction(str(value))
    return None


def gold_problem(gold: Any) -> str | None:
    """Why a ``gold`` value cannot be scored, or None: the check rewards and dataset loading share.

    >>> gold_problem(r"\\frac{3}{4}") is None, gold_problem("")
    (True, "'gold' is '', expected a non-empty string (the final answer in LaTeX)")
    """
    if not isinstance(gold, str) or not gold.strip():
        return f"'gold' is {short_repr(gold)}, expected a non-empty string (the final answer in LaTeX)"
    return None
