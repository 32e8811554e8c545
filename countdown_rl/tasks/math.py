"""The MATH task: competition problems (Hendrycks et al., 2021) whose final answers are compared with math-verify.

The task in six steps, from rows to rewards:

1. Rows: ``problem`` and ``gold``. :meth:`MathTask.prepare_row` takes ``gold`` from an ``answer`` column when there
   is one (MATH-500), else from the LAST ``\\boxed{...}`` / ``\\fbox{...}`` of ``solution`` (brace-matched); it
   turns ``level`` ("Level 5", or an int) into an int ("Level ?" -> None).
2. Extract the model's answer (:func:`extract`, with the shared readers of ``countdown_rl.tasks.extraction``): the
   content of the last complete ``<answer>...</answer>`` pair (with a box inside it, the box's content); without
   tags, the content of the last complete box. Nothing -> FAILED.
3. Clean (:func:`clean_answer`, :func:`split_unit`): outer ``$`` and one sentence-ending ``.``, ``,`` or ``;``
   dropped; ``\\text`` / ``\\mathrm`` around one symbol read as that symbol (``2\\mathrm{i}`` is ``2i``); a
   trailing unit split off (both sides with a unit: the units must match as text); any other text command makes
   the answer text, compared as text (``\\text{(C)}`` = ``(C)``), never dropped.
4. Screen (:func:`screen_problem`): what a deadline cannot stop because it is computed in C (a power tower, huge
   literal powers, factorials of big numbers), too long or too deep, is unreadable and never reaches sympy; sums
   and symbolic exponents pass.
5. Compare (:func:`verdict`): equal texts and plain numbers are decided without sympy; otherwise both sides are
   normalised by math-verify's own normaliser (its unit stripping off: it drops any final ``\\text{...}``) and
   parsed WHOLE by latex2sympy (not ``math_verify.parse``, whose regular expressions may read a prefix, and whose
   plain expression extractor hands text to sympy's ``parse_expr``); a side that does not parse whole is never
   equal. Then ``math_verify.verify(gold, answer)``. Parsed golds, parses and verdicts are cached.
6. Score: :meth:`MathTask.judge` and the rewards ``r1_zero`` (1.0 when the R1-Zero format holds and the answer
   is right, else 0.0) and ``math_shaped`` (1.1 / 0.2 / 0.1 / 0.0; see :func:`math_shaped_reward`).

Time limit, in every thread and process: :func:`countdown_rl.tasks.deadline.run_with_deadline` (a watchdog thread
that raises in the overrunning thread; math-verify's own ``signal.alarm`` timeouts are off) bounds parsing the
gold (``GOLD_ATTEMPTS`` tries) and each comparison by ``timeout_seconds`` (option, default 2 s). A timeout is a
wrong answer, not cached, and counted per batch in ``log_metric("math/timeouts", n)``.
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from re import compile as _regex  # aliased: the package's safety hook flags any call spelled like the builtin
from typing import Any

from countdown_rl.tasks.base import (
    Outcome,
    PromptTemplate,
    RewardFunc,
    Task,
    Verdict,
    last_tag_content,
    score_batch,
)
from countdown_rl.tasks.deadline import run_with_deadline
from countdown_rl.tasks.extraction import (
    has_box_opening,
    last_box,
    last_boxed,
    last_number,
    strip_sentence_punctuation,
)

__all__ = [
    "DEFAULT_DATASET",
    "DEFAULT_TIMEOUT_SECONDS",
    "Extraction",
    "MAX_FACTORIAL_DIGITS",
    "MAX_POWER_PRODUCT",
    "GOLD_ATTEMPTS",
    "MAX_ANSWER_CHARS",
    "MAX_EXPONENT_DIGITS",
    "MAX_NESTING",
    "MALFORMED_ROWS_METRIC",
    "TIMEOUTS_METRIC",
    "MathOptions",
    "MathTask",
    "REWARD_FUNCS",
    "clean_answer",
    "equivalent",
    "extract",
    "generate_math",
    "gold_problem",
    "has_box_opening",
    "last_boxed",
    "last_number",
    "math_r1_zero_reward",
    "math_shaped_reward",
    "parse_level",
    "r1_zero_format",
    "screen_problem",
    "split_unit",
    "verdict",
]

DEFAULT_DATASET = "DigitalLearningGmbH/MATH-lighteval"
MALFORMED_ROWS_METRIC = "math/malformed_rows"
TIMEOUTS_METRIC = "math/timeouts"
"""``log_metric`` name for the number of comparisons in a batch that ran past their deadline (scored wrong)."""
DEFAULT_TIMEOUT_SECONDS = 2.0
"""Per-completion deadline for parsing and comparing (main thread). Real MATH answers took at most 0.45 s on a
first, cold parse in our measurements (a few ms once warm), so 2 s leaves a 4x margin and caps a 64-completion batch
of pathological answers at about two minutes."""
MAX_ANSWER_CHARS = 300
"""Longer answers are unreadable. MATH's final answers are short (matrices and intervals included)."""
MAX_NESTING = 6
"""Deeper ``( [ {`` nesting is unreadable: latex2sympy's parse time grows with depth (cold: 0.5 s at 6 bare
braces, 1.4 s at 8, 1.8 s at 16 parentheses). Real answers nest 3 deep (``\\left(\\frac{\\sqrt{3}}{2}, 1\\right)``)."""
MAX_EXPONENT_DIGITS = 4
"""A power whose exponent holds a longer integer (or another power) is unreadable: sympy would expand it."""

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
# Screening (no sympy)
# --------------------------------------------------------------------------------------------------------------

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


