"""Property tests for gaming (issue 22) of the format-copy reward: dressing a wrong answer up never earns the full
reward, and a right answer keeps it through a trailing full stop or surrounding spaces.

Deterministic (``derandomize=True``) and small enough for the default tier; real graders, nothing mocked.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from countdown_rl.tasks.format_copy.rewards import format_copy_reward
from tests.helpers.gaming import PROPERTY, disguises, full_of, wrappers


@PROPERTY
@given(number=st.integers(0, 10**9), delta=st.integers(1, 1000))
def test_format_copy_wrong_numbers_stay_wrong_in_any_dress(number, delta):
    right, wrong = str(number), str(number + delta)
    texts = [w for d in disguises(wrong, right) for w in wrappers(d)]
    assert max(full_of(format_copy_reward, texts, number=number)) < 1.0
    assert format_copy_reward([f"<answer> {right} </answer>"], number=[number]) == [1.3]
