"""GSM8KTask (countdown_rl.tasks.gsm8k): rows, options, the registry and dataset facts."""

from __future__ import annotations

import json

import pytest

from countdown_rl.tasks import get_task
from countdown_rl.tasks.gsm8k import GSM8KTask
from countdown_rl.tasks.gsm8k.verifier import DEFAULT_ANSWER_ORDER
from tests.helpers.task_samples import GOLD_ROW, REAL_ROW


# ------------------------------------------------------------------------------------------------------ rows


def test_prepare_row_reads_the_gold_after_the_marks():
    task = GSM8KTask()
    row = task.prepare_row(REAL_ROW)
    assert row == {**REAL_ROW, "gold": "72"}  # other columns kept
    assert task.row_problem(row) is None
    assert task.prepare_row({"question": "Q?", "answer": "steps\n#### 1,600"})["gold"] == "1600"
    assert task.prepare_row({"question": "Q?", "answer": "#### -3"})["gold"] == "-3"
    assert task.prepare_row({"question": "Q?", "answer": "#### 2.50"})["gold"] == "5/2"


def test_prepare_row_keeps_an_existing_gold():
    task = GSM8KTask()
    assert task.prepare_row(GOLD_ROW) == GOLD_ROW
    assert task.prepare_row({"question": "Q?", "gold": 72})["gold"] == "72"
    assert task.prepare_row({"question": "Q?", "gold": "1,600", "answer": "#### 9"})["gold"] == "1600"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "Q?", "answer": "She has 5 apples."}, "'answer' has no '#### <number>' line"),
        ({"question": "Q?", "answer": "#### five"}, "'answer' has 'five' after '####', expected a number"),
        ({"question": "Q?", "answer": "####"}, "'answer' has '' after '####', expected a number"),
        ({"question": "Q?", "answer": 72}, "'answer' is 72, expected a worked solution"),
        ({"question": "Q?"}, "'answer' is missing"),
        ({"question": "Q?", "gold": "abc"}, "'gold' is 'abc', expected a number"),
    ],
)
def test_prepare_row_errors_name_the_column(row, message):
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace("$", r"\$")):
        GSM8KTask().prepare_row(row)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "Q?", "gold": "abc"}, "'gold' is 'abc', expected a number"),
        ({"question": "Q?", "gold": 7.5}, "'gold' is 7.5, expected a number"),
        ({"question": "Q?", "gold": None}, "'gold' is None, expected a number"),
        ({"question": "Q?", "gold": None, "answer": None}, "'answer' is None, expected a worked solution ending"),
        ({"question": "", "gold": "72"}, "'question' is '', expected non-empty text"),
        ({"question": None, "gold": "72"}, "'question' is None, expected non-empty text"),
        ({"gold": "72"}, "'question' is missing"),
        ({"question": "Q?"}, "'gold' is missing"),
    ],
)
def test_row_problem_names_the_column(row, message):
    assert GSM8KTask().row_problem(row).startswith(message)


def test_a_null_answer_reaches_row_problem():
    # The loader probes a source's columns with all-None values; a null answer must not hide the gold column.
    task = GSM8KTask()
    row = task.prepare_row({"question": None, "answer": None})
    assert "gold" in row and task.row_problem({**row, "question": "Q?"}).startswith("'answer' is None")


def test_the_data_loader_reads_the_source_layout(tmp_path):
    from countdown_rl.data.loading import load_rows

    path = tmp_path / "gsm8k.jsonl"
    rows = [REAL_ROW, {"question": "Q2?", "answer": "1+1 = <<1+1=2>>2\n#### 2"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded, raw, dropped, _source = load_rows(get_task("gsm8k"), path)
    assert [r["gold"] for r in loaded] == ["72", "2"] and (raw, dropped) == (2, 0)
    path.write_text(json.dumps(REAL_ROW) + "\n" + json.dumps({"question": "Q?", "answer": "no marks"}) + "\n")
    with pytest.raises(ValueError, match=r"row 1 .*'answer' has no '#### <number>' line"):
        load_rows(get_task("gsm8k"), path)


def test_dedupe_key_and_difficulty():
    task = GSM8KTask()
    assert task.dedupe_key({"question": "How  many\nclips? "}) == task.dedupe_key({"question": "How many clips?"})
    assert task.dedupe_key({"question": "How many clips?"}) != task.dedupe_key({"question": "How many pens?"})
    assert task.difficulty(REAL_ROW) == 2.0
    assert task.difficulty({"answer": "a\n\nb\nc <<1+1=2>>2\n#### 2"}) == 3.0  # blank lines are not steps
    assert task.difficulty(GOLD_ROW) == 0.0


# --------------------------------------------------------------------------------------------------- options


def test_options_parse():
    assert get_task("gsm8k").options.answer_order == DEFAULT_ANSWER_ORDER == ("tags", "boxed", "answer_is")
    assert get_task("gsm8k", ["answer_order=tags, boxed"]).options.answer_order == ("tags", "boxed")
    assert get_task("gsm8k", {"answer_order": ["last_number"]}).options.answer_order == ("last_number",)
    assert get_task("gsm8k", {"answer_order": "boxed,tags"}).options.answer_order == ("boxed", "tags")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["order=tags"], "unknown gsm8k option 'order'; known: answer_order"),
        (["answer_order=tags,guess"], "answer_order='tags,guess': expected distinct methods"),
        (["answer_order="], "answer_order='': expected distinct methods"),
        (["answer_order=tags,tags"], "answer_order='tags,tags': expected distinct methods"),
        (["answer_order"], "is not key=value"),
    ],
)
def test_bad_options_are_one_line_errors_naming_the_key(options, message):
    with pytest.raises(ValueError) as err:
        get_task("gsm8k", options)
    assert message in str(err.value) and "\n" not in str(err.value)


# --------------------------------------------------------------------------------------------------- prompts


def test_registry_and_dataset_facts():
    task = get_task("gsm8k")
    assert isinstance(task, GSM8KTask) and task.name == "gsm8k"
    assert task.columns == ("question", "gold")
    assert task.default_dataset == "openai/gsm8k"
    assert task.known_datasets == {"openai/gsm8k": {"config": "main", "train_split": "train", "test_split": "test"}}
    assert task.default_template == "chat" and task.default_reward_funcs == ("gsm8k",)