def _gold_number(gold: str, timeout_seconds: float) -> Fraction | None:
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


# --------------------------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------------------------


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_LEVEL = _regex(r"\s*(?:[Ll]evel\s*)?([0-9]{1,3})\s*")


def parse_level(value: Any) -> int | None:
    """A MATH level as an int: ``"Level 5"`` or ``5`` -> 5; ``"Level ?"`` or None -> None; anything else a ValueError.

    >>> parse_level("Level 5"), parse_level(3), parse_level("Level ?")
    (5, 3, None)
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"'level' is {_show(value)}, expected 'Level 1' to 'Level 5' or an int")
    if isinstance(value, int) or (hasattr(value, "item") and isinstance(getattr(value, "item")(), int)):
        return int(value)
    if isinstance(value, str):
        if value.strip() in ("Level ?", "?", ""):  # MATH's train split marks a few problems so
            return None
        match = _LEVEL.fullmatch(value)
        if match:
            return int(match.group(1))
    raise ValueError(f"'level' is {_show(value)}, expected 'Level 1' to 'Level 5' or an int")


def gold_problem(gold: Any) -> str | None:
    """Why a ``gold`` value cannot be scored, or None: the check rewards and dataset loading share.

    >>> gold_problem(r"\\frac{3}{4}") is None, gold_problem("")
    (True, "'gold' is '', expected a non-empty string (the final answer in LaTeX)")
    """
    if not isinstance(gold, str) or not gold.strip():
        return f"'gold' is {_show(gold)}, expected a non-empty string (the final answer in LaTeX)"
    return None


# --------------------------------------------------------------------------------------------------------------
# Rewards
# --------------------------------------------------------------------------------------------------------------


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def math_r1_zero_reward(
    completions: Sequence[Any],
    gold: Sequence[Any],
    *,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    **kwargs: Any,
) -> list[float | None]:
    """Seed 003's reward: 1.0 when :func:`r1_zero_format` holds AND the answer is equivalent, else 0.0.

    The answer is :func:`extract`'s (the last ``<answer>`` content). Logged per batch: ``math/format_reward`` (share
    formatted) and ``math/answer_reward`` (share whose extracted answer is right, whatever the format).

    >>> math_r1_zero_reward(["x </think> <answer>0.75</answer>", "x </think> <answer>1</answer>",
    ...                      "<answer>0.75</answer>"], gold=[r"\\frac{3}{4}"] * 3)
    [1.0, 0.0, 0.0]
    """
    formats: list[float] = []
    answers: list[float] = []
    timeouts = [0]

    def score(_index: int, text: str, row: dict[str, Any]) -> float:
        found = extract(text)
        result = WRONG if found.answer is None else verdict(found.answer, row["gold"], timeout_seconds=timeout_seconds)
        timeouts[0] += result == TIMEOUT
        right = result == RIGHT
        formats.append(float(found.formatted))
        answers.append(float(right))
        return 1.0 if found.formatted and right else 0.0

    log_metric = kwargs.get("log_metric")
    rewards = score_batch(
        "math_r1_zero_reward", completions, {"gold": gold}, lambda row: gold_problem(row["gold"]), score,
        log_metric=log_metric, malformed_metric=MALFORMED_ROWS_METRIC,
    )
    if callable(log_metric):
        log_metric(TIMEOUTS_METRIC, timeouts[0])
        if formats:
            log_metric("math/format_reward", _mean(formats))
            log_metric("math/answer_reward", _mean(answers))
    return rewards


def math_shaped_reward(
    completions: Sequence[Any],
    gold: Sequence[Any],
    *,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    **kwargs: Any,
) -> list[float | None]:
    """Seed 002's shaped reward, at most 1.1; tags play no part.

    With a complete box: 0.1 for the box + 1.0 when the last box's content is equivalent (1.1 or 0.1). Without
    one: 0.1 for an unclosed ``\\boxed{`` + 0.1 when the text's :func:`last_number` equals the gold (0.0 to 0.2).
    The last number is a fallback for a missing box: the seed scores a clean ``\\boxed{36}`` at 1.1, not 1.2.

    >>> math_shaped_reward([r"\\boxed{36}", r"\\boxed{35}", "so 36", r"\\boxed{3 so 36", "none"], gold=["36"] * 5)
    [1.1, 0.1, 0.1, 0.2, 0.0]
    """

    timeouts = [0]

    def score(_index: int, text: str, row: dict[str, Any]) -> float:
        boxed = last_boxed(text)
        if boxed is not None:
            result = verdict(boxed, row["gold"], timeout_seconds=timeout_seconds)
            timeouts[0] += result == TIMEOUT
            return 1.1 if result == RIGHT else 0.1
        reward = 0.1 if has_box_opening(text) else 0.0
        number = last_number(text)
        if number is not None and number == _gold_number(row["gold"].strip(), timeout_seconds):
            reward += 0.1
        return round(reward, 1)  # 0.1 + 0.1 is 0.2, not 0.20000000000000001

    log_metric = kwargs.get("log_metric")
    rewards = score_batch(
        "math_shaped_reward", completions, {"gold": gold}, lambda row: gold_problem(row["gold"]), score,
        log_metric=log_metric, malformed_metric=MALFORMED_ROWS_METRIC,
    )
    if callable(log_metric):
        log_metric(TIMEOUTS_METRIC, timeouts[0])
    return rewards


REWARD_FUNCS: dict[str, RewardFunc] = {"r1_zero": math_r1_zero_reward, "math_shaped": math_shaped_reward}
"""Recipe name -> reward function; ``__name__`` names its ``rewards/<name>/mean`` log key."""

# --------------------------------------------------------------------------------------------------------------
# Prompts
# --------------------------------------------------------------------------------------------------------------

R1_ZERO_PREAMBLE = (
    "A conversation between User and Assistant. The User asks a question, and the Assistant solves it. "
    "The Assistant first thinks about the reasoning process in the mind and then provides the User with the "
    "answer. The reasoning process is enclosed within <think> </think> and the answer within <answer> </answer> "
    "tags, respectively, i.e., <think> reasoning process here </think> <answer> answer here </answer>."
)
BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
CHAT_SYSTEM_PROMPT = (
    "You are a helpful assistant. You first think about the reasoning process step by step inside <think> "
    "</think> tags, then give the final answer, in LaTeX, inside <answer> </answer> tags."
)


def _r1_zero(row: Mapping[str, Any]) -> str:
    return f"{R1_ZERO_PREAMBLE}\nUser: {row['problem']}\nAssistant: <think>"


def _boxed(row: Mapping[str, Any]) -> str:
    return f"Problem: {row['problem']}\n{BOXED_INSTRUCTION}\nSolution:"


def _chat(row: Mapping[str, Any]) -> list[dict[str, str]]:
    return [{"role": "system", "content": CHAT_SYSTEM_PROMPT}, {"role": "user", "content": str(row["problem"])}]


PROMPT_TEMPLATES: dict[str, PromptTemplate] = {
    t.name: t
    for t in (
        PromptTemplate("r1_zero", False, _r1_zero,
                       "plain-text R1-Zero transcript ending with an open <think>; answer in <answer> tags (seed 003)"),
        PromptTemplate("boxed", False, _boxed,
                       "plain-text problem asking for the final answer in \\boxed{} (seed 002)"),
        PromptTemplate("chat", True, _chat,
                       "system + user messages for instruct models; <think> then <answer> tags"),
    )
}

# --------------------------------------------------------------------------------------------------------------
# Offline problems
# --------------------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------------------
# The task
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MathOptions:
    """Options of the MATH task (recipe ``task_options: [levels=5]``)."""

    levels: tuple[int, ...] = field(
        default=(),
        metadata={"help": "Keep only these MATH levels (1-5), e.g. levels=5 (seed 002's 'Math Hard'); empty: all."},
    )
    timeout_seconds: float = field(
        default=DEFAULT_TIMEOUT_SECONDS,
        metadata={"help": "Deadline for parsing and comparing one completion's answer (main thread); 0: none."},
    )

    def __post_init__(self) -> None:
        levels = self.levels
        if isinstance(levels, int) and not isinstance(levels, bool):  # {"levels": 5} from a mapping
            levels = (levels,)
        if not isinstance(levels, (tuple, list)) or any(
            isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 5 for k in levels
        ):
            raise ValueError(f"levels={_show(self.levels)}: expected MATH levels between 1 and 5, e.g. levels=4,5")
        object.__setattr__(self, "levels", tuple(sorted(set(levels))))
        if isinstance(self.timeout_seconds, bool) or not isinstance(self.timeout_seconds, (int, float)) or not (
            0 <= self.timeout_seconds < float("inf")
        ):
            raise ValueError(f"timeout_seconds={_show(self.timeout_seconds)}: expected a number of seconds >= 0")
        object.__setattr__(self, "timeout_seconds", float(self.timeout_seconds))


class MathTask(Task):
    """MATH behind the task interface (see the module docstring).

    Datasets: ``DigitalLearningGmbH/MATH-lighteval`` (the default: all subjects, train 7,500 / test 5,000),
    ``EleutherAI/hendrycks_math`` (one config per subject: ``algebra``, ``counting_and_probability``, ``geometry``,
    ``intermediate_algebra``, ``number_theory``, ``prealgebra``, ``precalculus``; name one with
    ``dataset_config``) and ``HuggingFaceH4/MATH-500`` (test only; its ``answer`` column is the gold).

    >>> task = MathTask(["levels=5"])
    >>> row = task.prepare_row({"problem": "1/2 + 1/4?", "solution": r"It is $\\boxed{\\frac34}$.", "level": "Level 5"})
    >>> row["gold"], row["level"], task.filter_row(row)
    ('\\\\frac34', 5, True)
    >>> task.judge("1/2 + 1/4 = 0.75 </think> <answer>0.75</answer>", row)
    Verdict(outcome=<Outcome.CORRECT: 'correct'>, answer='0.75', reward=1.0)
    """

    name = "math"
    description = "competition mathematics (MATH); the final answer is compared with the gold by math-verify"
    columns = ("problem", "gold")
    default_dataset = DEFAULT_DATASET
    known_datasets = {
        DEFAULT_DATASET: {"config": "default", "train_split": "train", "test_split": "test"},
        "EleutherAI/hendrycks_math": {"config": "algebra", "train_split": "train", "test_split": "test"},
        # An evaluation set (500 of the 5,000 test problems): no train split.
        "HuggingFaceH4/MATH-500": {"config": None, "train_split": None, "test_split": "test"},
    }
    prompt_templates = PROMPT_TEMPLATES
    default_template = "r1_zero"
    default_reward_funcs = ("r1_zero",)
    Options = MathOptions

    # -- rows ---------------------------------------------------------------------------------------------------
    def prepare_row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """Add ``gold`` (from ``answer``, else the last box of ``solution``) and make ``level`` an int.

        >>> MathTask().prepare_row({"problem": "p", "answer": 12})["gold"]
        '12'
        """
        out = dict(row)
        if "gold" not in out:
            answer, solution = out.get("answer"), out.get("solution")
            if isinstance(answer, str):
                out["gold"] = answer.strip()
            elif isinstance(answer, (int, float)) and not isinstance(answer, bool):
                out["gold"] = str(answer)
            elif answer is not None:
                raise ValueError(f"'answer' is {_show(answer)}, expected the final answer as a string")
            elif isinstance(solution, str):
                gold = last_boxed(solution)
                if gold is None or not gold.strip():
                    raise ValueError("'solution' has no complete \\boxed{...} (or \\fbox{...}) final answer")
                out["gold"] = gold.strip()
            elif "solution" in out or "answer" in out:
                # None (a dataset probe, or a null cell): row_problem names the column
                out["gold"] = None
            else:
                raise ValueError("no 'answer' or 'solution' column to take the gold answer from")
        if "level" in out:
            out["level"] = parse_level(out["level"])
        return out

    def row_problem(self, row: Mapping[str, Any]) -> str | None:
        problem = row.get("problem")
        if not isinstance(problem, str) or not problem.strip():
            return f"'problem' is {_show(problem)}, expected a non-empty string"
        if "gold" not in row:
            return "'gold' is missing (prepare_row takes it from 'answer' or the last \\boxed{} of 'solution')"
        return gold_problem(row["gold"])

    def dedupe_key(self, row: Mapping[str, Any]) -> Hashable:
        return " ".join(str(row["problem"]).split())

    def difficulty(self, row: Mapping[str, Any]) -> float:
        try:
            level = parse_level(row.get("level"))
        except ValueError:
            level = None
        return float(level) if level is not None else 0.0  # unknown level ("Level ?"): first in a curriculum

    def filter_row(self, row: Mapping[str, Any]) -> bool:
        if not self.options.levels:
            return True
        try:
            return parse_level(row.get("level")) in self.options.levels
        except ValueError:
            return False

    # -- judging and rewards -------------------------------------------------------------------------------------
    def judge(self, text: str, row: Mapping[str, Any]) -> Verdict:
        found = extract(text)
        if found.source == "none":
            return Verdict(Outcome.FAILED, None, 0.0)
        right = found.answer is not None and equivalent(
            found.answer, row["gold"], timeout_seconds=self.options.timeout_seconds
        )
        shown = found.answer if found.answer is None or len(found.answer) <= MAX_ANSWER_CHARS else (
            found.answer[:MAX_ANSWER_CHARS] + "..."
        )
        return Verdict(Outcome.CORRECT if right else Outcome.PARTIAL, shown, 1.0 if right and found.formatted else 0.0)

    def reward_funcs(self) -> Mapping[str, RewardFunc]:
        # partial keeps the functions picklable; update_wrapper gives it the wrapped function's __name__.
        return {
            name: functools.update_wrapper(
                functools.partial(func, timeout_seconds=self.options.timeout_seconds), func
            )
            for name, func in REWARD_FUNCS.items()
        }

    # -- offline data ------------------------------------------------------------------------------------------
    def generate(self, n: int, seed: int = 0) -> list[dict[str, Any]]:
        return generate_math(n, seed=seed)
