"""The MATH task: competition problems (Hendrycks et al., 2021) whose final answers are compared with math-verify.

The task in five steps, from rows to rewards:

1. Rows: ``problem`` and ``gold``. :meth:`MathTask.prepare_row` takes ``gold`` from an ``answer`` column when there
   is one (MATH-500), else from the LAST ``\\boxed{...}`` / ``\\fbox{...}`` of ``solution`` (brace-matched); it
   turns ``level`` ("Level 5", or an int) into an int ("Level ?" -> None).
2. Extract the model's answer (:func:`extract`): the content of the last complete ``<answer>...</answer>`` pair
   (with a box inside it, the box's content); without tags, the content of the last complete box
   (:func:`last_boxed`). Nothing -> FAILED. Brace matching is one iterative left-to-right scan.
3. Screen (:func:`screen_problem`): an answer longer than ``MAX_ANSWER_CHARS``, nested deeper than
   ``MAX_NESTING``, with a power tower or a power above ``MAX_EXPONENT_DIGITS`` digits, or a factorial /
   binomial / sum / product next to big numbers or powers is unreadable (PARTIAL) and never reaches sympy:
   these are the inputs whose parsing or comparison blows up (measured: 16 nested parentheses take 1.8 s to parse;
   ``9^{9^{9}}`` never finishes comparing).
4. Compare (:func:`equivalent`): equal strings, two plain integers, equal plain numbers (``0.75``, ``3/4``,
   ``\\frac{3}{4}``: exact fractions) and equal normal forms (math-verify's own LaTeX normalisation: ``$x$``,
   ``\\dfrac``, ``\\left(``, units) are decided directly, without sympy; otherwise both sides
   are wrapped as ``\\boxed{...}`` and read by ``math_verify.parse`` with LaTeX extraction only (its plain
   expression extractor hands text to sympy's ``parse_expr``, which evaluates Python, so it is not used), then
   ``math_verify.verify(gold, answer)``: ``\\frac{1}{2}`` = ``0.5`` = ``1/2``, intervals, sets, units stripped.
   Parsed golds, parsed answers and verdicts are cached (golds repeat across a group of completions).
5. Score: :meth:`MathTask.judge` (CORRECT / PARTIAL / FAILED with the r1_zero reward), and the reward functions
   ``r1_zero`` (1.0 when the R1-Zero format holds and the answer is right, else 0.0) and ``math_shaped``
   (1.1 / 0.2 / 0.1 / 0.0; see :func:`math_shaped_reward`).

Time limit: math-verify's own timeouts use ``signal.alarm`` (whole seconds, one alarm per call, and a ValueError
when called off the main thread), so they are switched off (``parsing_timeout=None``, ``timeout_seconds=None``)
and one ``signal.setitimer`` deadline of ``timeout_seconds`` (option, default 2 s) covers parsing the answer and
every comparison of one completion (a gold is parsed once, under a deadline of its own, retried up to
``GOLD_ATTEMPTS`` times); a timeout counts as a wrong answer and is not cached. The deadline is armed
only on the main thread and only when no other real-time timer is running; elsewhere (a worker thread) work is
bounded by the screen of step 3 alone, which covers the known blow-ups but not every slow sympy path. TRL calls
synchronous reward functions on the main thread; worker processes have one of their own.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import random
import signal
import threading
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
    score_batch,
)

__all__ = [
    "DEFAULT_DATASET",
    "DEFAULT_TIMEOUT_SECONDS",
    "Extraction",
    "GOLD_ATTEMPTS",
    "MAX_ANSWER_CHARS",
    "MAX_EXPONENT_DIGITS",
    "MAX_NESTING",
    "MALFORMED_ROWS_METRIC",
    "MathOptions",
    "MathTask",
    "REWARD_FUNCS",
    "equivalent",
    "extract",
    "generate_math",
    "gold_problem",
    "last_boxed",
    "last_number",
    "math_r1_zero_reward",
    "math_shaped_reward",
    "parse_level",
    "r1_zero_format",
    "screen_problem",
]

DEFAULT_DATASET = "DigitalLearningGmbH/MATH-lighteval"
MALFORMED_ROWS_METRIC = "math/malformed_rows"
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

_BOX_COMMANDS = ("\\boxed", "\\fbox")
_MAX_NUMBER_CHARS = 50  # the last-number rule ignores longer digit runs (no bignum work on model text)

# --------------------------------------------------------------------------------------------------------------
# Extraction (no sympy)
# --------------------------------------------------------------------------------------------------------------


def _closing_brace(text: str, open_index: int) -> int | None:
    """Index of the ``}`` closing the ``{`` at ``open_index``, or None; one scan, backslash escapes skipped."""
    depth = 0
    i, n = open_index, len(text)
    while i < n:
        char = text[i]
        if char == "\\":
            i += 2  # \{ and \} are literal braces (set notation), not groups; \\ is a line break
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _box_at(text: str, start: int, command: str) -> tuple[str | None, bool]:
    """Read the box whose command starts at ``start``: (content or None when unclosed, whether it is a box)."""
    i = start + len(command)
    if i < len(text) and text[i].isalpha():  # \boxedanswer, \fboxsep: another command
        return None, False
    j = i
    while j < len(text) and text[j] in " \t":
        j += 1
    if j < len(text) and text[j] == "{":
        end = _closing_brace(text, j)
        return (None if end is None else text[j + 1 : end]), True
    if j > i and j < len(text) and command == "\\boxed":
        # MATH's few "\boxed 5" answers: the token up to whitespace or the closing $.
        k = j
        while k < len(text) and not text[k].isspace() and text[k] != "$":
            k += 1
        if k > j:
            return text[j:k], True
    return None, False


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` or ``\\fbox{...}`` (braces matched), or None when it is missing or unclosed.

    >>> last_boxed(r"so $\\boxed{\\frac{3}{4}}$, not \\boxed{1}... \\boxed{\\{1, 2\\}}")
    '\\\\{1, 2\\\\}'
    >>> last_boxed(r"\\boxed{\\frac{1}{2}") is None
    True
    """
    return _last_box(text)[1]


def _last_box(text: str) -> tuple[bool, str | None]:
    """(whether the text has a box, the last box's content or None when it never closes)."""
    # The last occurrence of each command; a look-alike (\boxedx, a bare \boxed) moves only its own search left,
    # so each command's text is scanned once in all: O(len(text)) even for 20,000 bare "\boxed"s.
    found = {command: text.rfind(command) for command in _BOX_COMMANDS}
    while True:
        command = max(found, key=found.__getitem__)
        start = found[command]
        if start < 0:
            return False, None
        content, is_box = _box_at(text, start, command)
        if is_box:
            return True, content  # the last box decides, even when it never closes (a truncated answer)
        found[command] = text.rfind(command, 0, start)


def has_box_opening(text: str) -> bool:
    """Whether the text writes ``\\boxed{`` or ``\\fbox{`` (closed or not).

    >>> has_box_opening(r"\\boxed{12"), has_box_opening("boxed{12}")
    (True, False)
    """
    return "\\boxed{" in text or "\\fbox{" in text


def _answer_tag(text: str) -> str | None:
    """Content of the last complete ``<answer>...</answer>`` pair (``str.rfind``: linear), or None."""
    end = text.rfind("</answer>")
    if end < 0:
        return None
    start = text.rfind("<answer>", 0, end)
    return None if start < 0 else text[start + len("<answer>") : end]


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
    tag = _answer_tag(text)
    if tag is not None:
        boxed, inner = _last_box(tag)
        if boxed:  # a box inside the tags holds the answer; one that never closes leaves nothing readable
            return Extraction("tag", None if inner is None else inner.strip(), formatted)
        return Extraction("tag", tag.strip(), formatted)
    boxed = last_boxed(text)
    if boxed is not None:
        return Extraction("box", boxed.strip(), formatted)
    return Extraction("none", None, formatted)


_LAST_NUMBER = _regex(r"(?<![0-9])-?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?")


def last_number(text: str) -> Fraction | None:
    """The last number written in the text (ASCII digits; ``-``, decimals and ``1,000`` separators read), or None.

    >>> last_number("x = 3, so 2x - 7 = -1.5 and 1,000 more"), last_number("no digits")
    (Fraction(1000, 1), None)
    """
    last = None
    for last in _LAST_NUMBER.finditer(text):
        pass
    if last is None or len(last.group()) > _MAX_NUMBER_CHARS:
        return None
    return Fraction(last.group().replace(",", ""))


# --------------------------------------------------------------------------------------------------------------
# Screening (no sympy)
# --------------------------------------------------------------------------------------------------------------

_DIGIT_RUN = _regex(r"[0-9]+")
_BIG_OPERATORS = _regex(r"(?<!\\)!|\\binom|\\dbinom|\\tbinom|\\choose|\\sum|\\prod")


def _exponents(text: str) -> Iterator[str]:
    """The exponent of every ``^``: a brace group (matched) or the next character."""
    i = text.find("^")
    while i >= 0:
        j = i + 1
        while j < len(text) and text[j] == " ":
            j += 1
        if j < len(text) and text[j] == "{":
            end = _closing_brace(text, j)
            yield text[j + 1 :] if end is None else text[j + 1 : end]
        else:
            yield text[j : j + 1]
        i = text.find("^", i + 1)


def screen_problem(answer: str) -> str | None:
    """Why an answer is not handed to sympy (too long, too deep, too big to expand), or None when it may be.

    >>> screen_problem(r"\\frac{2^{10}}{3}") is None, screen_problem("9^{9^{9}}")
    (True, 'a power tower')
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
    has_power = False
    for exponent in _exponents(answer):
        has_power = True
        if "^" in exponent:
            return "a power tower"
        if any(len(run) > MAX_EXPONENT_DIGITS for run in _DIGIT_RUN.findall(exponent)):
            return f"an exponent over {MAX_EXPONENT_DIGITS} digits"
    if _BIG_OPERATORS.search(answer) and (has_power or any(len(r) > 3 for r in _DIGIT_RUN.findall(answer))):
        return "a factorial, binomial, sum or product of big numbers"
    return None


# --------------------------------------------------------------------------------------------------------------
# Comparing (math-verify)
# --------------------------------------------------------------------------------------------------------------


class _Deadline(BaseException):
    """Raised by the SIGALRM handler. A BaseException, so math-verify's ``except Exception`` cannot swallow it."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Deadline()


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`_Deadline` inside the block after ``seconds`` (main thread, no other timer armed), else no limit."""
    if (
        seconds <= 0
        or not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
        or signal.getitimer(signal.ITIMER_REAL)[0] > 0  # someone else's timer (an outer deadline): keep theirs
    ):
        yield
        return
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:  # restored even when the alarm fires between the block's end and the disarm above
            signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)


class _DropDisabledTimeoutWarning(logging.Filter):
    """math-verify warns once that its timeouts are off; here the deadline above replaces them."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Timeout is disabled" not in record.getMessage()


@functools.lru_cache(maxsize=1)
def _math_verify() -> Any:
    """math_verify, imported on first use (it pulls in sympy: about a second), warmed up, its timeout warning muted."""
    import math_verify

    for name in ("math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).addFilter(_DropDisabledTimeoutWarning())
    # One small parse and symbolic comparison now, outside any deadline: sympy imports some modules on first use,
    # and an import cut short by the alarm would leave them half-initialised.
    config = [math_verify.LatexExtractionConfig()]
    math_verify.verify(math_verify.parse("\\boxed{x+1}", config, parsing_timeout=None),
                       math_verify.parse("\\boxed{(1+x)^1}", config, parsing_timeout=None), timeout_seconds=None)
    return math_verify


@functools.lru_cache(maxsize=1)
def _latex_only() -> tuple[Any, ...]:
    return (_math_verify().LatexExtractionConfig(),)


_SPACES = _regex(r"(?<![A-Za-z])\s+|\s+(?![A-Za-z])")  # spaces next to a non-letter (kept: "\pi r" is not "\pir")


@functools.lru_cache(maxsize=1)
def _boxed_normalization() -> Any:
    return replace(_latex_only()[0].normalization_config, boxed="last")


@functools.lru_cache(maxsize=65536)
def _canonical(latex: str) -> str:
    """The LaTeX math-verify would parse for ``\\boxed{latex}`` (its own normalisation), insignificant spaces dropped.

    Equal canonical forms are equal answers without parsing: ``$x$``, ``\\displaystyle x``, ``\\dfrac`` /
    ``\\frac``, ``\\left( \\right)``, units and ``\\$`` all normalise alike. Regular expressions over <= 300
    characters (about 0.1 ms).
    """
    from latex2sympy2_extended.latex2sympy2 import normalize_latex  # math-verify's own (pinned) dependency

    _math_verify()
    try:
        normalized = normalize_latex("\\boxed{" + latex + "}", config=_boxed_normalization())
    except Exception:  # noqa: BLE001 - a normaliser failure only loses the shortcut
        return latex
    return _SPACES.sub("", normalized)


@functools.lru_cache(maxsize=8192)
def _parse(latex: str) -> tuple[Any, ...]:
    """math-verify's reading of one screened answer or gold (sympy value first, then its string), cached."""
    mv = _math_verify()
    # Wrapped in \boxed{} so bare LaTeX ("\frac{1}{2}", "x \in [2, 5)") is found by the LaTeX extractor.
    return tuple(mv.parse("\\boxed{" + latex + "}", extraction_config=_latex_only(), parsing_timeout=None))


GOLD_ATTEMPTS = 3
"""A gold whose parse overran the deadline this many times is read no more (only the shortcuts can match it)."""
_gold_timeouts: dict[str, int] = {}  # only golds that overran: a handful


def _parsed_gold(gold: str, timeout_seconds: float) -> tuple[Any, ...] | None:
    """The parsed gold (cached), or None when it is screened out, overran its deadline, or gave up after retries."""
    if screen_problem(gold) is not None or _gold_timeouts.get(gold, 0) >= GOLD_ATTEMPTS:
        return None
    _math_verify()  # imported before any deadline is armed
    try:
        with _deadline(timeout_seconds):
            return _parse(gold)
    except _Deadline:
        # Retried (a cold start or a loaded machine can overrun once) but not forever: one slow gold must not
        # cost a deadline for every completion of the run.
        _gold_timeouts[gold] = _gold_timeouts.get(gold, 0) + 1
        return None


@functools.lru_cache(maxsize=65536)
def _verify(gold: str, answer: str) -> bool:
    """math-verify's verdict on a parsed gold (cached by ``_parse``) and answer; only completed verdicts are cached."""
    gold_value, answer_value = _parse(gold), _parse(answer)
    if not gold_value or not answer_value:
        return False
    return bool(_math_verify().verify(list(gold_value), list(answer_value), timeout_seconds=None))


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


def equivalent(answer: str, gold: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> bool:
    """Whether ``answer`` equals ``gold`` (both LaTeX): math-verify's verdict, with the shortcuts of step 4.

    >>> equivalent("0.5", r"\\frac{1}{2}"), equivalent("1/2", r"\\dfrac12"), equivalent("(1, 2]", "(1,2)")
    (True, True, False)
    """
    answer, gold = answer.strip(), gold.strip()
    if not answer or not gold:
        return False
    if answer == gold:
        return True
    if _PLAIN_INT.fullmatch(answer) and _PLAIN_INT.fullmatch(gold):
        return int(answer) == int(gold)  # what math-verify concludes too, without sympy
    if _simple_number(answer) is not None and _simple_number(answer) == _simple_number(gold):
        return True  # 0.75 = 3/4 = \frac{3}{4} exactly; unequal values still go to math-verify (it rounds floats)
    if screen_problem(answer) is not None:
        return False
    if _canonical(answer) == _canonical(gold):
        return True
    if _parsed_gold(gold, timeout_seconds) is None:  # the gold first, under a deadline of its own
        return False
    try:
        with _deadline(timeout_seconds):
            return _verify(gold, answer)
    except _Deadline:
        return False  # not cached: a timeout under load must not stick


def _gold_number(gold: str, timeout_seconds: float) -> Fraction | None:
    """The gold as an exact number (for the last-number rule), or None when it is not a plain number."""
    simple = _simple_number(gold.strip())
    if simple is not None:
        return simple
    import sympy

    for value in _parsed_gold(gold.strip(), timeout_seconds) or ():
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

    def score(_index: int, text: str, row: dict[str, Any]) -> float:
        found = extract(text)
        right = found.answer is not None and equivalent(found.answer, row["gold"], timeout_seconds=timeout_seconds)
        formats.append(float(found.formatted))
        answers.append(float(right))
        return 1.0 if found.formatted and right else 0.0

    log_metric = kwargs.get("log_metric")
    rewards = score_batch(
        "math_r1_zero_reward", completions, {"gold": gold}, lambda row: gold_problem(row["gold"]), score,
        log_metric=log_metric, malformed_metric=MALFORMED_ROWS_METRIC,
    )
    if callable(log_metric) and formats:
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

    def score(_index: int, text: str, row: dict[str, Any]) -> float:
        boxed = last_boxed(text)
        if boxed is not None:
            right = equivalent(boxed, row["gold"], timeout_seconds=timeout_seconds)
            return 1.1 if right else 0.1
        reward = 0.1 if has_box_opening(text) else 0.0
        number = last_number(text)
        if number is not None and number == _gold_number(row["gold"].strip(), timeout_seconds):
            reward += 0.1
        return round(reward, 1)  # 0.1 + 0.1 is 0.2, not 0.20000000000000001

    return score_batch(
        "math_shaped_reward", completions, {"gold": gold}, lambda row: gold_problem(row["gold"]), score,
        log_metric=kwargs.get("log_metric"), malformed_metric=MALFORMED_ROWS_METRIC,
    )


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
