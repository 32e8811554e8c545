"""MathTask (countdown_rl.tasks.math): judging, rows, levels, options, the registry."""

from __future__ import annotations

import pytest

from countdown_rl.tasks import get_task, task_class
from countdown_rl.tasks.base import Outcome, Verdict
from countdown_rl.tasks.math import MathOptions, MathTask, parse_level
from countdown_rl.tasks.math.screening import MAX_ANSWER_CHARS
from tests.helpers.task_samples import BIG, fmt


# ----------------------------------------------------------------------------------------------------------------
# judge
# ----------------------------------------------------------------------------------------------------------------

ROW = {"problem": "What is 1/2 + 1/4?", "gold": r"\frac{3}{4}"}


@pytest.mark.parametrize(
    "text,expected",
    [
        (fmt("0.75"), Verdict(Outcome.CORRECT, "0.75", 1.0)),
        (fmt("3/4"), Verdict(Outcome.CORRECT, "3/4", 1.0)),
        (r"it is \boxed{\frac34}", Verdict(Outcome.CORRECT, r"\frac34", 0.0)),  # right, r1_zero format missing
        (fmt("0.7"), Verdict(Outcome.PARTIAL, "0.7", 0.0)),
        (fmt("three quarters"), Verdict(Outcome.PARTIAL, "three quarters", 0.0)),
        (fmt(r"\boxed{0.75"), Verdict(Outcome.PARTIAL, None, 0.0)),  # unreadable box in the tags
        ("I do not know", Verdict(Outcome.FAILED, None, 0.0)),
        ("</think> <answer>0.75", Verdict(Outcome.FAILED, None, 0.0)),
    ],
)
def test_judge(text, expected):
    assert MathTask().judge(text, ROW) == expected


def test_judge_caps_the_recorded_answer():
    verdict = MathTask().judge(fmt("7" * BIG), ROW)
    assert verdict.outcome is Outcome.PARTIAL
    assert len(verdict.answer) == MAX_ANSWER_CHARS + 3


# ----------------------------------------------------------------------------------------------------------------
# Rows, options, prompts, registry
# ----------------------------------------------------------------------------------------------------------------


def test_prepare_row_takes_the_gold_from_answer_or_the_last_box():
    task = MathTask()
    lighteval = {"problem": "p", "solution": r"First $\boxed{1}$, finally $\boxed{\frac{3}{4}}$.", "level": "Level 3",
                 "type": "Algebra"}
    row = task.prepare_row(lighteval)
    assert (row["gold"], row["level"], row["type"]) == (r"\frac{3}{4}", 3, "Algebra")
    assert task.prepare_row({"problem": "p", "solution": r"so \fbox{12}"})["gold"] == "12"
    math500 = {"problem": "p", "solution": r"\boxed{0.5}", "answer": r"\frac12", "level": 2}
    assert task.prepare_row(math500)["gold"] == r"\frac12"  # the answer column wins
    assert task.prepare_row({"problem": "p", "answer": 7})["gold"] == "7"
    assert task.prepare_row({"problem": "p", "gold": "9", "level": 4}) == {"problem": "p", "gold": "9", "level": 4}
    assert task.prepare_row({"problem": "p", "solution": r"\boxed{1}", "level": "Level ?"})["level"] is None
    for row in (lighteval, math500):
        assert task.row_problem(task.prepare_row(row)) is None


@pytest.mark.parametrize(
    "row,message",
    [
        ({"problem": "p", "solution": "no box here"}, "'solution' has no complete \\boxed"),
        ({"problem": "p", "solution": r"\boxed{1"}, "'solution' has no complete \\boxed"),
        ({"problem": "p", "solution": r"\boxed{}"}, "'solution' has no complete \\boxed"),
        ({"problem": "p", "answer": ["1"]}, "'answer' is ['1']"),
        ({"problem": "p"}, "no 'answer' or 'solution' column"),
        ({"problem": "p", "solution": r"\boxed{1}", "level": "hard"}, "'level' is 'hard'"),
    ],
)
def test_prepare_row_errors_name_the_column(row, message):
    with pytest.raises(ValueError) as err:
        MathTask().prepare_row(row)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "row,message",
    [
        ({"problem": "", "gold": "1"}, "'problem' is ''"),
        ({"gold": "1"}, "'problem' is None"),
        ({"problem": "p", "gold": "  "}, "'gold' is '  '"),
        ({"problem": "p", "gold": 5}, "'gold' is 5"),
        ({"problem": "p"}, "'gold' is missing"),
    ],
)
def test_row_problem_names_the_column(row, message):
    assert message in MathTask().row_problem(row)


def test_the_dataset_probe_of_all_none_columns_keeps_gold():
    # countdown_rl.data.loading probes prepare_row with every column None: it must not fail on the values.
    probe = MathTask().prepare_row({"problem": None, "solution": None, "level": None, "type": None})
    assert "gold" in probe and MathTask().row_problem(probe) is not None


def test_level_filter_difficulty_and_dedupe():
    rows = [{"problem": f"p{k}", "gold": "1", "level": level} for k, level in
            enumerate(["Level 1", "Level 5", 5, "Level ?", None, 4])]
    assert [MathTask(["levels=5"]).filter_row(r) for r in rows] == [False, True, True, False, False, False]
    assert [MathTask(["levels=4,5"]).filter_row(r) for r in rows] == [False, True, True, False, False, True]
    assert all(MathTask().filter_row(r) for r in rows)
    assert [MathTask().difficulty(r) for r in rows] == [1.0, 5.0, 5.0, 0.0, 0.0, 4.0]
    task = MathTask()
    assert task.dedupe_key({"problem": " What is\n 1+1? "}) == task.dedupe_key({"problem": "What is 1+1?"})
    assert parse_level(" Level 2 ") == 2


def test_options():
    assert MathTask().options == MathOptions(levels=(), timeout_seconds=2.0)
    assert MathTask(["levels=5"]).options.levels == (5,)
    assert MathTask(["levels=5,4,5"]).options.levels == (4, 5)
    assert MathTask({"levels": 5}).options.levels == (5,)
    assert MathTask(["timeout_seconds=0"]).options.timeout_seconds == 0.0


@pytest.mark.parametrize(
    "options,message",
    [
        (["levels=6"], "levels"),
        (["levels=0"], "levels"),
        (["levels=hard"], "levels"),
        (["timeout_seconds=-1"], "timeout_seconds"),
        (["timeout_seconds=soon"], "timeout_seconds"),
        (["level=5"], "unknown math option 'level'"),
        (["levels"], "not key=value"),
    ],
)
def test_option_errors_are_one_line_naming_the_key(options, message):
    with pytest.raises(ValueError) as err:
        MathTask(options)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_registry():
    assert task_class("math") is MathTask
    task = get_task("math", ["levels=5"])
    assert isinstance(task, MathTask) and task.name == "math" and task.columns == ("problem", "gold")
    assert task.default_dataset in task.known_datasets and task.default_template in task.prompt_templates
    assert set(task.reward_funcs()) == {"r1_zero", "math_shaped"}
    import math

    assert math.sqrt(4) == 2.0  # the stdlib math module is not shadowed by countdown_rl.tasks.math
