"""The GSM8K verifier (countdown_rl.tasks.gsm8k.verifier): extraction methods, judging, the gold after ####."""

from __future__ import annotations

import pytest

from countdown_rl.tasks.base import Outcome, Verdict
from countdown_rl.tasks.gsm8k import GSM8KTask
from countdown_rl.tasks.gsm8k.rewards import gsm8k_reward
from countdown_rl.tasks.gsm8k.verifier import (
    ANSWER_METHODS,
    Extracted,
    extract_answer,
    gold_from_solution,
    judge_completion,
)


# ---------------------------------------------------------------------------------------------- extraction


@pytest.mark.parametrize(
    ("text", "method", "candidate"),
    [
        ("<answer>72</answer>", "tags", "72"),
        ("<answer> 72 \n</answer>", "tags", "72"),
        ("<answer>71</answer> wait, <answer>72</answer>", "tags", "72"),  # the last pair wins
        ("<answer>71</answer> then <answer>72", "tags", "71"),  # the trailing tag never closed
        ("<answer>x <answer>72</answer>", "tags", "72"),  # the open tag nearest the last close
        ("<answer></answer>", "tags", ""),  # empty tags are found (and unparsable)
        ("\\boxed{72} and <answer>70</answer>", "tags", "70"),  # tags come first by default
        ("so \\boxed{72}.", "boxed", "72"),
        ("\\boxed{1} then \\boxed{72}", "boxed", "72"),
        ("\\boxed{\\frac{3}{4}}", "boxed", "\\frac{3}{4}"),  # nested braces balance
        ("\\boxed{{{72}}}", "boxed", "{{72}}"),
        ("The answer is 72.", "answer_is", "72"),
        ("The answer is $1,200.", "answer_is", "$1,200"),
        ("the final ANSWER IS: 18 apples, I think", "answer_is", "18"),
        ("Answer: 72", "answer_is", "72"),
        ("answer is \\frac{3}{4}.", "answer_is", "\\frac{3}{4}"),
        ("#### 72", "answer_is", "72"),
        ("The answer is 5.\nLater: the answer is 7", "answer_is", "7"),  # the last marker
    ],
)
def test_extract_answer(text, method, candidate):
    assert extract_answer(text) == Extracted(method, candidate)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "48 + 24 = 72",  # a bare number is not an answer under the default order
        "<answer>72",
        "72</answer>",
        "</answer>72<answer>",
        "<Answer>72</Answer>",  # tags are case-sensitive
        "\\boxed{72",  # unclosed
        "\\boxed{" + "{" * 5000 + "72" + "}" * 5001,  # balanced, but closes only past MAX_BOXED_SCAN
        "The answer is five.",
        "the answer is\n72",  # the number must be on the marker's line
        None,
        ["<answer>72</answer>"],
    ],
)
def test_extract_answer_none(text):
    assert extract_answer(text) is None


def test_answer_order_changes_the_method():
    text = "\\boxed{70} so 24 + 48 = 72 <answer>71</answer>"
    assert extract_answer(text, ["boxed", "tags"]) == Extracted("boxed", "70")
    assert extract_answer(text, ["last_number"]) == Extracted("last_number", "71")
    assert extract_answer("24 + 48 = 72", ANSWER_METHODS) == Extracted("last_number", "72")
    assert extract_answer("<answer>71</answer>", ["boxed", "answer_is"]) is None


@pytest.mark.parametrize(
    ("text", "candidate"),
    [
        ("5 - 3 = 2", "2"),
        ("from 10-3 we get", "3"),  # a minus right after a digit is subtraction, not a sign
        ("owes -3 dollars", "-3"),
        ("costs $1,200, so", "$1,200"),  # the trailing comma is punctuation
        ("2/5 of them", "2/5"),
        ("the 1,00 mark", "1,00"),
        ("rate 12.5% today", "12.5%"),
        ("\u0663 apples and 4", "4"),  # Unicode digits are not numbers
    ],
)
def test_last_number(text, candidate):
    assert extract_answer(text, ["last_number"]) == Extracted("last_number", candidate)


def test_unknown_method_is_a_caller_error():
    with pytest.raises(ValueError, match="answer_order"):
        extract_answer("72", ["tags", "guess"])
    with pytest.raises(ValueError, match="answer_order"):
        gsm8k_reward(["72"], gold=["72"], answer_order=())


# ------------------------------------------------------------------------------------------------- judging


@pytest.mark.parametrize(
    ("text", "gold", "outcome", "answer"),
    [
        ("24 + 48 = 72. <answer>72</answer>", "72", Outcome.CORRECT, "72"),
        ("<answer>$1,200.00</answer>", "1200", Outcome.CORRECT, "$1,200.00"),
        ("<answer>0.75</answer>", "3/4", Outcome.CORRECT, "0.75"),
        ("<answer>3/4</answer>", "3/4", Outcome.CORRECT, "3/4"),
        ("<answer>-3</answer>", "-3", Outcome.CORRECT, "-3"),
        ("<answer>3</answer>", "-3", Outcome.PARTIAL, "3"),
        ("<answer>1,00</answer>", "100", Outcome.PARTIAL, "1,00"),  # malformed thousands: unparsable
        ("<answer>1,000</answer>", "1000", Outcome.CORRECT, "1,000"),
        ("<answer>71</answer>", "72", Outcome.PARTIAL, "71"),
        ("<answer></answer>", "72", Outcome.PARTIAL, ""),
        ("<answer>72 clips</answer>", "72", Outcome.PARTIAL, "72 clips"),
        ("<answer>\u0667\u0662</answer>", "72", Outcome.PARTIAL, "\u0667\u0662"),  # Arabic-Indic 72
        ("<answer>72</answer> <answer>71</answer>", "72", Outcome.PARTIAL, "71"),  # the last pair counts
        ("<answer>71</answer> <answer>72</answer>", "72", Outcome.CORRECT, "72"),
        ("So \\boxed{72}.", "72", Outcome.CORRECT, "72"),
        ("The answer is 72 clips.", "72", Outcome.CORRECT, "72"),
        ("#### 72", "72", Outcome.CORRECT, "72"),
        ("48 + 24 = 72", "72", Outcome.FAILED, None),
        ("", "72", Outcome.FAILED, None),
    ],
)
def test_judge(text, gold, outcome, answer):
    verdict = GSM8KTask().judge(text, {"question": "Q?", "gold": gold})
    assert verdict == Verdict(outcome, answer, 1.0 if outcome is Outcome.CORRECT else 0.0)


def test_judge_caps_the_recorded_answer():
    verdict = judge_completion("<answer>" + "7" * 100_000 + "</answer>", "7")
    assert verdict.outcome is Outcome.PARTIAL and len(verdict.answer) == 200 and verdict.answer.endswith("...")


def test_judge_refuses_a_bad_gold():
    with pytest.raises(ValueError, match="'gold' is 'abc'"):
        judge_completion("<answer>72</answer>", "abc")


def test_gold_from_solution_uses_the_last_marks():
    assert gold_from_solution("#### 5 is wrong\nso\n#### 7") == "7"
