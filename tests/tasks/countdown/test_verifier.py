"""The Countdown verifier: extraction, the numbers rules, exact evaluation, adversarial input, scoring."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from countdown_rl.tasks.countdown import verifier
from countdown_rl.tasks.countdown.verifier import (
    CORRECT_REWARD,
    FORMAT_REWARD,
    NO_ANSWER_REWARD,
    Outcome,
    Score,
    classify_outcome,
    evaluate_equation,
    evaluate_exact,
    extract_answer,
    graduated_reward_fn,
    length_factor,
    reward_fn,
    score_completion,
    uses_numbers_exactly,
    validate_numbers,
)
from tests.helpers.trl_calls import timed

# Loose on purpose: these only catch super-linear blow-ups (seconds to hours), not measure speed.
SLOW_SECONDS = 5.0



# ---------------------------------------------------------------------------------------------- extraction


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer>(65 - 7) - 7</answer>", "(65 - 7) - 7"),
        ("<think>hmm</think>\n<answer>  1 + 2 \n</answer>", "1 + 2"),
        ("<answer>1 + 2</answer> no wait <answer>3 * 4</answer> done", "3 * 4"),
        ("<answer>(1 +\n2) *\n3</answer>", "(1 +\n2) *\n3"),  # spans lines
        ("<answer>1 + 2</answer> and then <answer>3 *", "1 + 2"),  # trailing tag never closed
        ("<answer>x <answer>1 + 2</answer>", "1 + 2"),  # the opening tag nearest the last close wins
        ("<answer></answer>", ""),
        ("<answer>\u00a01 + 2</answer>", "\u00a01 + 2"),  # only ASCII whitespace is stripped
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The final answer is 62.",
        "<answer>1 + 2",
        "1 + 2</answer>",
        "</answer>1 + 2<answer>",  # a close before any open is not a pair
        "<Answer>1 + 2</Answer>",  # tags are case-sensitive
        "<answer>1 + 2</answer",
        "",
        None,
        42,
        b"<answer>1</answer>",
        ["<answer>1</answer>"],
    ],
)
def test_extract_answer_none(text):
    assert extract_answer(text) is None


def test_extract_answer_is_linear_on_pathological_tag_soup():
    # A lazy regex scanning for a closing tag after each opening tag is quadratic here.
    for text in ("<answer>" * 200_000, "</answer>" * 200_000 + "x", "<answer>" * 100_000 + "</answer>"):
        result, seconds = timed(extract_answer, text)
        assert seconds < SLOW_SECONDS
    assert extract_answer("<answer>" * 200_000) is None
    assert extract_answer("<answer>" * 100_000 + "</answer>") == ""


# ------------------------------------------------------------------------------------------------- numbers


def test_validate_numbers_examples():
    assert validate_numbers("(64 + 14) - 16", [64, 14, 16, 7]) is True
    assert validate_numbers("(7 + 7) + 7", [7, 7, 65]) is False
    assert validate_numbers("10 + 9", [10, 8, 2]) is False


@pytest.mark.parametrize(
    ("equation", "numbers", "subset", "exact"),
    [
        ("(65 - 7) - 7", [7, 7, 65], True, True),
        ("65 - 7", [7, 7, 65], True, False),
        ("7 + 65", [65, 7], True, True),  # order does not matter
        ("07 + 65", [7, 65], True, True),  # a leading zero does not change the integer
        ("7 + 7 + 65", [7, 65], False, False),
        ("", [7], True, False),  # no integers: the empty multiset
        ("7.5", [7, 5], True, True),  # digit runs only; evaluation rejects the decimal point
        ("\u0663 + 7", [3, 7], True, False),  # U+0663 (Arabic-Indic three) is not an ASCII digit: 3 unused
        ("\u0663 + 7", [7], True, True),
        ("\uff17 + 65", [7, 65], True, False),  # fullwidth 7 does not count as 7
    ],
)
def test_numbers_rules(equation, numbers, subset, exact):
    assert validate_numbers(equation, numbers) is subset
    assert uses_numbers_exactly(equation, numbers) is exact


def test_numbers_rules_respect_size_caps():
    too_long = "7 + 65" + " " * verifier.MAX_EQUATION_CHARS
    assert not validate_numbers(too_long, [7, 65]) and not uses_numbers_exactly(too_long, [7, 65])
    big = "1" * (verifier.MAX_LITERAL_DIGITS + 1)
    assert not validate_numbers(big, [int(big)]) and not uses_numbers_exactly(big, [int(big)])
    # A 10,000-digit run must be rejected before int(), which raises ValueError past 4300 digits.
    assert validate_numbers("9" * 10_000, [7]) is False
    assert validate_numbers(42, [42]) is False and uses_numbers_exactly(None, []) is False


# ---------------------------------------------------------------------------------------------- evaluation


@pytest.mark.parametrize(
    ("equation", "expected"),
    [
        ("(65 - 7) - 7", Fraction(51)),
        ("65 - 7 - 7", Fraction(51)),  # left associative: (65 - 7) - 7, not 65 - (7 - 7)
        ("64 / 8 / 2", Fraction(4)),
        ("2 + 3 * 4", Fraction(14)),  # * binds tighter than +
        ("2 * 3 + 4", Fraction(10)),
        ("(2 + 3) * 4", Fraction(20)),
        ("10 - 2 * 3 - 1", Fraction(3)),
        ("8 - 6 / 3 * 2", Fraction(4)),
        ("1 / 3", Fraction(1, 3)),
        ("(1 / 3) * 3", Fraction(1)),  # exact: no 0.999...
        ("1 / 3 + 1 / 6", Fraction(1, 2)),
        ("2 / 4 / 5 * 10", Fraction(1)),
        ("3 - 10", Fraction(-7)),  # negative results are fine; only unary signs are not
        ("0 * 5", Fraction(0)),
        ("007", Fraction(7)),
        ("((((7))))", Fraction(7)),
        ("\t1\n+\r2\f*\v3 ", Fraction(7)),  # any ASCII whitespace between tokens
        ("12+34", Fraction(46)),
        ("999999999999 * 999999999999", Fraction(999999999999**2)),
    ],
)
def test_evaluate_exact(equation, expected):
    assert evaluate_exact(equation) == expected
    assert isinstance(evaluate_exact(equation), Fraction)
    assert evaluate_equation(equation) == float(expected)


def test_evaluate_equation_example():
    assert evaluate_equation("(65 - 7) - 7") == 51.0
    assert isinstance(evaluate_equation("1 + 1"), float)


ADVERSARIAL_EQUATIONS = [
    # unary signs
    "-5 + 10",
    "+5",
    "5 + -3",
    "5 - -3",
    "--5",
    "-(7 - 65) - 7",
    "5 * +3",
    # other Python operators and syntax
    "2 ** 3",
    "8 // 2",
    "8 % 3",
    "1 + 2 = 3",
    "1 == 1",
    "1 < 2",
    "1 ^ 2",
    "1 & 3",
    "~1",
    "1e3",
    "0x10",
    "1_000",
    "1,2",
    "1; 2",
    "[1]",
    "{1}",
    "1 if 1 else 2",
    "lambda: 1",
    # decimals
    "7.5",
    "7.",
    ".5",
    "7.5 * 2",
    # implicit multiplication
    "2(3 + 4)",
    "(2)(3)",
    "2 3",
    "(1 + 2)3",
    "(1 + 2) (3 + 4)",
    # Unicode operators, digits, spaces, brackets
    "2 \u00d7 3",  # ×
    "6 \u00f7 2",  # ÷
    "7 \u2212 2",  # − (minus sign)
    "2 \u22c5 3",  # ⋅
    "\u0663 + 1",  # Arabic-Indic digit three
    "\uff11 + 2",  # fullwidth digit one
    "\uff081 + 2\uff09",  # fullwidth parentheses
    "1\u00a0+ 2",  # no-break space
    "1\u2003+ 2",  # em space
    "1 + 2\x00",
    # names and calls
    "x + 1",
    "abs(5)",
    "__import__('os')",
    "__import__('os').system('echo pwned')",
    "().__class__",
    "True + 1",
    "nan",
    "inf",
    # structure
    "",
    "   ",
    "()",
    "(1 + 2",
    "1 + 2)",
    ")1(",
    "1 +",
    "* 1",
    "1 + + 2",
    "(+)",
    "1 + ()",
    # division by zero, also after exact simplification
    "1 / 0",
    "1 / (2 - 2)",
    "0 / 0",
    "5 / (1 / 3 - 1 / 3)",
]


@pytest.mark.parametrize("equation", ADVERSARIAL_EQUATIONS)
def test_adversarial_equations_are_unevaluable(equation):
    assert evaluate_exact(equation) is None
    assert evaluate_equation(equation) is None


@pytest.mark.parametrize("equation", [None, 51, 51.0, b"1 + 2", ["1 + 2"], Fraction(1)])
def test_non_str_is_unevaluable(equation):
    assert evaluate_exact(equation) is None and evaluate_equation(equation) is None


HUGE_INPUTS = {
    "10k nested parentheses": "(" * 10_000 + "1" + ")" * 10_000,
    "10k-digit literal": "9" * 10_000,
    "5k operators": "1+" * 5_000 + "1",
    "1 MB garbage": "x(+" * 350_000,
    "1 MB of digits and ops": "12345678 * " * 100_000,
    "unbalanced 100k open": "(" * 100_000,
}


@pytest.mark.parametrize("name", list(HUGE_INPUTS))
def test_huge_inputs_return_none_promptly(name):
    text = HUGE_INPUTS[name]
    for fn in (evaluate_exact, evaluate_equation):
        result, seconds = timed(fn, text)
        assert result is None
        assert seconds < SLOW_SECONDS
    reward, seconds = timed(reward_fn, f"<answer>{text}</answer>", {"nums": [1], "target": 1})
    assert reward == FORMAT_REWARD and seconds < SLOW_SECONDS


def test_parser_is_iterative_beyond_the_length_cap(monkeypatch):
    # Lift the length cap to show that the parser itself survives what the cap normally keeps out.
    monkeypatch.setattr(verifier, "MAX_EQUATION_CHARS", 10**7)
    depth = 10 * sys.getrecursionlimit()
    assert evaluate_exact("(" * depth + "1" + ")" * depth) == 1
    assert evaluate_exact("(" * depth + "1" + ")" * (depth - 1)) is None
    assert evaluate_exact("1+" * 5_000 + "1") == 5_001
    assert evaluate_exact("2*" * 5_000 + "1") is None  # 2**5000 breaks MAX_VALUE_BITS
    # The literal cap rejects this before int() could raise ValueError (Python's 4300-digit limit).
    assert evaluate_exact("9" * 10_000) is None
    assert evaluate_exact("1 + " + "9" * (verifier.MAX_LITERAL_DIGITS + 1)) is None


def power_of_two(k: int) -> str:
    """An expression for 2**k short enough for MAX_EQUATION_CHARS: 4096 is 2**12."""
    text = "4096 * " * (k // 12) + str(2 ** (k % 12))
    assert len(text) + 10 <= verifier.MAX_EQUATION_CHARS
    return text


def test_intermediate_values_are_bounded():
    widest = verifier.MAX_VALUE_BITS - 1  # 2**widest has bit length MAX_VALUE_BITS
    assert evaluate_exact(power_of_two(widest)) == 2**widest
    assert evaluate_exact(power_of_two(widest + 1)) is None
    assert evaluate_exact(f"1 / ({power_of_two(widest)})") == Fraction(1, 2**widest)
    assert evaluate_exact(f"1 / ({power_of_two(widest + 1)})") is None
    assert evaluate_exact(f"{power_of_two(widest + 1)} / 2") is None  # too wide on the way, even if not at the end
    # Every accepted value converts to a float without overflowing or underflowing to zero.
    assert evaluate_equation(power_of_two(widest)) == float(2**widest)
    assert evaluate_equation(f"1 / ({power_of_two(widest)})") == 2.0**-widest > 0.0


def test_precedence_of_mixed_levels_inside_parentheses():
    # 2 * (3 + 4 * (5 - 1)) / 19 = 2 * 19 / 19 = 2
    assert evaluate_exact("2 * (3 + 4 * (5 - 1)) / 19") == 2


# A random expression tree, rendered fully parenthesised, and its value computed independently of the parser.
_leaf = st.integers(min_value=0, max_value=10**6).map(lambda n: (str(n), Fraction(n)))


def _combine(children):
    def build(parts):
        (left_text, left_value), op, (right_text, right_value), space = parts
        if op == "/" and right_value == 0:
            return (f"({left_text}{space}-{space}{left_text})", Fraction(0))
        value = {
            "+": lambda: left_value + right_value,
            "-": lambda: left_value - right_value,
            "*": lambda: left_value * right_value,
            "/": lambda: left_value / right_value,
        }[op]()
        return (f"({left_text}{space}{op}{space}{right_text})", value)

    return st.tuples(children, st.sampled_from("+-*/"), children, st.sampled_from(["", " ", "  ", "\n"])).map(build)


expression_trees = st.recursive(_leaf, _combine, max_leaves=12)


@settings(deadline=None, max_examples=300)
@given(expression_trees)
def test_evaluate_exact_matches_an_independent_tree_evaluation(tree):
    # 12 leaves of <= 20 bits keep every intermediate far below MAX_VALUE_BITS and the text below
    # MAX_EQUATION_CHARS, so the parser must agree exactly.
    text, value = tree
    assert evaluate_exact(text) == value


@settings(deadline=None, max_examples=300)
@given(st.text())
def test_evaluate_never_raises_on_arbitrary_text(text):
    exact = evaluate_exact(text)
    approx = evaluate_equation(text)
    assert (exact is None) == (approx is None)
    if exact is not None:
        assert isinstance(exact, Fraction) and approx == float(exact)


@settings(deadline=None, max_examples=500)
@given(st.text(alphabet="0123456789+-*/() .\n", max_size=40))
def test_evaluate_never_raises_on_near_miss_arithmetic(text):
    value = evaluate_exact(text)
    assert value is None or isinstance(value, Fraction)
    if "." in text or "**" in text or "//" in text or "()" in text.replace(" ", ""):
        assert value is None


# ------------------------------------------------------------------------------------------------- scoring

GT = {"nums": [79, 17, 60], "target": 36}


def test_reward_fn_examples():
    assert reward_fn("Let me think. <answer>(79 - (60 - 17))</answer>", GT) == 1.0
    assert reward_fn("Let me think. <answer>(79 + 60) + 17</answer>", GT) == 0.1
    assert reward_fn("Let me think. The final answer is 62.", GT) == 0.0
    assert (CORRECT_REWARD, FORMAT_REWARD, NO_ANSWER_REWARD) == (1.0, 0.1, 0.0)


@pytest.mark.parametrize(
    ("answer", "exact", "subset"),
    [
        ("65 - 7 - 7", 1.0, 1.0),
        ("65 - 14", 0.1, 0.1),  # 14 is not a given number
        ("65 - 7 - 7 + 3 - 3", 0.1, 0.1),  # 3 not given
        ("(65 - 7) - 7 ", 1.0, 1.0),
        ("65 - 7 - 7 = 51", 0.1, 0.1),
        ("51", 0.1, 0.1),  # the target itself, no numbers used
        ("-(7 - 65) - 7", 0.1, 0.1),  # 51 with a unary minus
        ("65 - 7 * 2", 0.1, 0.1),  # 51, but 2 is not given and 7 is used once
        ("", 0.1, 0.1),
        ("<answer>65 - 7 - 7", 1.0, 1.0),  # the opening tag nearest the closing one starts the pair
    ],
)
def test_reward_fn_rules(answer, exact, subset):
    gt = {"nums": [7, 7, 65], "target": 51}
    text = f"<answer>{answer}</answer>"
    assert reward_fn(text, gt) == exact
    assert reward_fn(text, gt, numbers_rule="subset") == subset


def test_subset_rule_accepts_unused_numbers():
    gt = {"nums": [64, 14, 16, 7], "target": 62}
    assert reward_fn("<answer>(64 + 14) - 16</answer>", gt) == FORMAT_REWARD  # 7 unused
    assert reward_fn("<answer>(64 + 14) - 16</answer>", gt, numbers_rule="subset") == CORRECT_REWARD


# (numbers, answer): each answer uses the numbers as the rules require (exactly, or at most once for the
# Unicode-digit rows) and, read loosely (as Python or a human would), reaches the target 51; none is a valid
# Countdown equation, so each must earn the format reward only.
ADVERSARIAL_ANSWERS = [
    ([7, 7, 65], "-(7 - 65) - 7"),  # unary minus
    ([7, 7, 65], "+65 - 7 - 7"),  # unary plus
    ([2, 3, 43], "2 ** 3 + 43"),
    ([100, 2, 1], "100 // 2 + 1"),
    ([151, 100], "151 % 100"),
    ([25, 5, 2], "25.5 * 2"),
    ([3, 17], "3(17)"),
    ([3, 17], "(3)(17)"),
    ([3, 17], "3 17"),  # a human might read juxtaposition as a product
    ([3, 17], "3 \u00d7 17"),  # ×
    ([3, 17], "3 \u22c5 17"),  # ⋅
    ([102, 2], "102 \u00f7 2"),  # ÷
    ([7, 7, 65], "65 \u2212 7 \u2212 7"),  # − (U+2212)
    ([7, 7, 65], "\u0666\u0665 - 7 - 7"),  # Arabic-Indic 65 (only the ASCII 7s count as numbers)
    ([7, 7, 65], "\uff16\uff15 - 7 - 7"),  # fullwidth 65
    ([7, 7, 65], "65\u00a0- 7 - 7"),  # no-break space
    ([7, 7, 65], "__import__('os').system('true') or 65 - 7 - 7"),
    ([7, 7, 65], "int(65 - 7 - 7)"),
    ([7, 7, 65], "65 - 7 - 7;;"),  # one ";" is a sentence's (read), two are not
    ([7, 7, 65], "(65 - 7 - 7"),
    ([7, 7, 65], "<answer>65 - 7 - 7</answer>"),  # nested tags: the inner pair's close ends up inside
    ([7, 7, 65], "(" * 10_000 + "65 - 7 - 7" + ")" * 10_000),  # over MAX_EQUATION_CHARS
    ([7, 7, 65], "65 - 7" + " " * 10_000 + "- 7"),  # over MAX_EQUATION_CHARS (edge whitespace is stripped)
]


@pytest.mark.parametrize(("numbers", "answer"), ADVERSARIAL_ANSWERS)
def test_adversarial_answers_get_format_reward_only(numbers, answer):
    text = f"<think>I know a trick.</think><answer>{answer}</answer>"
    gt = {"nums": numbers, "target": 51}
    assert validate_numbers(answer[: verifier.MAX_EQUATION_CHARS], numbers)  # the numbers are not the problem
    for rule in verifier.NUMBERS_RULES:
        reward, seconds = timed(reward_fn, text, gt, rule)
        assert reward == FORMAT_REWARD and seconds < SLOW_SECONDS
        assert classify_outcome(text, numbers, 51, rule) is Outcome.PARTIAL


@pytest.mark.parametrize(
    "text",
    [
        "<answer></answer>",
        "<answer>   </answer>",
        "<answer>65 - 7 - 7 + 0" + " + 0" * 5_000 + "</answer>",
        "<answer>" + "9" * 10_000 + "</answer>",
        "<answer>" + "x" * 1_000_000 + "</answer>",
    ],
)
def test_degenerate_answers_get_format_reward_only(text):
    reward, seconds = timed(reward_fn, text, {"nums": [7, 7, 65], "target": 51})
    assert reward == FORMAT_REWARD and seconds < SLOW_SECONDS


def test_score_completion_fields():
    correct = score_completion("<answer>(79 - (60 - 17))</answer>", [79, 17, 60], 36)
    assert correct == Score(Outcome.CORRECT, 1.0, "(79 - (60 - 17))", Fraction(36), True)
    wrong_value = score_completion("<answer>(79 + 60) + 17</answer>", [79, 17, 60], 36)
    assert wrong_value == Score(Outcome.PARTIAL, 0.1, "(79 + 60) + 17", Fraction(156), True)
    wrong_numbers = score_completion("<answer>36</answer>", [79, 17, 60], 36)
    assert wrong_numbers == Score(Outcome.PARTIAL, 0.1, "36", Fraction(36), False)
    unevaluable = score_completion("<answer>79 - 60 -- 17</answer>", [79, 17, 60], 36)
    assert unevaluable == Score(Outcome.PARTIAL, 0.1, "79 - 60 -- 17", None, True)
    assert score_completion("62", [79, 17, 60], 36) == Score(Outcome.FAILED, 0.0, None, None, False)
    with pytest.raises(AttributeError):  # frozen
        correct.reward = 0.0  # type: ignore[misc]


def test_outcome_is_a_str_enum():
    assert [o.value for o in Outcome] == ["correct", "partial", "failed"]
    assert Outcome("partial") is Outcome.PARTIAL and Outcome.FAILED == "failed"


def test_classify_outcome():
    assert classify_outcome("<answer>(79 - (60 - 17))</answer>", [79, 17, 60], 36) is Outcome.CORRECT
    assert classify_outcome("<answer>(79 + 60) + 17</answer>", [79, 17, 60], 36) is Outcome.PARTIAL
    assert classify_outcome("The final answer is 62.", [79, 17, 60], 36) is Outcome.FAILED


def test_target_is_compared_exactly():
    # 1/3 * 3 + 50 is exactly 51; a float pipeline would also get this one, but 51 + 1/3 must never equal 51.
    assert reward_fn("<answer>(1 / 3) * 3 + 50</answer>", {"nums": [1, 3, 3, 50], "target": 51}) == 1.0
    assert reward_fn("<answer>1 / 3 + 51</answer>", {"nums": [1, 3, 51], "target": 51}) == 0.1
    # Within float tolerance-based checks (|x - t| < 1e-5) but not equal.
    assert reward_fn("<answer>1 / 999999 + 5</answer>", {"nums": [1, 999999, 5], "target": 5}) == 0.1


@pytest.mark.parametrize("rule", ["", "EXACT", "multiset", None])
def test_invalid_numbers_rule_raises(rule):
    for call in (
        lambda: reward_fn("<answer>1</answer>", {"nums": [1], "target": 1}, rule),
        lambda: graduated_reward_fn("<answer>1</answer>", {"nums": [1], "target": 1}, rule),
        lambda: score_completion("no tag", [1], 1, rule),
        lambda: classify_outcome("no tag", [1], 1, rule),
    ):
        with pytest.raises(ValueError, match="numbers_rule"):
            call()


@pytest.mark.parametrize(
    ("numbers", "target", "answer", "expected"),
    [
        ([79, 17, 60], 36, "<answer>(79 - (60 - 17))</answer>", 1.0),
        ([10, 8, 2], 21, "<answer>10 + 8 + 2</answer>", 0.7),  # 20: off by 1/21 < 10%
        ([10, 8, 2], 21, "<answer>10 * 2 - 8</answer>", 0.5),  # 12: off by 9/21 < 50%
        ([10, 8, 2], 21, "<answer>10 * 8 / 2</answer>", 0.3),  # 40: off by 19/21
        ([10, 8, 2], 21, "<answer>10 + 8 + 2 +</answer>", 0.3),  # valid numbers, unevaluable
        ([10, 8, 2], 21, "<answer>10 + 10</answer>", 0.1),  # wrong numbers
        ([10, 8, 2], 21, "<answer>21</answer>", 0.1),
        ([10, 8, 2], 21, "no tag, 21", 0.0),
        ([10, 8], 20, "<answer>10 + 8</answer>", 0.5),  # exactly 10% off is not within 10%
        ([2, 5], 20, "<answer>2 * 5</answer>", 0.3),  # exactly 50% off is not within 50%
        ([1, 3], -3, "<answer>1 - 3</answer>", 0.5),  # -2 vs -3: measured against |target|
        ([5, 5], 0, "<answer>5 + 5</answer>", 0.3),  # nothing is "within 10%" of 0
        ([5, 5], 0, "<answer>5 - 5</answer>", 1.0),
    ],
)
def test_graduated_reward(numbers, target, answer, expected):
    assert graduated_reward_fn(answer, {"nums": numbers, "target": target}) == expected


def test_the_reference_ground_truth_key_numbers_is_read_too():
    # The reference setup's verifier spells the column "numbers"; the dataset (and this package) say "nums".
    gt = {"numbers": [7, 7, 65], "target": 51}
    assert reward_fn("<answer>(65 - 7) - 7</answer>", gt) == 1.0
    assert graduated_reward_fn("<answer>65 - 7 - 7</answer>", gt) == 1.0
    assert reward_fn("<answer>65 - 7</answer>", gt) == 0.1


def test_graduated_reward_subset_rule():
    gt = {"nums": [10, 8, 2, 50], "target": 21}
    assert graduated_reward_fn("<answer>10 + 8 + 2</answer>", gt) == 0.1
    assert graduated_reward_fn("<answer>10 + 8 + 2</answer>", gt, numbers_rule="subset") == 0.7


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [(0, 1.0), (-3, 1.0), (1, 1.0), (200, 1.0), (400, 0.9), (1000, 0.84), (10**9, 0.80000004)],
)
def test_length_factor(tokens, expected):
    assert length_factor(tokens) == pytest.approx(expected)
    assert length_factor(tokens, budget=1000) == length_factor(tokens)  # the reference budget
    assert length_factor(tokens * 4, budget=4000) == pytest.approx(expected)  # relative to the budget


# Arbitrary text, and arbitrary text spliced with the pieces that reach the deeper code paths.
texts_with_tags = st.one_of(
    st.text(),
    st.lists(
        st.one_of(st.text(max_size=6), st.sampled_from(["<answer>", "</answer>", "7", "65", " - ", "(", ")", "/"])),
        max_size=12,
    ).map("".join),
)


@settings(deadline=None, max_examples=400)
@given(texts_with_tags)
def test_reward_fn_on_arbitrary_text(text):
    gt = {"nums": [7, 7, 65], "target": 51}
    for rule in verifier.NUMBERS_RULES:
        assert reward_fn(text, gt, rule) in {0.0, 0.1, 1.0}
        assert graduated_reward_fn(text, gt, rule) in {0.0, 0.1, 0.3, 0.5, 0.7, 1.0}


equations_over_puzzle = st.lists(
    st.sampled_from(["7", "65", "3", "(", ")", "+", "-", "*", "/", " ", "07", "**", "."]), max_size=14
).map("".join)


@settings(deadline=None, max_examples=500)
@given(equations_over_puzzle, st.sampled_from(["", "<think>x</think>", "<answer>1</answer>"]), st.booleans())
def test_reward_fn_agrees_with_score_completion(equation, prefix, closed):
    # reward_fn skips work that cannot change the reward; it must still agree with the full score.
    text = f"{prefix}<answer>{equation}" + ("</answer>" if closed else "")
    for target in (51, 61, 0):
        for rule in verifier.NUMBERS_RULES:
            score = score_completion(text, [7, 7, 65], target, rule)
            reward = reward_fn(text, {"nums": [7, 7, 65], "target": target}, rule)
            assert reward == score.reward in {0.0, 0.1, 1.0}
            assert (score.outcome is Outcome.CORRECT) == (reward == 1.0)


def test_verifier_imports_no_third_party_modules():
    code = (
        "import sys; import countdown_rl.tasks.countdown.verifier; "
        "print(sorted(m for m in ('torch', 'numpy', 'transformers', 'trl') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
