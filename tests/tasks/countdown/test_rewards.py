"""TRL-facing reward functions: call shape, completion formats, row validation, the registry, pickling."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

from countdown_rl.tasks.countdown import rewards
from countdown_rl.tasks.countdown.rewards import (
    MALFORMED_ROWS_METRIC,
    REWARD_FUNCS,
    completion_text,
    countdown_reward,
    countdown_reward_subset,
    get_reward_funcs,
    graduated_reward,
    length_aware_reward,
)
from tests.helpers.trl_calls import trl_reward_call

CORRECT = "Let me think.</think>\n<answer>(79 - (60 - 17))</answer>"
WRONG = "Let me think.</think>\n<answer>(79 + 60) + 17</answer>"
NO_TAG = "Let me think.</think>\nThe final answer is 62."
NUMS, TARGET = [79, 17, 60], 36


def trl_call(func, completions, nums, target, **extra):
    """Call ``func`` with every keyword TRL 1.16's GRPOTrainer passes to a sync reward function."""
    columns = {"nums": nums, "target": target, "prompt_id": list(range(len(completions)))}  # + any other column
    return trl_reward_call(func, completions, columns, prompt="Using [79, 17, 60] make 36. <think>",
                           completion_tokens=50, **extra)


def test_countdown_reward_examples():
    result, log = trl_call(countdown_reward, [CORRECT, WRONG, NO_TAG], [NUMS] * 3, [TARGET] * 3)
    assert result == [1.0, 0.1, 0.0]
    assert log.calls == [(MALFORMED_ROWS_METRIC, 0)]


def test_names_are_stable_log_keys():
    assert countdown_reward.__name__ == "countdown_reward"
    assert {name: func.__name__ for name, func in REWARD_FUNCS.items()} == {
        "countdown": "countdown_reward",
        "countdown_subset": "countdown_reward_subset",
        "graduated": "graduated_reward",
        "length_aware": "length_aware_reward",
    }


def test_prefilled_think_does_not_matter():
    # The template may have put "<think>" in the prompt (completion starts mid-thought) or not.
    for prefix in ("", "<think>", "<think>\n", "I'll reason first. "):
        completions = [prefix + "try 79 - 43</think> <answer>(79 - (60 - 17))</answer>", prefix + "no idea"]
        assert countdown_reward(completions, nums=[NUMS] * 2, target=[TARGET] * 2) == [1.0, 0.0]


PART_CLOSE = {"type": "text", "text": "</answer>"}


