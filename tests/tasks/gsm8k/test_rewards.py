"""The GSM8K rewards (countdown_rl.tasks.gsm8k.rewards): documented values through TRL's call, adversarial and
arbitrary text."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from countdown_rl.tasks import get_task
from countdown_rl.tasks.base import Outcome
from countdown_rl.tasks.extraction import MAX_BOXED_SCAN, canonical_number_text, parse_number
from countdown_rl.tasks.gsm8k.rewards import MALFORMED_ROWS_METRIC, REWARD_FUNCS, gsm8k_format_reward, gsm8k_reward
from countdown_rl.tasks.gsm8k.verifier import (
    ANSWER_METHODS,
    DEFAULT_ANSWER_ORDER,
    Extracted,
    extract_answer,
    judge_completion,
)
from tests.helpers.trl_calls import timed, trl_reward_call

# A bound on work, not a benchmark: linear scans of 100 KB take milliseconds; a quadratic one takes minutes.
BOUND_SECONDS = 1.0


def trl_call(func, completions, gold, **extra):
    """Call ``func`` with every keyword TRL 1.16's GRPOTrainer passes to a sync reward function."""
    n = len(completions)
    # the other dataset columns come along too
    columns = {"gold": gold, "question": ["How many clips?"] * n, "answer": ["#### 72"] * n}
    return trl_reward_call(func, completions, columns, prompt="How many clips?", completion_tokens=20, **extra)


# ------------------------------------------------------------------------------------------------- rewards

CORRECT, WRONG, NO_ANSWER, UNPARSABLE = "<answer>72</answer>", "<answer>71</answer>", "It is 72", "<answer>?</answer>"


def test_rewards_documented_values_through_trl_call():
    completions = [CORRECT, WRONG, NO_ANSWER, UNPARSABLE, "\\boxed{72}"]
    result, log = trl_call(gsm8k_reward, completions, ["72"] * 5)
    assert result == [1.0, 0.0, 0.0, 0.0, 1.0]
    assert log.calls == [(MALFORMED_ROWS_METRIC, 0)]
    result, log = trl_call(gsm8k_format_reward, completions, ["72"] * 5)
    assert result == [1.0, 0.1, 0.0, 0.1, 1.0]
    assert log.calls == [(MALFORMED_ROWS_METRIC, 0)]


def test_format_reward_pays_for_tags_whatever_the_order():
    assert gsm8k_format_reward([WRONG, CORRECT], gold=["72"] * 2, answer_order=["boxed"]) == [0.1, 0.1]
    assert gsm8k_format_reward(["\\boxed{72}"], gold=["72"], answer_order=["boxed"]) == [1.0]


def test_conversational_completions():
    parts = [{"type": "text", "text": "<answer>7"}, {"type": "text", "text": "2</answer>"}]
    completions = [
        [{"role": "assistant", "content": CORRECT}],
        [{"role": "assistant", "content": parts}],
        [{"role": "assistant", "content": None}],
    ]
    assert gsm8k_reward(completions, gold=["72"] * 3) == [1.0, 1.0, 0.0]


@pytest.mark.parametrize("bad", [None, "abc", "", "1,00", 72.0, True, [72], "9" * 30])
def test_malformed_gold_scores_none_and_is_counted(bad):
    for func in (gsm8k_reward, gsm8k_format_reward):
        result, log = trl_call(func, [CORRECT, CORRECT, CORRECT], ["72", bad, bad])
        assert result == [1.0, None, None]
        assert log.calls == [(MALFORMED_ROWS_METRIC, 2)]


def test_integer_and_numpy_golds_are_accepted():
    np = pytest.importorskip("numpy")
    assert gsm8k_reward([CORRECT] * 3, gold=[72, np.int64(72), "72"]) == [1.0, 1.0, 1.0]


def test_batch_shape_errors():
    with pytest.raises(ValueError, match="gold"):
        gsm8k_reward([CORRECT])  # the dataset has no gold column
    with pytest.raises(ValueError, match="mismatched"):
        gsm8k_reward([CORRECT, CORRECT], gold=["72"])


def test_reward_names_and_registry():
    assert {name: func.__name__ for name, func in REWARD_FUNCS.items()} == {
        "gsm8k": "gsm8k_reward", "gsm8k_format": "gsm8k_format_reward"}
    task = get_task("gsm8k")
    assert task.get_reward_funcs(["gsm8k", "gsm8k_format"]) == [gsm8k_reward, gsm8k_format_reward]
    with pytest.raises(ValueError, match="unknown reward 'countdown'"):
        task.get_reward_funcs(["countdown"])


def test_reward_funcs_follow_the_options_and_pickle():
    funcs = get_task("gsm8k", ["answer_order=last_number"]).get_reward_funcs(["gsm8k", "gsm8k_format"])
    assert [f.__name__ for f in funcs] == ["gsm8k_reward", "gsm8k_format_reward"]
    assert [f([NO_ANSWER], gold=["72"]) for f in funcs] == [[1.0], [1.0]]
    restored = pickle.loads(pickle.dumps(funcs[0]))
    assert restored.__name__ == "gsm8k_reward" and restored([NO_ANSWER], gold=["72"]) == [1.0]
    # the default order keeps the plain functions
    assert get_task("gsm8k").reward_funcs()["gsm8k"] is gsm8k_reward


