"""Property tests for gaming (issue 22) of the Countdown reward: dressing a wrong answer up never earns the full
reward, and a right answer keeps it through a trailing full stop or surrounding spaces.

Deterministic (``derandomize=True``) and small enough for the default tier; real graders, nothing mocked.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from countdown_rl.tasks.countdown.rewards import countdown_reward
from tests.helpers.gaming import PROPERTY, disguises, full_of, wrappers


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
