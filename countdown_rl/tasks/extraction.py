"""Answer extraction shared by the tasks: boxes, trailing punctuation, numbers, plain arithmetic (no sympy, no eval).

One module, so a fix to a rule is made once. Every reader does bounded work on any text (linear scans, capped
lengths before ``int()``) and never executes model text.

1. Boxes (:func:`last_box`): the LAST ``\\boxed{...}`` / ``\\fbox{...}`` (also MATH's brace-less ``\\boxed 5``),
   braces matched in one left-to-right scan (``\\{`` and ``\\}`` are literal braces), content longer than
   ``MAX_BOXED_SCAN`` characters counts as unclosed. The last box decides even when it never closes.
2. Tags: :func:`countdown_rl.tasks.base.last_tag_content` (the last complete ``<answer>`` pair), re-exported.
3. Sentence punctuation (:func:`strip_sentence_punctuation`): one trailing ``.``, ``,`` or ``;`` after an answer,
   before or after a closing ``$``, is the sentence's, not the answer's (``5.``, ``$\\frac23$.``, ``(1,2).``).
4. Numbers (:func:`parse_number`): one number, read exactly with ``fractions.Fraction``; commas only as thousands
   separators (``1,200``; ``0,111`` and ``1,22`` are unreadable). :func:`last_number_text` finds the last number
   token of a text.
5. Plain arithmetic (:func:`evaluate_arithmetic`): numbers, ``+ - * /`` (also ``\\times``, ``\\cdot``, ``\\div``,
   ``×``, ``÷``) and parentheses, evaluated exactly by an explicit-stack parser; anything else (a root, a power, a
   factorial, a name) is unreadable.
"""

from __future__ import annotations

from collections import deque
from fractions import Fraction
from re import compile as _regex  # aliased: the package's safety hook flags any call spelled like the builtin
from typing import Any

from countdown_rl.tasks.base import ASCII_WHITESPACE, last_tag_content

__all__ = [
    "BOX_COMMANDS",
    "MAX_ARITHMETIC_TOKENS",
    "MAX_BOXED_SCAN",
    "MAX_CANDIDATE_CHARS",
    "MAX_NUMBER_DIGITS",
    "NUMBER_TOKEN",
    "canonical_number_text",
    "evaluate_arithmetic",
    "has_box_opening",
    "last_box",
    "last_boxed",
    "last_match",
    "last_number",
    "last_number_text",
    "last_tag_content",
    "parse_number",
    "strip_sentence_punctuation",
]

BOX_COMMANDS = ("\\boxed", "\\fbox")
MAX_BOXED_SCAN = 1000
"""Characters read after a box's ``{`` for its closing brace; unclosed by then -> the box never closes."""
MAX_CANDIDATE_CHARS = 64
"""A number or arithmetic candidate longer than this (stripped) is unreadable."""
MAX_NUMBER_DIGITS = 24
"""A number with more digits than this is unreadable (checked before ``int()``)."""
MAX_ARITHMETIC_TOKENS = 40
"""Plain arithmetic with more tokens than this is unreadable (bounded bignum work: at most ~20 products)."""

_WS = ASCII_WHITESPACE
_PUNCTUATION = (".", ",", ";")

# --------------------------------------------------------------------------------------------------------------
# Boxes
# --------------------------------------------------------------------------------------------------------------


def _closing_brace(text: str, open_index: int) -> int | None:
    """Index of the ``}`` closing the ``{`` at ``open_index`` within ``MAX_BOXED_SCAN`` characters, or None."""
    depth = 0
    i, end = open_index, min(len(text), open_index + 1 + MAX_BOXED_SCAN + 1)
    while i < end:
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
    if i < j < len(text) and command == "\\boxed":
        # MATH's few "\boxed 5" answers: the token up to whitespace or the closing $.
        k = j
        while k < len(text) and not text[k].isspace() and text[k] != "$":
            k += 1
        if k > j:
            return text[j:k], True
    return None, False


