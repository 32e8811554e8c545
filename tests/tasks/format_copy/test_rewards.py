"""The format-copy reward (countdown_rl.tasks.format_copy.rewards): its parts, TRL's call, adversarial and
arbitrary text."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from countdown_rl.tasks import get_task
from countdown_rl.tasks.base import Outcome
from countdown_rl.tasks.format_copy.rewards import MALFORMED_ROWS_METRIC, REWARD_FUNCS, format_copy_reward
from countdown_rl.tasks.format_copy.verifier import MAX_DIGITS, MAX_REWARD, REWARD_VALUES, judge_completion
from tests.helpers.trl_calls import timed, trl_reward_call

# A bound on work, not a benchmark: linear scans of 100 KB take milliseconds; a quadratic one takes minutes.
BOUND_SECONDS = 1.0


def trl_call(func, completions, number, **extra):
    """Call ``func`` with every keyword TRL 1.16's GRPOTrainer passes to a sync reward function."""
    return trl_reward_call(func, completions, {"number": number}, prompt="Number: 4821\n", completion_tokens=8,
                           **extra)


# -------------------------------------------------------------------------------------------------- rewards


def test_reward_parts_sum_to_the_documented_values():
    assert MAX_REWARD == pytest.approx(1.3) and REWARD_VALUES == (0.0, 0.2, 0.3, 1.2, 1.3)
    completions = ["<answer>4821</answer>", "Here: <answer>4821</answer>", "<answer>12</answer>",
                   "Here: <answer>12</answer>", "4821"]
    result, log = trl_call(format_copy_reward, completions, [4821] * 5)
    assert result == [1.3, 1.2, 0.3, 0.2, 0.0]  # exact floats: the sum is rounded to the documented value
    assert log.calls == [(MALFORMED_ROWS_METRIC, 0)]


def test_conversational_completions():
    completions = [[{"role": "assistant", "content": "<answer>7</answer>"}], [{"role": "assistant", "content": None}]]
    assert format_copy_reward(completions, number=[7, 7]) == [1.3, 0.0]


@pytest.mark.parametrize("bad", [None, "4821", 4821.0, True, [4821], 10**MAX_DIGITS])
def test_malformed_number_scores_none_and_is_counted(bad):
    result, log = trl_call(format_copy_reward, ["<answer>4821</answer>"] * 3, [4821, bad, bad])
    assert result == [1.3, None, None]
    assert log.calls == [(MALFORMED_ROWS_METRIC, 2)]


def test_numpy_integers_are_accepted():
    np = pytest.importorskip("numpy")
    assert format_copy_reward(["<answer>7</answer>"] * 2, number=[np.int64(7), np.int32(7)]) == [1.3, 1.3]


def test_batch_shape_errors():
    with pytest.raises(ValueError, match="number"):
        format_copy_reward(["<answer>7</answer>"])
    with pytest.raises(ValueError, match="mismatched"):
        format_copy_reward(["<answer>7</answer>"] * 2, number=[7])


def test_reward_names_registry_and_pickling():
    assert {name: f.__name__ for name, f in REWARD_FUNCS.items()} == {"format_copy": "format_copy_reward"}
    assert get_task("format_copy").get_reward_funcs(["format_copy"]) == [format_copy_reward]
    assert pickle.loads(pickle.dumps(format_copy_reward)) is format_copy_reward


ADVERSARIAL = {
    "10,000 digits in tags": "<answer>" + "9" * 10_000 + "</answer>",
    "100 KB outside strict tags": "x" * 100_000 + "<answer>7</answer>",
    "open tags": "<answer>" * 12_500,
    "close tags": "</answer>" * 11_000,
    "many pairs": "<answer>7</answer>" * 5_800,
    "unicode digits": "<answer>" + "\u0667" * 100_000 + "</answer>",
    "minus signs": "<answer>" + "-" * 100_000 + "7</answer>",
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_adversarial_completions_are_scored_promptly(name):
    result, seconds = timed(format_copy_reward, [ADVERSARIAL[name]], number=[7])
    assert result[0] in REWARD_VALUES and seconds < BOUND_SECONDS, (name, result, seconds)


def test_adversarial_values():
    values = {name: format_copy_reward([text], number=[7])[0] for name, text in ADVERSARIAL.items()}
    assert values == {
        "10,000 digits in tags": 0.3,
        "100 KB outside strict tags": 1.2,
        "open tags": 0.0,
        "close tags": 0.0,
        "many pairs": 1.2,
        "unicode digits": 0.3,
        "minus signs": 0.3,
    }


texts = st.one_of(
    st.text(max_size=200),
    st.lists(st.sampled_from(["<answer>", "</answer>", "7", "42", "-", " ", "\n", "x", "\u0667", "0"]), max_size=30)
    .map("".join),
)


@settings(deadline=None, max_examples=300)
@given(texts, st.integers(min_value=0, max_value=10**MAX_DIGITS - 1))
def test_reward_on_arbitrary_text_is_a_documented_value(text, number):
    reward = format_copy_reward([text], number=[number])[0]
    verdict = judge_completion(text, number)
    assert reward in REWARD_VALUES and reward == verdict.reward
    # the parts are consistent with the outcome
    assert (verdict.outcome is Outcome.FAILED) == (reward == 0.0)
    assert (verdict.outcome is Outcome.CORRECT) == (reward >= 1.0)


@settings(deadline=None, max_examples=25)
@given(texts.filter(bool))
def test_reward_on_100kb_of_arbitrary_text_is_bounded(text):
    big = (text * (100_000 // len(text) + 1))[:100_000]
    result, seconds = timed(format_copy_reward, [big], number=[42])
    assert result[0] in REWARD_VALUES and seconds < BOUND_SECONDS


@settings(deadline=None, max_examples=200)
@given(st.integers(min_value=0, max_value=10**MAX_DIGITS - 1), st.sampled_from(["", " ", "\n"]))
def test_copying_any_number_earns_the_maximum(number, space):
    assert format_copy_reward([f"{space}<answer>{number}</answer>{space}"], number=[number]) == [1.3]
