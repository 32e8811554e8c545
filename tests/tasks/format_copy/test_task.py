"""FormatCopyTask (countdown_rl.tasks.format_copy): rows, options, the registry."""

from __future__ import annotations

import pytest

from countdown_rl.tasks import get_task
from countdown_rl.tasks.format_copy import FormatCopyTask
from countdown_rl.tasks.format_copy.verifier import MAX_DIGITS


# ----------------------------------------------------------------------------------------------------- rows


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"number": "12"}, "'number' is '12', expected an integer of at most 18 digits"),
        ({"number": 1.5}, "'number' is 1.5, expected an integer"),
        ({"number": None}, "'number' is None, expected an integer"),
        ({"number": True}, "'number' is True, expected an integer"),
        ({"number": 10**MAX_DIGITS}, "'number' is 1000000000000000000, expected an integer of at most 18 digits"),
        ({}, "'number' is missing"),
    ],
)
def test_row_problem_names_the_column(row, message):
    assert FormatCopyTask().row_problem(row).startswith(message)


def test_valid_rows_dedupe_and_difficulty():
    task = FormatCopyTask()
    assert task.row_problem({"number": 4821}) is None and task.row_problem({"number": -5}) is None
    assert task.prepare_row({"number": 7}) == {"number": 7}
    assert task.dedupe_key({"number": 7}) == task.dedupe_key({"number": 7, "other": 1})
    assert task.dedupe_key({"number": 7}) != task.dedupe_key({"number": 8})
    assert [task.difficulty({"number": n}) for n in (0, 7, 42, 4821, -305)] == [1.0, 1.0, 2.0, 4.0, 3.0]


# -------------------------------------------------------------------------------------------------- options


def test_options_parse():
    assert (get_task("format_copy").options.min_digits, get_task("format_copy").options.max_digits) == (1, 4)
    options = get_task("format_copy", ["min_digits=2", "max_digits=6"]).options
    assert (options.min_digits, options.max_digits) == (2, 6)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["digits=3"], "unknown format_copy option 'digits'; known: max_digits, min_digits"),
        (["min_digits=x"], "option min_digits='x': expected an int"),
        (["min_digits=0"], "min_digits=0: expected 1 to 18"),
        (["max_digits=19"], "max_digits=19: expected min_digits (1) to 18"),
        (["min_digits=5", "max_digits=3"], "max_digits=3: expected min_digits (5) to 18"),
        (["min_digits=2", "min_digits=3"], "option 'min_digits' given twice"),
    ],
)
def test_bad_options_are_one_line_errors_naming_the_key(options, message):
    with pytest.raises(ValueError) as err:
        get_task("format_copy", options)
    assert message in str(err.value) and "\n" not in str(err.value)


# -------------------------------------------------------------------------------------------------- prompts


def test_registry_and_facts():
    task = get_task("format_copy")
    assert isinstance(task, FormatCopyTask) and task.name == "format_copy"
    assert task.columns == ("number",) and task.default_dataset == "generated"
    assert task.default_template == "plain" and task.default_reward_funcs == ("format_copy",)