def last_box(text: str) -> tuple[bool, str | None]:
    """(whether the text has a box, the last box's content or None when it never closes).

    >>> last_box(r"\\boxed{1} then \\fbox{\\frac{3}{4}}"), last_box(r"\\boxed{1} and \\boxed{2")
    ((True, '\\\\frac{3}{4}'), (True, None))
    """
    # The last occurrence of each command; a look-alike (\boxedx, a bare \boxed) moves only its own search left,
    # so each command's text is scanned once in all: O(len(text)) even for 20,000 bare "\boxed"s.
    found = {command: text.rfind(command) for command in BOX_COMMANDS}
    while True:
        command = max(found, key=found.__getitem__)
        start = found[command]
        if start < 0:
            return False, None
        content, is_box = _box_at(text, start, command)
        if is_box:
            return True, content  # the last box decides, even when it never closes (a truncated answer)
        found[command] = text.rfind(command, 0, start)


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` or ``\\fbox{...}`` (braces matched), or None when missing or unclosed.

    >>> last_boxed(r"so $\\boxed{\\frac{3}{4}}$, not \\boxed{1}... \\boxed{\\{1, 2\\}}")
    '\\\\{1, 2\\\\}'
    >>> last_boxed(r"\\boxed{\\frac{1}{2}") is None
    True
    """
    return last_box(text)[1]


def has_box_opening(text: str) -> bool:
    """Whether the text writes ``\\boxed{`` or ``\\fbox{`` (closed or not).

    >>> has_box_opening(r"\\boxed{12"), has_box_opening("boxed{12}")
    (True, False)
    """
    return "\\boxed{" in text or "\\fbox{" in text


# --------------------------------------------------------------------------------------------------------------
# Punctuation
# --------------------------------------------------------------------------------------------------------------


def _ends_with_punctuation(text: str) -> bool:
    # "\," and "\;" are LaTeX spaces, not punctuation; "..." is an ellipsis, not a full stop.
    return text.endswith(_PUNCTUATION) and not text.endswith(("\\.", "\\,", "\\;", ".."))


def strip_sentence_punctuation(text: str) -> str:
    """``text`` stripped of ASCII whitespace and of one sentence-ending ``.``, ``,`` or ``;`` (also inside ``$``).

    >>> [strip_sentence_punctuation(t) for t in ["5.", " $5$. ", "$2/3.$", "(1,2).", "1, 2, \\\\ldots", "5\\\\,"]]
    ['5', '$5$', '$2/3$', '(1,2)', '1, 2, \\\\ldots', '5\\\\,']
    """
    s = text.strip(_WS)
    if _ends_with_punctuation(s):
        return s[:-1].rstrip(_WS)
    if s.endswith("$") and len(s) > 2:
        inner = s[:-1].rstrip(_WS)
        if _ends_with_punctuation(inner):
            return inner[:-1].rstrip(_WS) + "$"
    return s


# --------------------------------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------------------------------

# [0-9], never \d: \d also matches Unicode digits such as U+0663.
# An integer part: digits with commas only as thousands separators ("1,200"; not "1,00", not "0,111").
_PLAIN = _regex(r"(?P<int>[1-9][0-9]{0,2}(?:,[0-9]{3})+|[0-9]*)(?:\.(?P<frac>[0-9]*))?")
_LATEX_FRAC = _regex(r"(-?)\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}")
NUMBER_TOKEN = _regex(r"(?:(?<![0-9A-Za-z)])-)?\$?[0-9](?:[0-9]|,(?=[0-9]))*(?:\.[0-9]+)?(?:/[0-9]+)?%?")
"""A number in running text: an optional sign (not right after a digit or letter, so "10-3" is not "-3") and "$",
digits with inner commas, decimals, a "/denominator" and "%". Every part is a simple loop: linear time."""


def _plain(text: str) -> Fraction | None:
    """An unsigned decimal ("1,200", "18.00", ".5", "007") as an exact Fraction, else None."""
    match = _PLAIN.fullmatch(text)
    if match is None:
        return None
    whole, frac = match["int"].replace(",", ""), match["frac"] or ""
    if not whole and not frac:
        return None
    if len(whole) + len(frac) > MAX_NUMBER_DIGITS:  # before int(): bounded bignum work
        return None
    value = Fraction(int(whole or "0"))
    if frac:
        value += Fraction(int(frac), 10 ** len(frac))
    return value


def _unwrap(text: str) -> str:
    """Strip one layer of ``\\boxed{...}``, ``$...$``, ``\\(...\\)`` or ``\\[...\\]`` around the whole text."""
    for start, end in (("\\boxed{", "}"), ("\\(", "\\)"), ("\\[", "\\]"), ("$", "$")):
        if len(text) > len(start) + len(end) - 1 and text.startswith(start) and text.endswith(end):
            if start == "$" and len(text) < 3:
                continue
            return text[len(start) : len(text) - len(end)].strip(_WS)
    return text


def parse_number(text: Any) -> Fraction | None:
    """The exact value of ``text`` when it is one number, else None.

    Accepted, in this order: ASCII whitespace and one sentence-ending ``.``, ``,`` or ``;`` around it; one
    wrapper ``\\boxed{}``, ``$ $``, ``\\( \\)`` or ``\\[ \\]``; LaTeX ``\\$``, ``\\%``, ``{,}`` and ``\\,``;
    ``\\frac{a}{b}`` (also ``\\dfrac``, ``\\tfrac``); a leading ``-`` and ``$`` in either order; a trailing ``%``
    (the number of percent: "25%" reads as 25); commas only as thousands separators; decimals (``18.00`` is 18);
    ``a/b`` with integer parts and ``b != 0``. Rejected: other text (units, words), Unicode digits or signs, a
    leading ``+``, spaces inside the number, a comma that is no thousands separator, more than
    ``MAX_CANDIDATE_CHARS`` characters or ``MAX_NUMBER_DIGITS`` digits.

    >>> parse_number("1,200"), parse_number("$18.00"), parse_number("3/4") == parse_number("0.75")
    (Fraction(1200, 1), Fraction(18, 1), True)
    >>> parse_number("-3"), parse_number("\\\\boxed{\\\\frac{1}{2}}"), parse_number("25%")
    (Fraction(-3, 1), Fraction(1, 2), Fraction(25, 1))
    >>> parse_number("1,00") is None, parse_number("0,111") is None, parse_number("18 apples") is None
    (True, True, True)
    """
    if not isinstance(text, str) or len(text) > MAX_CANDIDATE_CHARS:
        return None
    s = strip_sentence_punctuation(_unwrap(strip_sentence_punctuation(text)))
    s = s.replace("\\$", "$").replace("\\%", "%").replace("{,}", ",").replace("\\,", ",")
    frac = _LATEX_FRAC.fullmatch(s)
    if frac is not None:
        s = f"{frac[1]}{frac[2].strip(_WS)}/{frac[3].strip(_WS)}"
    negative = False
    if s.startswith("-"):
        negative, s = True, s[1:]
    if s.startswith("$"):
        s = s[1:]
        if s.startswith("-") and not negative:  # "$-18"
            negative, s = True, s[1:]
    if s.endswith("%"):
        s = s[:-1]
    if "/" in s:
        numerator, _, denominator = s.partition("/")
        top, bottom = _plain(numerator), _plain(denominator)
        # Integer parts only: "1.5/3" is not how anyone writes a fraction, and "0" cannot divide.
        if top is None or bottom is None or "." in s or bottom == 0:
            return None
        value = top / bottom
    else:
        value = _plain(s)
        if value is None:
            return None
    return -value if negative else value


def canonical_number_text(value: Fraction | int) -> str:
    """The canonical text of a number: an integer as digits, else ``p/q`` (lowest terms).

    >>> canonical_number_text(Fraction(1200)), canonical_number_text(Fraction(5, 2)), canonical_number_text(-3)
    ('1200', '5/2', '-3')
    """
    value = Fraction(value)
    return str(value.numerator) if value.denominator == 1 else str(value)


def last_match(pattern: Any, text: str) -> Any:
    """The last match of ``pattern`` in ``text`` (one linear scan, keeping only the latest match), or None."""
    tail = deque(pattern.finditer(text), maxlen=1)
    return tail[0] if tail else None


def last_number_text(text: str) -> str | None:
    """The last number token of ``text`` (:data:`NUMBER_TOKEN`), or None.

    >>> last_number_text("5 - 3 = 2 and $1,200, then"), last_number_text("from 10-3")
    ('$1,200', '3')
    """
    last = last_match(NUMBER_TOKEN, text)
    return None if last is None else last[0]


def last_number(text: str) -> Fraction | None:
    """The value of the last number token of ``text`` (None when there is none or it is unreadable).

    >>> last_number("x = 3, so 2x - 7 = -1.5 and 1,000 more"), last_number("no digits"), last_number("0,111")
    (Fraction(1000, 1), None, None)
    """
    token = last_number_text(text)
    return None if token is None else parse_number(token)


# --------------------------------------------------------------------------------------------------------------
# Plain arithmetic
# --------------------------------------------------------------------------------------------------------------

_ARITHMETIC_TOKEN = _regex(
    r"\s*(?:(?P<number>\\?\$?(?:[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?|\.[0-9]+)%?)"
    r"|(?P<op>[-+*/×÷()]|\\times|\\cdot|\\div))"
)
_OPS = {"+": "+", "-": "-", "*": "*", "/": "/", "×": "*", "÷": "/", "\\times": "*", "\\cdot": "*", "\\div": "/"}
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "neg": 3}


def _tokens(text: str) -> list[tuple[str, Any]] | None:
    tokens: list[tuple[str, Any]] = []
    i, n = 0, len(text)
    while i < n:
        match = _ARITHMETIC_TOKEN.match(text, i)
        if match is None or match.end() == i:
            if text[i:].strip(_WS) == "":
                break
            return None
        if match["number"] is not None:
            value = parse_number(match["number"])
            if value is None:
                return None
            tokens.append(("num", value))
        else:
            op = match["op"]
            tokens.append(("paren", op) if op in "()" else ("op", _OPS[op]))
        if len(tokens) > MAX_ARITHMETIC_TOKENS:
            return None
        i = match.end()
    return tokens


def _apply(values: list[Fraction], op: str) -> bool:
    if op == "neg":
        if not values:
            return False
        values.append(-values.pop())
        return True
    if len(values) < 2:
        return False
    right, left = values.pop(), values.pop()
    if op == "/" and right == 0:
        return False
    values.append({"+": left + right, "-": left - right, "*": left * right}.get(op) if op != "/" else left / right)
    return True


def evaluate_arithmetic(text: Any) -> Fraction | None:
    """The exact value of plain arithmetic (numbers, ``+ - * /`` and their LaTeX forms, parentheses), else None.

    A shunting-yard parser with explicit stacks; a minus at the start, after an operator or after ``(`` is a sign.
    Anything that is not in that grammar (``\\sqrt``, ``^``, ``!``, names, ``=``) makes the text unreadable.

    >>> evaluate_arithmetic("300 + 120 + 60"), evaluate_arithmetic("2 \\\\times (3 - 1) / 8"), evaluate_arithmetic("-3+5")
    (Fraction(480, 1), Fraction(1, 2), Fraction(2, 1))
    >>> evaluate_arithmetic("\\\\sqrt{16}") is None, evaluate_arithmetic("2^{10}") is None, evaluate_arithmetic("4/0")
    (True, True, None)
    """
    if not isinstance(text, str) or len(text) > MAX_CANDIDATE_CHARS:
        return None
    tokens = _tokens(strip_sentence_punctuation(_unwrap(strip_sentence_punctuation(text))))
    if not tokens:
        return None
    values: list[Fraction] = []
    ops: list[str] = []
    expect_operand = True
    for kind, token in tokens:
        if kind == "num":
            if not expect_operand:
                return None  # two numbers side by side ("2 3"): not arithmetic
            values.append(token)
            expect_operand = False
        elif kind == "paren" and token == "(":
            if not expect_operand:
                return None  # implicit multiplication is not plain arithmetic
            ops.append("(")
        elif kind == "paren":
            if expect_operand:
                return None
            while ops and ops[-1] != "(":
                if not _apply(values, ops.pop()):
                    return None
            if not ops:
                return None
            ops.pop()
        elif expect_operand:
            if token != "-":
                return None
            ops.append("neg")
        else:
            while ops and ops[-1] != "(" and _PRECEDENCE[ops[-1]] >= _PRECEDENCE[token]:
                if not _apply(values, ops.pop()):
                    return None
            ops.append(token)
            expect_operand = True
    if expect_operand:
        return None
    while ops:
        op = ops.pop()
        if op == "(" or not _apply(values, op):
            return None
    return values[0] if len(values) == 1 else None
