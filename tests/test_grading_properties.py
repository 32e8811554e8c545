"""Property tests for gaming (issue 22), for every task's main reward: dressing a wrong answer up never earns the
full reward, and a right answer keeps it through a trailing full stop or surrounding spaces.

Deterministic (``derandomize=True``) and small enough for the default tier; real graders, nothing mocked.
"""

from __future__ import annotations

import functools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from countdown_rl.tasks.countdown.rewards import countdown_reward
from countdown_rl.tasks.format_copy import format_copy_reward
from countdown_rl.tasks.gsm8k import gsm8k_reward
from countdown_rl.tasks.math import math_r1_zero_reward

PROPERTY = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
MATH = functools.partial(math_r1_zero_reward, timeout_seconds=0.5)


def disguises(wrong: str, right: str) -> list[str]:
    """Answer texts that give a wrong answer, dressed up, or offer a right answer beside a wrong one."""
    return [
        f"\\text{{{wrong}}}", f"\\mathrm{{{wrong}}}", f"\\boxed{{{wrong}}}", f"{wrong}\\text{{ cm}}",
        f"{wrong} cm", f"{wrong} apples", f"{wrong}. That is final.", f"{wrong}, {right}", f"{wrong} or {right}",
        f"{right} or {wrong}", f"{wrong} \\text{{ or }} {right}", f"{wrong}\\text{{{right}}}",
        f"{wrong} = {right}", f"{right} = {wrong}", f"{wrong} ({right})", f"\\text{{{wrong} {right}}}",
    ]


def wrappers(answer: str) -> list[str]:
    """Where an answer may sit in a completion, for a task that reads tags."""
    return [f"Let me think. </think> <answer>{answer}</answer>", f"<answer>{answer}</answer>"]


def full_of(func, texts: list[str], **columns) -> list[float]:
    n = len(texts)
    return func(texts, **{k: [v] * n for k, v in columns.items()})


numbers = st.integers(min_value=0, max_value=10**6)
fractions = st.tuples(st.integers(1, 99), st.integers(2, 99)).filter(lambda t: t[0] % t[1] != 0)


# ------------------------------------------------------------------------------------------------------------ math


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


# ----------------------------------------------------------------------------------------------------------- gsm8k


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


# ------------------------------------------------------------------------------------------------------- countdown


@PROPERTY
@given(a=st.integers(1, 99), b=st.integers(1, 99), c=st.integers(2, 20))
def test_countdown_wrong_equations_stay_wrong_in_any_dress(a, b, c):
    right, wrong = f"{a} + {b} * {c}", f"({a} + {b}) * {c}"
    target, nums = a + b * c, [a, b, c]
    if (a + b) * c == target:
        return
    texts = [w for d in disguises(wrong, right) for w in wrappers(d)]
    texts += [f"{right} <answer>{wrong}</answer>", f"<answer>{wrong}</answer> {right}"]
    assert max(full_of(countdown_reward, texts, nums=nums, target=target)) < 1.0
    for punctuation in (".", ",", ";", " ", ""):
        assert countdown_reward([f"<answer> {right}{punctuation} </answer>"], nums=[nums], target=[target]) == [1.0]


# ----------------------------------------------------------------------------------------------------- format_copy


@PROPERTY
@given(number=st.integers(0, 10**9), delta=st.integers(1, 1000))
def test_format_copy_wrong_numbers_stay_wrong_in_any_dress(number, delta):
    right, wrong = str(number), str(number + delta)
    texts = [w for d in disguises(wrong, right) for w in wrappers(d)]
    assert max(full_of(format_copy_reward, texts, number=number)) < 1.0
    assert format_copy_reward([f"<answer> {right} </answer>"], number=[number]) == [1.3]
