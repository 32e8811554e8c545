"""Property tests for gaming (issue 22) of the MATH reward: dressing a wrong answer up never earns the full
reward, and a right answer keeps it through a trailing full stop or surrounding spaces.

Deterministic (``derandomize=True``) and small enough for the default tier; real graders, nothing mocked.
"""

from __future__ import annotations

import functools

from hypothesis import given
from hypothesis import strategies as st

from countdown_rl.tasks.math.rewards import math_r1_zero_reward
from tests.helpers.gaming import PROPERTY, disguises, fractions, full_of, numbers, wrappers

MATH = functools.partial(math_r1_zero_reward, timeout_seconds=0.5)


@PROPERTY
@given(gold=st.integers(1, 10**6), delta=st.integers(1, 1000))  # not 0: "W (0)" is W times 0, which is 0
def test_math_wrong_answers_stay_wrong_in_any_dress(gold, delta):
    right, wrong = str(gold), str(gold + delta)
    texts = [w for d in disguises(wrong, right) for w in wrappers(d)]
    texts += [f"{right} so </think> <answer>{wrong}</answer>", f"</think> <answer>{wrong}</answer> {right}",
              f"</think> <answer>{wrong}</answer> \\boxed{{{right}}}"]
    assert max(full_of(MATH, texts, gold=right)) == 0.0


@PROPERTY
@given(frac=fractions, delta=st.integers(1, 50))
def test_math_wrong_fractions_stay_wrong_in_any_dress(frac, delta):
    right, wrong = f"\\frac{{{frac[0]}}}{{{frac[1]}}}", f"\\frac{{{frac[0] + delta}}}{{{frac[1]}}}"
    texts = [w for d in disguises(wrong, right) for w in wrappers(d)[:1]]
    assert max(full_of(MATH, texts, gold=right)) == 0.0


@PROPERTY
@given(gold=numbers, punctuation=st.sampled_from([".", ",", ";", " ", "$.", ".$"]))
def test_math_right_answers_keep_their_reward(gold, punctuation):
    answer = f"${gold}{punctuation}" if punctuation.endswith("$") else f"  {gold}{punctuation} "
    if punctuation == "$.":
        answer = f"${gold}$."
    assert MATH([f"x </think> <answer>{answer}</answer>"], gold=[str(gold)]) == [1.0]
