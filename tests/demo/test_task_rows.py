"""The real-model demo's rows for another task than Countdown: the task's checks and its three disjoint parts."""

import doctest

import pytest

from countdown_rl.demo import task_rows
from countdown_rl.demo.task_rows import (DEFAULT_OPTIONS, DEFAULT_TRANSFER, check_demo_task, demo_options,
                                         describe_task, task_parts, transfer_rows)
from countdown_rl.tasks import TASKS, get_task
from countdown_rl.tasks.base import Task
from countdown_rl.tasks.format_copy import FormatCopyTask


class NoGenerator(FormatCopyTask):
    """A task plug-in with demonstrations and no offline generator (every registered one has both)."""

    name = "no_generator"
    generate = Task.generate


def test_a_task_without_a_generator_is_one_line(monkeypatch):
    monkeypatch.setitem(TASKS, "no_generator", f"{__name__}:NoGenerator")
    with pytest.raises(ValueError, match=r"^--task no_generator has no offline generator \(Task.generate\): the demo "
                       "makes its rows with one$"):
        check_demo_task("no_generator")


def test_the_default_setting_and_its_transfer_setting():
    options, transfer = demo_options("reasoning_gym")
    assert options == DEFAULT_OPTIONS["reasoning_gym"] and transfer == DEFAULT_TRANSFER["reasoning_gym"]
    trained = {spec.name for spec in check_demo_task("reasoning_gym", options).options.specs}
    assert len(trained) >= 2  # a mixture
    assert check_demo_task("reasoning_gym", transfer).options.specs  # a setting the task takes
    assert transfer != options
    # options of your own: no transfer setting unless one is given
    assert demo_options("reasoning_gym", ["datasets=chain_sum"]) == (("datasets=chain_sum",), ())
    assert demo_options("reasoning_gym", ["datasets=chain_sum"], ["datasets=lcm"]) == (("datasets=chain_sum",),
                                                                                       ("datasets=lcm",))
    assert demo_options("reasoning_gym", [], []) == (options, ())  # the default, its transfer setting turned off


def test_the_transfer_rows_hold_no_trained_problem_and_are_fixed_per_seed():
    small = '{"chain_sum": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}}'  # 200 sums
    task = get_task("reasoning_gym", ["datasets=chain_sum", f"config={small}"])
    parts = task_parts(task, 60, 40, 20, seed=0)
    trained = parts["sft"] + parts["rl"] + parts["eval"]
    rows = transfer_rows(task, 50, 5, trained)  # the same setting: only its problems not in the parts
    keys = [task.dedupe_key(row) for row in rows]
    assert len(rows) == 50 and len(set(keys)) == 50
    assert not set(keys) & {task.dedupe_key(row) for row in trained}
    assert transfer_rows(task, 50, 5, trained) == rows and transfer_rows(task, 50, 6, trained) != rows
    with pytest.raises(ValueError, match=r"^task reasoning_gym: the transfer setting gave \d+ new distinct rows among "
                       r"\d+ generated, 200 wanted; choose options with more distinct problems$"):
        transfer_rows(task, 200, 5, trained)


def test_the_parts_are_disjoint_fixed_per_seed_and_prepared():
    task = get_task("reasoning_gym", ["datasets=chain_sum"])
    parts = task_parts(task, 12, 6, 4, seed=3)
    assert [len(parts[name]) for name in ("sft", "rl", "eval")] == [12, 6, 4]
    keys = {name: {task.dedupe_key(row) for row in rows} for name, rows in parts.items()}
    assert not (keys["sft"] & keys["rl"] or keys["sft"] & keys["eval"] or keys["rl"] & keys["eval"])
    assert all(task.row_problem(row) is None for rows in parts.values() for row in rows)
    assert task_parts(task, 12, 6, 4, seed=3) == parts and task_parts(task, 12, 6, 4, seed=4) != parts


def test_too_few_distinct_rows_is_one_line():
    small = '{"chain_sum": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}}'  # 200 sums
    task = get_task("reasoning_gym", ["datasets=chain_sum", f"config={small}"])
    with pytest.raises(ValueError, match=r"^task reasoning_gym: 200 distinct rows among 1200 generated, 600 wanted "
                       r"\({'sft': 300, 'rl': 200, 'eval': 100}\); choose options with more distinct problems, or "
                       "fewer rows$"):
        task_parts(task, 300, 200, 100)


def test_the_description_names_the_options():
    task = get_task("reasoning_gym", ["datasets=chain_sum"])
    assert describe_task(task, ["datasets=chain_sum"]) == "generated reasoning_gym rows (datasets=chain_sum)"


def test_the_examples_in_the_docstrings_hold():
    assert doctest.testmod(task_rows).failed == 0
