"""The MATH rewards (countdown_rl.tasks.math.rewards): values, metrics, binding, any text in bounded time."""

from __future__ import annotations

import functools
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from countdown_rl.tasks import get_task
from countdown_rl.tasks.base import Outcome
from countdown_rl.tasks.math import MathTask
from countdown_rl.tasks.math.rewards import math_r1_zero_reward, math_shaped_reward
from countdown_rl.tasks.math.verifier import extract
from tests.helpers.task_samples import BIG, fmt


# ----------------------------------------------------------------------------------------------------------------
# Rewards
# ----------------------------------------------------------------------------------------------------------------


# Right answers are given time: these test the values, not the deadline (a loaded 2-core machine once ran a right
# answer's parse past the 2 s default; tests/tasks/math/test_verifier_cases.py times the deadline itself).
RIGHT_GIVEN_TIME = 60.0


def test_r1_zero_reward_values_and_metrics():
    logged = {}
    completions = [
        fmt("0.75"),  # formatted, right
        fmt("0.7"),  # formatted, wrong
        r"so the answer is \boxed{\frac34}",  # right but not formatted
        "no answer",
    ]
    rewards = math_r1_zero_reward(completions, gold=[r"\frac{3}{4}"] * 4, timeout_seconds=RIGHT_GIVEN_TIME,
                                  log_metric=lambda k, v: logged.__setitem__(k, v))
    assert rewards == [1.0, 0.0, 0.0, 0.0]
    assert logged == {"math/malformed_rows": 0, "math/timeouts": 0, "math/format_reward": 0.5,
                      "math/answer_reward": 0.5}


def test_r1_zero_reward_on_chat_completions():
    completion = [{"role": "assistant", "content": fmt(r"\boxed{12}")}]
    assert math_r1_zero_reward([completion], gold=["12"], timeout_seconds=RIGHT_GIVEN_TIME) == [1.0]


@pytest.mark.parametrize(
    "text,expected",
    [
        (r"... so $\boxed{\frac{5}{2}}$.", 1.1),  # the GR-REINFORCE study's clean solve
        (r"the answer is \boxed{2.5} and 2.5", 1.1),  # the last number adds nothing when a box is complete
        (r"\boxed{995}", 0.1),  # a box, wrong
        (r"\boxed{2.5} then \boxed{3}", 0.1),  # the last box counts
        (r"\boxed{\frac{5}{2}", 0.1),  # unclosed box, last number 2 is wrong
        (r"\boxed{5/2 so 2.5", 0.2),  # unclosed box + right last number
        ("so it is 2.5", 0.1),  # no box, right last number
        ("so it is 2", 0.0),
        ("<answer>2.5</answer>", 0.1),  # tags play no part: the last number 2.5
        ("", 0.0),
    ],
)
def test_math_shaped_reward(text, expected):
    assert math_shaped_reward([text], gold=[r"\frac{5}{2}"]) == [expected]


def test_malformed_gold_rows_score_none_and_are_counted():
    logged = {}
    rewards = math_shaped_reward(["\\boxed{1}"] * 3, gold=["1", "", None], log_metric=lambda k, v: logged.__setitem__(k, v))
    assert rewards == [1.1, None, None]
    assert logged == {"math/malformed_rows": 2, "math/timeouts": 0}
    with pytest.raises(ValueError, match="mismatched batch lengths"):
        math_r1_zero_reward(["a", "b"], gold=["1"])
    with pytest.raises(ValueError, match="'gold'"):
        math_r1_zero_reward(["a"], gold=None)


def test_reward_funcs_are_named_bound_and_picklable():
    import pickle

    task = get_task("math", ["timeout_seconds=0.5"])
    funcs = task.get_reward_funcs(["r1_zero", "math_shaped"])
    assert [f.__name__ for f in funcs] == ["math_r1_zero_reward", "math_shaped_reward"]
    assert all(f.keywords == {"timeout_seconds": 0.5} for f in funcs)
    assert pickle.loads(pickle.dumps(funcs[0]))([fmt("1")], gold=["1"]) == [1.0]
    assert task.default_reward_funcs == ("r1_zero",)


# ----------------------------------------------------------------------------------------------------------------
# Properties: any text -> a documented value, no exception, bounded time
# ----------------------------------------------------------------------------------------------------------------

FRAGMENTS = ["\\boxed{", "\\boxed", "\\fbox{", "{", "}", "\\{", "\\}", "<answer>", "</answer>", "</think>", "<think>",
             "\\frac{", "^{", "^", "!", "(", ")", "[", "]", "$", "\\", " ", "\n", "-", ".", ",", "1", "5", "36",
             "9999999", "x", "=", "\\sqrt{", "\\left(", "\\right)", "٣", "５", "é", "\\text{", "\\infty", "\\cup"]
TEXTS = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=5), max_size=40).map("".join)
GOLDS = st.sampled_from(["36", r"\frac{5}{2}", "(1,2]", r"\{1,2\}", "x^2+1", r"\text{(C)}"])
# A small deadline keeps the property tests fast; the values must not depend on it.
R1 = functools.partial(math_r1_zero_reward, timeout_seconds=0.3)
SHAPED = functools.partial(math_shaped_reward, timeout_seconds=0.3)
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(text=TEXTS, gold=GOLDS)
def test_any_text_gets_a_documented_value(text, gold):
    assert R1([text], gold=[gold]) in ([0.0], [1.0])
    assert SHAPED([text], gold=[gold]) in ([0.0], [0.1], [0.2], [1.1])
    verdict = MathTask(["timeout_seconds=0.3"]).judge(text, {"problem": "p", "gold": gold})
    assert verdict.reward in (0.0, 1.0)
    assert (verdict.outcome is Outcome.FAILED) == (extract(text).source == "none")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(head=TEXTS, tail=TEXTS, filler=st.sampled_from(["x", "{", "(", " ", "9", "\\boxed", "</think>", "é"]))
def test_100kb_completions_are_scored_in_bounded_time(head, tail, filler):
    text = head + filler * (BIG // len(filler)) + tail
    start = time.perf_counter()
    assert R1([text], gold=["36"]) in ([0.0], [1.0])
    assert SHAPED([text], gold=["36"]) in ([0.0], [0.1], [0.2], [1.1])
    # Generous: about 50 ms on an idle core; the deadline (0.3 s) bounds the math-verify part of each call.
    assert time.perf_counter() - start < 5.0
