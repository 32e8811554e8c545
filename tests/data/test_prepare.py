"""Tests of countdown_rl.data.prepare on the Countdown task: the one call from a source to prompted datasets,
the task's known datasets, and a cheap import."""

import subprocess
import sys

import pytest

from countdown_rl.data.jsonl import write_jsonl
from countdown_rl.tasks.countdown import TINYZERO_BOUNDS, CountdownTask
from countdown_rl.tasks.countdown.prompts import build_prompt
from tests.helpers.countdown_rows import TASK, N, prepare_countdown, plain, with_duplicates


# ---------------------------------------------------------------------------------------------------- prepare


def test_prepare_all_rows_keeps_every_row_as_given(tmp_path, rows):
    """eval --all_rows' data: every row of the file in its order, a repeated problem too, no hold-out; the task's
    own row checks still apply (a bad row is dropped and counted with on_invalid_rows=drop)."""
    from countdown_rl.data.arguments import DataArguments
    from countdown_rl.data.prepare import prepare_all_rows

    raw, copies = with_duplicates(rows, seed=2)
    write_jsonl([*raw, {"nums": [1, 2], "target": "x"}], tmp_path / "raw.jsonl")
    data = DataArguments(dataset_name=str(tmp_path / "raw.jsonl"), on_invalid_rows="drop")
    scored, info = prepare_all_rows(data)
    assert copies > 0 and plain(scored) == plain(raw)
    assert (info.raw, info.invalid_dropped, info.duplicates_removed, info.train, info.test) == (
        len(raw) + 1, 1, 0, 0, len(raw))
    assert info.split_method == "all rows" and scored[0]["prompt"] == build_prompt(raw[0]["nums"], raw[0]["target"],
                                                                                    "r1_zero")


def test_prepare_r1_zero(tmp_path, rows):
    raw, copies = with_duplicates(rows, seed=2)
    write_jsonl(raw, tmp_path / "raw.jsonl")
    train, test, info = prepare_countdown(tmp_path / "raw.jsonl", test_size=10, seed=1)
    assert (info.raw, info.invalid_dropped, info.duplicates_removed) == (len(raw), 0, copies)
    assert (info.train, info.test) == (len(train), len(test)) == (N - 10, 10)
    assert info.as_dict()["split_method"] == "random"
    for ds in (train, test):
        assert ds.column_names == ["nums", "target", "prompt"]
        for r in ds:
            assert r["prompt"] == build_prompt(r["nums"], r["target"], "r1_zero")
            assert r["prompt"].endswith("<think>")


def test_prepare_chat_and_tinyzero(tmp_path, rows):
    write_jsonl(rows, tmp_path / "raw.jsonl")
    train, test, info = prepare_countdown(
        tmp_path / "raw.jsonl", template="chat", split_method="tinyzero", bounds=(50, 56)
    )
    assert plain(test) == rows[50:56] and plain(train) == rows[:50]
    assert (info.train, info.test, info.duplicates_removed, info.split_method) == (50, 6, 0, "tinyzero")
    prompt = test[0]["prompt"]
    assert [m["role"] for m in prompt] == ["system", "user"]
    assert str(rows[50]["nums"]) in prompt[1]["content"]


def test_prepare_rejects_unknown_template_and_method(tmp_path, rows):
    write_jsonl(rows, tmp_path / "raw.jsonl")
    with pytest.raises(ValueError, match="unknown prompt template 'qwen'.*'chat', 'r1_zero'"):
        prepare_countdown(tmp_path / "raw.jsonl", template="qwen")
    with pytest.raises(ValueError, match="split_method"):
        prepare_countdown(tmp_path / "raw.jsonl", split_method="first")


def test_existing_prompt_column_is_replaced(tmp_path, rows):
    write_jsonl([{**r, "prompt": "old"} for r in rows], tmp_path / "raw.jsonl")
    train, _, _ = prepare_countdown(tmp_path / "raw.jsonl", test_size=5)
    assert train.column_names == ["nums", "target", "prompt"] and train[0]["prompt"] != "old"



# ------------------------------------------------------------------------------------------------------ misc


def test_countdown_datasets_and_default():
    assert TASK.default_dataset == "justinphan3110/Countdown-Tasks-3to4"
    assert set(CountdownTask.known_datasets) == {"justinphan3110/Countdown-Tasks-3to4", "Jiayi-Pan/Countdown-Tasks-3to4"}
    assert TASK.positional_splits == {"tinyzero": TINYZERO_BOUNDS}


def test_import_does_not_load_datasets():
    code = "import sys, countdown_rl.data.prepare, countdown_rl.data.loading; print('datasets' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