# ----------------------------------------------------------------------------------------- adversarial input

ADVERSARIAL = {
    "100 KB of prose": "The answer might be 7. " * 4500,
    "10,000-digit number in tags": "<answer>" + "9" * 10_000 + "</answer>",
    "10,000-digit number after a marker": "The answer is " + "9" * 10_000,
    "10,000-digit last number": "x " + "9" * 10_000,
    "open tags": "<answer>" * 12_500,
    "close tags": "</answer>" * 11_000,
    "deep braces": "\\boxed{" + "{" * 100_000,
    "many boxes": "\\boxed{" * 14_000,
    "unbalanced close braces": "\\boxed{72" + "}" * 100_000,
    "markers": "answer is " * 10_000,
    "marker then spaces": "answer" + " " * 100_000 + "is 72",
    "commas": "1" + ",000" * 25_000,
    "digit-comma soup": "1," * 50_000,
    "minus signs": "-" * 100_000 + "72",
    "money soup": "-$1,2.3/4% " * 9_000,
    "unicode digits": "\u0663\u0667" * 50_000,
    "slashes": "1/" * 50_000,
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
@pytest.mark.parametrize("order", [DEFAULT_ANSWER_ORDER, ANSWER_METHODS], ids=["default", "all"])
def test_adversarial_completions_are_scored_promptly(name, order):
    text = ADVERSARIAL[name]
    for func, values in ((gsm8k_reward, {0.0, 1.0}), (gsm8k_format_reward, {0.0, 0.1, 1.0})):
        result, seconds = timed(func, [text], gold=["72"], answer_order=order)
        assert result[0] in values and seconds < BOUND_SECONDS, (name, result, seconds)


def test_adversarial_values():
    assert gsm8k_reward([ADVERSARIAL["10,000-digit number in tags"]], gold=["9" * 20]) == [0.0]
    assert gsm8k_format_reward([ADVERSARIAL["10,000-digit number in tags"]], gold=["9"]) == [0.1]
    assert gsm8k_reward([ADVERSARIAL["unbalanced close braces"]], gold=["72"]) == [1.0]  # the first "}" closes
    assert gsm8k_reward([ADVERSARIAL["deep braces"] + " <answer>72</answer>"], gold=["72"]) == [1.0]
    assert gsm8k_reward([ADVERSARIAL["deep braces"]], gold=["72"], answer_order=["boxed"]) == [0.0]


def test_boxed_scan_is_capped_but_reaches_its_cap():
    inside = "{" * 10 + "72" + "}" * 10
    assert len(inside) < MAX_BOXED_SCAN
    assert extract_answer("\\boxed{" + inside + "}") == Extracted("boxed", inside)


# ------------------------------------------------------------------------------------------ property tests

texts = st.one_of(
    st.text(max_size=200),
    st.lists(
        st.sampled_from(["<answer>", "</answer>", "\\boxed{", "{", "}", "answer is ", "####", " ", "\n", "$", "-",
                         ",", ".", "/", "%", "72", "1,000", "0.75", "3/4", "\u0663", "\\frac{3}{4}"]),
        max_size=40,
    ).map("".join),
)


@settings(deadline=None, max_examples=300)
@given(texts, st.sampled_from(["72", "3/4", "-3", "1000"]), st.permutations(ANSWER_METHODS))
def test_rewards_on_arbitrary_text_return_documented_values(text, gold, order):
    assert gsm8k_reward([text], gold=[gold], answer_order=order)[0] in (0.0, 1.0)
    assert gsm8k_format_reward([text], gold=[gold], answer_order=order)[0] in (0.0, 0.1, 1.0)
    verdict = judge_completion(text, gold, order)
    assert (verdict.answer is None) == (verdict.outcome is Outcome.FAILED)
    assert verdict.reward == (1.0 if verdict.outcome is Outcome.CORRECT else 0.0)


@settings(deadline=None, max_examples=25)
@given(texts.filter(bool))
def test_rewards_on_100kb_of_arbitrary_text_are_bounded(text):
    big = (text * (100_000 // len(text) + 1))[:100_000]
    for func, values in ((gsm8k_reward, (0.0, 1.0)), (gsm8k_format_reward, (0.0, 0.1, 1.0))):
        result, seconds = timed(func, [big], gold=["72"], answer_order=ANSWER_METHODS)
        assert result[0] in values and seconds < BOUND_SECONDS


@settings(deadline=None, max_examples=200)
@given(st.fractions(max_denominator=1000).filter(lambda f: abs(f.numerator) < 10**9))
def test_any_fraction_written_canonically_is_correct(value):
    gold = canonical_number_text(value)
    assert parse_number(gold) == value
    assert judge_completion(f"<answer>{gold}</answer>", gold).outcome is Outcome.CORRECT
