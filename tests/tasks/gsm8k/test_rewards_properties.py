"""Property tests for gaming (issue 22) of the GSM8K reward: dressing a wrong answer up never earns the full
reward, and a right answer keeps it through a trailing full stop or surrounding spaces.

Deterministic (``derandomize=True``) and small enough for the default tier; real graders, nothing mocked.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from countdown_rl.tasks.gsm8k.rewards import gsm8k_reward
from tests.helpers.gaming import PROPERTY, disguises, full_of, numbers, wrappers


@PROPERTY
@given(gold=numbers, delta=st.integers(1, 1000))
def test_gsm8k_wrong_answers_stay_wrong_in_any_dress(gold, delta):
    right, wrong = str(gold), str(gold + delta)
    texts = [w for d in disguises(wrong, right) for w in wrappers(d)]
    # "answer is W = R" gives R: the value after the last "=" is the sentence's answer (the documented rule)
    texts += [f"The answer is {d}" for d in disguises(wrong, right) if d != f"{wrong} = {right}"]
    texts += [f"The answer is $\\sqrt{{{gold * gold}}}$", f"The answer is {right}^{{2}}", f"The answer is {wrong} - {delta} + 0 = {wrong}",
              f"{right} <answer>{wrong}</answer>", f"<answer>{wrong}</answer> {right}",
              f"The answer is {right}.\n<answer>{wrong}</answer>"]
    assert max(full_of(gsm8k_reward, texts, gold=right)) == 0.0


@PROPERTY
@given(gold=numbers, punctuation=st.sampled_from([".", ",", ";", " ", ""]), marker=st.booleans())
def test_gsm8k_right_answers_keep_their_reward(gold, punctuation, marker):
    text = f"The answer is {gold}{punctuation}" if marker else f"<answer> {gold}{punctuation} </answer>"
    assert gsm8k_reward([text], gold=[str(gold)]) == [1.0]