def test_conversational_completions():
    completions = [
        [{"role": "assistant", "content": CORRECT}],
        [{"role": "assistant", "content": WRONG}],
        [{"role": "assistant", "content": NO_TAG}],
        # tool use: the last assistant message is the one that counts
        [
            {"role": "assistant", "content": WRONG},
            {"role": "tool", "content": "<answer>(79 - (60 - 17))</answer>"},
            {"role": "assistant", "content": CORRECT},
        ],
        [{"role": "assistant", "content": CORRECT}, {"role": "tool", "content": "ok"}],
        [{"role": "assistant", "content": [{"type": "text", "text": "<answer>(79 - (60 - 17))"}, {"type": "image"}]}],
        [{"role": "assistant", "content": [{"type": "text", "text": "<answer>79 - (60 - 17)"}, PART_CLOSE]}],
        [{"role": "assistant", "content": None}],
        [{"role": "tool", "content": CORRECT}],  # no assistant message at all
        [],
    ]
    n = len(completions)
    expected = [1.0, 0.1, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert countdown_reward(completions, nums=[NUMS] * n, target=[TARGET] * n) == expected


def test_completion_text_rejects_unknown_shapes():
    with pytest.raises(TypeError, match="completion"):
        completion_text({"role": "assistant", "content": CORRECT})
    with pytest.raises(TypeError):
        countdown_reward([42], nums=[NUMS], target=[TARGET])


@pytest.mark.parametrize(
    ("nums", "target"),
    [
        (None, 36),
        ("79 17 60", 36),
        ([], 36),
        ([79, 17, "60"], 36),
        ([79, 17, 60.0], 36),
        ([79, 17, True], 36),
        ([79, 17, -60], 36),  # unreachable without a unary minus
        ([79, 17, None], 36),
        ({79, 17, 60}, 36),  # a set would lose repeated numbers
        ({"a": 1}, 36),
        (NUMS, 36.0),
        (NUMS, "36"),
        (NUMS, None),
        (NUMS, True),
        (NUMS, [36]),
    ],
)
def test_malformed_row_scores_none_and_is_counted(nums, target):
    completions = [CORRECT, CORRECT, NO_TAG]
    result, log = trl_call(countdown_reward, completions, [NUMS, nums, nums], [TARGET, target, target])
    assert result == [1.0, None, None]
    assert log.calls == [(MALFORMED_ROWS_METRIC, 2)]


def test_numpy_integers_are_accepted_and_numpy_floats_are_not():
    np = pytest.importorskip("numpy")
    nums = [
        [np.int64(79), np.int32(17), np.int64(60)],
        np.array([79, 17, 60]),
        (79, 17, 60),
        np.array([79.0, 17.0, 60.0]),
        [np.float64(79), 17, 60],
        [np.bool_(True), 17, 60],
        np.array([[79, 17, 60]]),  # 2-D
    ]
    target = [np.int64(36), 36, np.int16(36), 36, 36, 36, 36]
    n = len(nums)
    result = countdown_reward([CORRECT] * n, nums=nums, target=target)
    assert result == [1.0, 1.0, 1.0, None, None, None, None]
    assert countdown_reward([CORRECT], nums=[NUMS], target=[np.float64(36)]) == [None]


def test_malformed_rows_are_logged_only_when_log_metric_is_callable():
    assert countdown_reward([CORRECT], nums=[None], target=[TARGET]) == [None]  # no log_metric: fine
    assert countdown_reward([CORRECT], nums=[None], target=[TARGET], log_metric=None) == [None]


@pytest.mark.parametrize(
    ("lengths", "message"),
    [
        ((2, 3, 3), "completions=2, nums=3, target=3"),
        ((3, 2, 3), "completions=3, nums=2, target=3"),
        ((3, 3, 1), "completions=3, nums=3, target=1"),
    ],
)
def test_length_mismatch_raises(lengths, message):
    n_completions, n_nums, n_target = lengths
    with pytest.raises(ValueError, match=message):
        countdown_reward([CORRECT] * n_completions, nums=[NUMS] * n_nums, target=[TARGET] * n_target)


def test_scalar_columns_are_rejected():
    with pytest.raises(TypeError, match="target must be a list"):
        countdown_reward([CORRECT], nums=[NUMS], target=TARGET)
    with pytest.raises(TypeError, match="completions must be a list"):
        countdown_reward(CORRECT, nums=[NUMS], target=[TARGET])


def test_numbers_rule_is_not_a_keyword():
    with pytest.raises(TypeError, match="countdown_subset"):
        countdown_reward([CORRECT], nums=[NUMS], target=[TARGET], numbers_rule="subset")


def test_subset_variant():
    # 7 is left unused: wrong under the Countdown rule, right under the reference setup's at-most-once rule.
    completions = ["<answer>(64 + 14) - 16</answer>", "<answer>(64 + 14) - 16 + 7 - 7</answer>"]
    nums, target = [[64, 14, 16, 7]] * 2, [62] * 2
    assert countdown_reward(completions, nums=nums, target=target) == [0.1, 0.1]
    assert countdown_reward_subset(completions, nums=nums, target=target) == [1.0, 0.1]


def test_graduated_wrapper():
    completions = [
        "<answer>10 + 8 + 2</answer>",  # 20 vs 21
        "<answer>10 * 2 - 8</answer>",  # 12
        "<answer>10 * 8 / 2</answer>",  # 40
        "<answer>10 + 10</answer>",
        "no answer",
        "<answer>5 * 2 + 10</answer>",
    ]
    nums = [[10, 8, 2]] * 5 + [[5, 2, 10]]
    target = [21] * 5 + [20]
    result, log = trl_call(graduated_reward, completions, nums, target)
    assert result == [0.7, 0.5, 0.3, 0.1, 0.0, 1.0]
    assert log.calls == [(MALFORMED_ROWS_METRIC, 0)]


def test_length_aware_reward():
    completions = [CORRECT, CORRECT, WRONG, NO_TAG, CORRECT]
    ids = [[0] * 100, [0] * 400, [0] * 1000, [0] * 1000, [0] * 400]
    nums = [NUMS] * 4 + [None]
    result, log = trl_call(length_aware_reward, completions, nums, [TARGET] * 5, completion_ids=ids)
    assert result[:4] == pytest.approx([1.0, 0.9, 0.1 * 0.84, 0.0])
    assert result[4] is None
    assert log.calls == [(MALFORMED_ROWS_METRIC, 1)]


def test_length_aware_reward_follows_the_rollouts_budget():
    """The trainer passes each rollout's ``completion_budget`` (a budget_schedule moves it): a fifth of it is free."""
    completions = [CORRECT] * 4
    ids = [[0] * 40, [0] * 80, [0] * 80, [0] * 400]
    result, _ = trl_call(length_aware_reward, completions, [NUMS] * 4, [TARGET] * 4, completion_ids=ids,
                         completion_budget=[200, 200, 400, 2000])
    assert result == pytest.approx([1.0, 0.9, 1.0, 1.0])
    with pytest.raises(ValueError, match="completion_budget=1"):
        length_aware_reward([CORRECT] * 2, nums=[NUMS] * 2, target=[TARGET] * 2, completion_ids=[[1], [1]],
                            completion_budget=[200])


def test_length_aware_reward_needs_completion_ids():
    with pytest.raises(ValueError, match="completion_ids"):
        length_aware_reward([CORRECT], nums=[NUMS], target=[TARGET])
    with pytest.raises(ValueError, match="completion_ids=1"):
        length_aware_reward([CORRECT] * 2, nums=[NUMS] * 2, target=[TARGET] * 2, completion_ids=[[1, 2]])


def test_registry():
    assert sorted(REWARD_FUNCS) == ["countdown", "countdown_subset", "graduated", "length_aware"]
    assert get_reward_funcs(["graduated", "countdown"]) == [graduated_reward, countdown_reward]
    assert get_reward_funcs(("length_aware",)) == [length_aware_reward]


def test_registry_rejects_unknown_names():
    with pytest.raises(ValueError) as excinfo:
        get_reward_funcs(["countdown", "accuracy"])
    assert str(excinfo.value) == (
        "unknown reward 'accuracy' in reward_funcs; available: countdown, countdown_subset, graduated, length_aware"
    )


@pytest.mark.parametrize(
    ("names", "error"),
    [([], ValueError), (["countdown", "countdown"], ValueError), ("countdown", TypeError)],
)
def test_registry_rejects_empty_repeated_and_bare_string(names, error):
    with pytest.raises(error):
        get_reward_funcs(names)


@pytest.mark.parametrize("name", sorted(REWARD_FUNCS))
def test_reward_functions_pickle_round_trip(name):
    func = REWARD_FUNCS[name]
    restored = pickle.loads(pickle.dumps(func))
    assert restored is func
    result, _ = trl_call(restored, [CORRECT, NO_TAG], [NUMS] * 2, [TARGET] * 2)
    assert result == [1.0, 0.0]


def test_rewards_import_no_torch():
    code = "import sys; import countdown_rl.tasks.countdown.rewards; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_module_exports_exist():
    assert all(hasattr(rewards, name) for name in rewards.__all__)
