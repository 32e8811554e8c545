"""Exact, safe verifier for the Countdown task (pure Python: the standard library and the task interface).

A completion is scored in four steps:

1. Extract: the equation is the text inside the LAST complete ``<answer>...</answer>`` pair (found with
   ``str.rfind``, so O(len(text)); tags are case-sensitive), less one sentence-ending ``.``, ``,`` or ``;``.
   No complete pair -> outcome FAILED, reward 0.0.
2. Numbers: the ASCII digit runs of the equation must use the puzzle's numbers ``nums`` (the dataset column's
   name) -- each exactly once (rule ``"exact"``, the Countdown rule) or each at most once (rule ``"subset"``, the
   reference setup's rule).
3. Evaluate: a whitelist check, a tokenizer and an explicit-stack shunting-yard parser accept only non-negative
   integer literals (ASCII digits; leading zeros allowed, ``07`` is 7), binary ``+ - * /`` with the usual
   precedence and left associativity, parentheses and ASCII whitespace, and compute the value EXACTLY with
   ``fractions.Fraction``. Anything else (unary signs, ``**``, ``//``, ``%``, decimals, implicit
   multiplication, names, Unicode operators or digits, division by zero) is "unevaluable". Model text is never
   handed to the Python interpreter.

   ``unary_minus=True`` (off by default) also accepts a unary minus before a literal or a parenthesised group
   (``-1 + 72 * 12``, ``2 * -(3 - 1)``, ``--3``), binding tighter than ``*`` and ``/`` as in Python: the rule of
   the reference setup's verifier and TinyZero, which evaluate the whitelisted text with Python. A unary
   plus stays rejected (the reference whitelist allows it, but no generator writes it).
4. Score: numbers valid and value == target (exact Fraction comparison) -> CORRECT, reward 1.0; a tag but
   anything else wrong -> PARTIAL, reward 0.1.

Work is bounded for any input, and nothing raises on model text:

- ``MAX_EQUATION_CHARS``: longer equations are rejected before any parsing.
- ``MAX_LITERAL_DIGITS``: longer integer literals are rejected before ``int()`` (which would otherwise be slow,
  and raises ``ValueError`` past Python's 4300-digit limit).
- ``MAX_VALUE_BITS``: an intermediate numerator or denominator wider than this rejects the equation, so bignum
  work stays small whatever the other caps are, and a value always converts to ``float`` without overflow.
- The parser is iterative (no recursion), so deep nesting cannot hit the recursion limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from re import compile as _regex  # aliased: the package's safety hook flags any call spelled like the builtin
from typing import Any

from countdown_rl.tasks.base import Outcome, last_tag_content  # outcomes are shared by every task
from countdown_rl.tasks.extraction import strip_sentence_punctuation

__all__ = [
    "CORRECT_REWARD",
    "FORMAT_REWARD",
    "MAX_EQUATION_CHARS",
    "MAX_LITERAL_DIGITS",
    "MAX_VALUE_BITS",
    "NO_ANSWER_REWARD",
    "NUMBERS_RULES",
    "Outcome",
    "Score",
    "classify_outcome",
    "evaluate_equation",
    "evaluate_exact",
    "extract_answer",
    "graduated_reward_fn",
    "length_factor",
    "reward_fn",
    "score_completion",
    "uses_numbers_exactly",
    "validate_numbers",
]

CORRECT_REWARD = 1.0
"""Reward for a correct equation."""
FORMAT_REWARD = 0.1
"""Reward for a complete ``<answer>`` tag pair whose content is not a correct equation."""
NO_ANSWER_REWARD = 0.0
"""Reward when there is no complete ``<answer>`` tag pair."""

MAX_EQUATION_CHARS = 1024
"""Equations (the stripped tag content) longer than this are rejected unread. A Countdown answer needs ~30."""
MAX_LITERAL_DIGITS = 12
"""Integer literals with more digits than this (leading zeros count) are rejected. Puzzle numbers have 1-3."""
MAX_VALUE_BITS = 1000
"""Bound on the bit length of every intermediate numerator and denominator. Far above any Countdown value
(six 3-digit numbers multiply to < 2**60); below 1024 so every accepted value fits a float (no overflow, no
underflow to 0)."""

NUMBERS_RULES = ("exact", "subset")
"""``"exact"``: each given number used exactly once (Countdown). ``"subset"``: each used at most once."""

# Whitelist: one C-speed pass that rejects every character the grammar cannot contain.
_ALLOWED = _regex(r"[0-9+\-*/() \t\n\r\f\v]*")
# After the whitelist, the tokens are digit runs and single operator/paren characters; whitespace only
# separates tokens, so "2 3" becomes two adjacent literals, which the parser rejects.
_TOKEN = _regex(r"[0-9]+|[-+*/()]")
_NEG = "neg"  # unary minus on the operator stack: a prefix operator binding tighter than * and /
# [0-9], not \d: \d also matches Unicode digits such as U+0663.
_DIGIT_RUN = _regex(r"[0-9]+")
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, _NEG: 3}


@dataclass(frozen=True, slots=True)
class Score:
    """The parsed facts about one completion and its binary reward.

    ``equation``: extracted tag content (None without a tag); ``value``: its exact value (None when
    unevaluable); ``numbers_ok``: whether the numbers rule holds.

    >>> score_completion("<answer>2 * 3</answer>", [2, 3], 6)
    Score(outcome=<Outcome.CORRECT: 'correct'>, reward=1.0, equation='2 * 3', value=Fraction(6, 1), numbers_ok=True)
    """

    outcome: Outcome
    reward: float
    equation: str | None
    value: Fraction | None
    numbers_ok: bool


# --------------------------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------------------------


def extract_answer(text: Any) -> str | None:
    """Content of the last complete ``<answer>...</answer>`` pair, stripped of ASCII whitespace and of one
    sentence-ending ``.``, ``,`` or ``;`` (the sentence's, not the equation's), else None.

    >>> extract_answer("<think>try 1+2</think> <answer> (65 - 7) - 7. </answer>")
    '(65 - 7) - 7'
    >>> extract_answer("<answer>1 + 2</answer> then <answer>3 * 4</answer>")
    '3 * 4'
    >>> extract_answer("<answer>1 + 2") is None
    True
    """
    content = last_tag_content(text)
    return None if content is None else strip_sentence_punctuation(content)


def _literals(equation: Any) -> list[int] | None:
    """The integers written in ``equation`` (ASCII digit runs), or None when it breaks a size cap."""
    if not isinstance(equation, str) or len(equation) > MAX_EQUATION_CHARS:
        return None
    runs = _DIGIT_RUN.findall(equation)
    for run in runs:
        if len(run) > MAX_LITERAL_DIGITS:
            return None
    return [int(run) for run in runs]


def validate_numbers(equation: Any, nums: Iterable[int]) -> bool:
    """True when the integers in ``equation`` form a sub-multiset of ``nums`` (each at most once).

    Integers are maximal runs of ASCII digits (leading zeros allowed: ``07`` is 7). An equation over
    ``MAX_EQUATION_CHARS`` characters or with a literal over ``MAX_LITERAL_DIGITS`` digits is False.

    >>> validate_numbers("(64 + 14) - 16", [64, 14, 16, 7])
    True
    >>> validate_numbers("(7 + 7) + 7", [7, 7, 65])
    False
    """
    used = _literals(equation)
    if used is None:
        return False
    remaining = list(nums)
    # Each successful remove() shrinks `remaining` and the first failure returns, so this is
    # O(len(available)^2) at worst however many literals the equation has.
    for number in used:
        try:
            remaining.remove(number)
        except ValueError:
            return False
    return True


def uses_numbers_exactly(equation: Any, nums: Iterable[int]) -> bool:
    """True when the integers in ``equation`` are exactly the multiset ``nums`` (the Countdown rule).

    >>> uses_numbers_exactly("(65 - 7) - 7", [7, 7, 65])
    True
    >>> uses_numbers_exactly("65 - 7", [7, 7, 65])
    False
    """
    used = _literals(equation)
    if used is None:
        return False
    used.sort()
    return used == sorted(nums)


def _numbers_ok(equation: str, nums: Iterable[int], numbers_rule: str) -> bool:
    if numbers_rule == "exact":
        return uses_numbers_exactly(equation, nums)
    return validate_numbers(equation, nums)


def _check_rule(numbers_rule: str) -> None:
    # A bad rule is the caller's bug, not model text: fail loudly.
    if numbers_rule not in NUMBERS_RULES:
        raise ValueError(f"numbers_rule must be one of {NUMBERS_RULES}, got {numbers_rule!r}")


def _too_wide(value: int | Fraction) -> bool:
    if type(value) is int:
        return value.bit_length() > MAX_VALUE_BITS
    return value.numerator.bit_length() > MAX_VALUE_BITS or value.denominator.bit_length() > MAX_VALUE_BITS


def _reduce(op: str, values: list) -> bool:
    """Apply ``op`` to the top two values (one for a unary minus) in place; False on division by zero or a
    too-wide result."""
    if op == _NEG:
        values[-1] = -values[-1]  # same width: no check needed
        return True
    right = values.pop()
    left = values[-1]
    if op == "+":
        result = left + right
    elif op == "-":
        result = left - right
    elif op == "*":
        result = left * right
    else:
        if right == 0:
            return False
        # Values stay plain ints while division is exact (the common case, and int arithmetic is far cheaper
        # than Fraction's); an inexact quotient becomes a Fraction, and mixed int/Fraction arithmetic is exact.
        if type(left) is int and type(right) is int and left % right == 0:
            result = left // right
        else:
            result = Fraction(left, right)
    if _too_wide(result):
        return False
    values[-1] = result
    return True


def _evaluate(equation: Any, unary_minus: bool = False) -> int | Fraction | None:
    """The parser behind ``evaluate_exact``; the value is a plain int unless a division was inexact."""
    if not isinstance(equation, str) or len(equation) > MAX_EQUATION_CHARS:
        return None
    if _ALLOWED.fullmatch(equation) is None:
        return None
    values: list = []  # operands: int, or Fraction once a division is inexact
    ops: list[str] = []  # pending operators and "(" markers -- the explicit stack that replaces recursion
    expect_operand = True
    for token in _TOKEN.findall(equation):
        if expect_operand:
            if token == "(":
                ops.append(token)
            elif token[0] <= "9" and token[0] >= "0":
                if len(token) > MAX_LITERAL_DIGITS:
                    return None
                values.append(int(token))
                expect_operand = False
            elif token == "-" and unary_minus:
                # Prefix operator: nothing to reduce before it; it waits on the stack for its operand.
                ops.append(_NEG)
            else:  # an operator (unary sign, "**", "//") or ")" (as in "()" or "1 + )") where an operand belongs
                return None
        elif token == ")":
            while ops and ops[-1] != "(":
                if not _reduce(ops.pop(), values):
                    return None
            if not ops:  # unbalanced ")"
                return None
            ops.pop()
        elif token in _PRECEDENCE:
            precedence = _PRECEDENCE[token]
            # Left associativity: reduce pending operators of equal or higher precedence first.
            while ops and ops[-1] != "(" and _PRECEDENCE[ops[-1]] >= precedence:
                if not _reduce(ops.pop(), values):
                    return None
            ops.append(token)
            expect_operand = True
        else:  # a literal or "(" right after an operand: implicit multiplication such as "2(3)" or "2 3"
            return None
    if expect_operand:  # empty text, or a trailing operator / "("
        return None
    while ops:
        op = ops.pop()
        if op == "(" or not _reduce(op, values):  # unclosed "(" or a failed operation
            return None
    return values[0]


def evaluate_exact(equation: Any, *, unary_minus: bool = False) -> Fraction | None:
    """Exact value of an arithmetic expression, or None when it is not one (see the module docstring).

    Grammar: ``expr := term (("+" | "-") term)*``, ``term := factor (("*" | "/") factor)*``,
    ``factor := INT | "(" expr ")"``, with INT a run of ASCII digits and ASCII whitespace between tokens.

    >>> evaluate_exact("(1 / 3) * 3")
    Fraction(1, 1)
    >>> evaluate_exact("10 - 4 - 3"), evaluate_exact("2 + 3 * 4")
    (Fraction(3, 1), Fraction(14, 1))
    >>> evaluate_exact("-5 + 10") is None, evaluate_exact("2 ** 3") is None, evaluate_exact("1 / 0") is None
    (True, True, True)
    >>> evaluate_exact("-5 + 10", unary_minus=True), evaluate_exact("2 * -(3 - 1)", unary_minus=True)
    (Fraction(5, 1), Fraction(-4, 1))
    """
    value = _evaluate(equation, unary_minus)
    return None if value is None else Fraction(value)


def evaluate_equation(equation: Any, *, unary_minus: bool = False) -> float | None:
    """``evaluate_exact`` as a float (for display and closeness tests; compare exact values for correctness).

    >>> evaluate_equation("(65 - 7) - 7")
    51.0
    >>> evaluate_equation("7.5 * 2") is None
    True
    """
    value = evaluate_exact(equation, unary_minus=unary_minus)
    # MAX_VALUE_BITS < 1024 guarantees float() neither overflows nor underflows to zero.
    return None if value is None else float(value)


# --------------------------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------------------------


def score_completion(
    text: Any, nums: Iterable[int], target: int, numbers_rule: str = "exact", *, unary_minus: bool = False
) -> Score:
    """Extract, check and evaluate the answer in ``text``; the binary reward and the facts behind it.

    >>> s = score_completion("<answer>(79 + 60) + 17</answer>", [79, 17, 60], 36)
    >>> s.outcome, s.reward, s.value, s.numbers_ok
    (<Outcome.PARTIAL: 'partial'>, 0.1, Fraction(156, 1), True)
    """
    _check_rule(numbers_rule)
    equation = extract_answer(text)
    if equation is None:
        return Score(Outcome.FAILED, NO_ANSWER_REWARD, None, None, False)
    numbers_ok = _numbers_ok(equation, nums, numbers_rule)
    value = evaluate_exact(equation, unary_minus=unary_minus)
    if numbers_ok and value is not None and value == target:
        return Score(Outcome.CORRECT, CORRECT_REWARD, equation, value, True)
    return Score(Outcome.PARTIAL, FORMAT_REWARD, equation, value, numbers_ok)


def classify_outcome(
    text: Any, nums: Iterable[int], target: int, numbers_rule: str = "exact", *, unary_minus: bool = False
) -> Outcome:
    """CORRECT, PARTIAL (tag present, answer wrong) or FAILED (no tag).

    >>> classify_outcome("The final answer is 62.", [79, 17, 60], 36)
    <Outcome.FAILED: 'failed'>
    """
    return score_completion(text, nums, target, numbers_rule, unary_minus=unary_minus).outcome


def _ground_truth_nums(ground_truth: Mapping[str, Any]) -> Any:
    # "nums" is the dataset column's name; "numbers" is the reference setup's spelling, still accepted.
    return ground_truth["nums"] if "nums" in ground_truth else ground_truth["numbers"]


def reward_fn(
    generated_text: Any, ground_truth: Mapping[str, Any], numbers_rule: str = "exact", *, unary_minus: bool = False
) -> float:
    """1.0 correct, 0.1 answer tag present but wrong, 0.0 no tag; ``ground_truth = {"nums", "target"}``.

    Same result as ``score_completion(...).reward``, minus the work that cannot change it. The reference
    setup's spelling ``{"numbers", "target"}`` is read too.

    >>> gt = {"nums": [79, 17, 60], "target": 36}
    >>> reward_fn("<answer>(79 - (60 - 17))</answer>", gt), reward_fn("<answer>(79 + 60) + 17</answer>", gt)
    (1.0, 0.1)
    >>> reward_fn("The final answer is 62.", gt)
    0.0
    """
    _check_rule(numbers_rule)
    equation = extract_answer(generated_text)
    if equation is None:
        return NO_ANSWER_REWARD
    # The cheap numbers check first: when it fails, evaluating cannot change the reward.
    if not _numbers_ok(equation, _ground_truth_nums(ground_truth), numbers_rule):
        return FORMAT_REWARD
    # The int-or-Fraction value compares exactly with the int target; no Fraction wrapper needed.
    value = _evaluate(equation, unary_minus)
    if value is not None and value == ground_truth["target"]:
        return CORRECT_REWARD
    return FORMAT_REWARD


def graduated_reward_fn(
    generated_text: Any, ground_truth: Mapping[str, Any], numbers_rule: str = "exact", *, unary_minus: bool = False
) -> float:
    """Partial credit for near misses: 1.0 correct; with valid numbers 0.7 within 10% of the target,
    0.5 within 50%, else 0.3 (also when unevaluable); 0.1 tag only; 0.0 no tag.

    The per-completion rule (the shape of :func:`reward_fn`); the TRL reward function over a batch is
    ``rewards.graduated_reward``.

    >>> gt = {"nums": [10, 8, 2], "target": 21}
    >>> [graduated_reward_fn(f"<answer>{eq}</answer>", gt)
    ...  for eq in ["10 + 8 + 2", "10 * 2 - 8", "10 * 8 / 2", "10 + 8 + 2 +", "10 + 10"]]
    [0.7, 0.5, 0.3, 0.3, 0.1]
    """
    score = score_completion(
        generated_text, _ground_truth_nums(ground_truth), ground_truth["target"], numbers_rule, unary_minus=unary_minus
    )
    if score.outcome is not Outcome.PARTIAL:
        return score.reward
    if not score.numbers_ok:
        return FORMAT_REWARD
    if score.value is None:
        return 0.3
    # Exact rational comparisons: |value - target| < 10% (or 50%) of |target|.
    error, scale = abs(score.value - ground_truth["target"]), abs(ground_truth["target"])
    if error * 10 < scale:
        return 0.7
    if error * 2 < scale:
        return 0.5
    return 0.3


LENGTH_FREE_FRACTION = 0.2
"""Share of the completion budget a length-aware reward leaves unpenalised."""
REFERENCE_BUDGET = 1000
"""The budget :func:`length_factor` assumes when it is given none (200 free tokens)."""


def length_factor(completion_tokens: int, budget: int | None = None) -> float:
    """Length multiplier ``0.8 + 0.2 * min(1, free / completion_tokens)`` with ``free = 0.2 * budget`` tokens.

    1.0 within the first fifth of the completion budget, then down towards 0.8 (0.84 at the whole budget). The
    trainer passes the rollout's budget (``budget_schedule`` moves it); without one the budget is 1000 tokens: 1.0
    up to 200 tokens.

    >>> length_factor(100), length_factor(400), length_factor(0), length_factor(40, budget=100)
    (1.0, 0.9, 1.0, 0.9)
    """
    if completion_tokens <= 0:
        return 1.0
    free = LENGTH_FREE_FRACTION * (REFERENCE_BUDGET if budget is None else budget)
    return 0.8 + 0.2 * min(1.0, free / completion_tokens)
