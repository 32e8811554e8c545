"""Tests of countdown_rl.data.loading on the Countdown task (offline): files, folders, Hub-shaped folders,
validation naming the source, row and line. Other tasks' rows go through the same functions in tests/tasks/test_registry.py."""

import json
import logging

import pytest
from datasets import Dataset, DatasetDict

from countdown_rl.data.jsonl import write_jsonl
from tests.helpers.countdown_rows import N, load_countdown, prepare_countdown, plain


# ------------------------------------------------------------------------------------------------------ load


def test_load_jsonl(tmp_path, rows):
    path = tmp_path / "p.jsonl"
    assert write_jsonl(rows, path) == N
    assert plain(load_countdown(path)) == rows
    assert plain(load_countdown(str(path))) == rows


def test_load_json_array_and_columns(tmp_path, rows):
    (tmp_path / "a.json").write_text(json.dumps(rows))
    assert plain(load_countdown(tmp_path / "a.json")) == rows
    columns = {"nums": [r["nums"] for r in rows], "target": [r["target"] for r in rows]}
    (tmp_path / "c.json").write_text(json.dumps(columns))
    assert plain(load_countdown(tmp_path / "c.json")) == rows


def test_load_parquet(tmp_path, rows, cache):
    Dataset.from_list(rows).to_parquet(str(tmp_path / "p.parquet"))
    assert plain(load_countdown(tmp_path / "p.parquet", cache_dir=cache)) == rows


def test_load_save_to_disk_folders(tmp_path, rows):
    Dataset.from_list(rows).save_to_disk(str(tmp_path / "saved"))
    assert plain(load_countdown(tmp_path / "saved")) == rows
    both = DatasetDict(train=Dataset.from_list(rows[:40]), test=Dataset.from_list(rows[40:]))
    both.save_to_disk(str(tmp_path / "dd"))
    assert plain(load_countdown(tmp_path / "dd", split="test")) == rows[40:]
    with pytest.raises(ValueError, match="available splits"):
        load_countdown(tmp_path / "dd", split="validation")


def test_load_folder_of_files(tmp_path, rows, cache):
    folder = tmp_path / "repo"
    write_jsonl(rows[:40], folder / "data" / "train-00000.jsonl")
    Dataset.from_list(rows[40:]).to_parquet(str(folder / "data" / "test-00000.parquet"))
    assert plain(load_countdown(folder, cache_dir=cache)) == rows[:40]
    assert plain(load_countdown(folder, split="test", cache_dir=cache)) == rows[40:]
    plain_folder = tmp_path / "shards"  # no split names: every file is train, in name order
    write_jsonl(rows[:25], plain_folder / "a.jsonl")
    write_jsonl(rows[25:], plain_folder / "b.jsonl")
    assert plain(load_countdown(plain_folder)) == rows


def test_missing_path_is_file_not_found(tmp_path):
    for name in [str(tmp_path / "nope.jsonl"), "nope.jsonl", "./data/x", "a/b/c"]:
        with pytest.raises(FileNotFoundError, match="no such file"):
            load_countdown(name)


def test_extra_columns_are_kept(tmp_path):
    write_jsonl([{"nums": [1, 2], "target": 3, "solution": "1 + 2"}], tmp_path / "p.jsonl")
    assert load_countdown(tmp_path / "p.jsonl")[0] == {"nums": [1, 2], "target": 3, "solution": "1 + 2"}


# ------------------------------------------------------------------------------------------------ validation


def test_missing_columns_error_names_found_columns(tmp_path):
    write_jsonl([{"numbers": [1, 2], "target": 3}], tmp_path / "p.jsonl")
    with pytest.raises(ValueError) as err:
        load_countdown(tmp_path / "p.jsonl")
    message = str(err.value)
    assert "\n" not in message and "p.jsonl" in message and "'nums'" in message and "'numbers'" in message


def test_missing_columns_in_a_parquet_file(tmp_path, cache):
    Dataset.from_dict({"nums": [[1]], "goal": [1]}).to_parquet(str(tmp_path / "mine.parquet"))
    with pytest.raises(ValueError, match=r"mine\.parquet: missing column\(s\) \['target'\].*'nums', 'goal'"):
        load_countdown(tmp_path / "mine.parquet", cache_dir=cache)


@pytest.mark.parametrize(
    "bad,expected",
    [
        ({"target": "abc"}, "'target' is 'abc', expected an integer"),
        ({"target": 3.5}, "'target' is 3.5, expected an integer"),
        ({"target": True}, "'target' is True, expected an integer"),
        ({"target": None}, "'target' is None, expected an integer"),
        ({"nums": []}, "'nums' is [], expected a non-empty list of non-negative integers"),
        # the same rule as the rewards: a negative number could never be used without a unary minus
        ({"nums": [1, -2]}, "'nums' is [1, -2], expected a non-empty list of non-negative integers"),
        ({"nums": [1, "2"]}, "'nums' is [1, '2'], expected a non-empty list"),
        ({"nums": [1, False]}, "'nums' is [1, False], expected"),
        ({"nums": 5}, "'nums' is 5, expected"),
    ],
)
def test_bad_row_error_names_row_and_value(tmp_path, rows, bad, expected):
    broken = [dict(r) for r in rows[:30]]
    broken[17].update(bad)
    write_jsonl(broken, tmp_path / "data.jsonl")
    with pytest.raises(ValueError) as err:
        load_countdown(tmp_path / "data.jsonl")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("row 17 of ") and "data.jsonl" in message and expected in message


def test_bad_json_lines_and_missing_keys(tmp_path):
    (tmp_path / "d.jsonl").write_text('{"nums": [1, 2], "target": 3}\n\nnot json\n')
    with pytest.raises(ValueError, match=r"row 1 of .*d\.jsonl \(line 3\): invalid JSON"):
        load_countdown(tmp_path / "d.jsonl")
    (tmp_path / "k.jsonl").write_text('{"nums": [1, 2], "target": 3}\n{"nums": [1, 2]}\n')
    with pytest.raises(ValueError, match=r"row 1 of .*'target' is missing"):
        load_countdown(tmp_path / "k.jsonl")


def test_bad_row_in_parquet(tmp_path, rows, cache):
    table = {"nums": [r["nums"] for r in rows], "target": [r["target"] for r in rows]}
    table["target"][5] = None
    Dataset.from_dict(table).to_parquet(str(tmp_path / "p.parquet"))
    with pytest.raises(ValueError, match=r"^row 5 of .*p\.parquet: 'target' is None, expected an integer$"):
        load_countdown(tmp_path / "p.parquet", cache_dir=cache)


def test_drop_invalid_rows_counts_them(tmp_path, rows, caplog):
    broken = [dict(r) for r in rows]
    for i, bad in [(3, {"target": "x"}), (10, {"nums": []}), (44, {"target": 1.5})]:
        broken[i].update(bad)
    write_jsonl(broken, tmp_path / "data.jsonl")
    with open(tmp_path / "data.jsonl", "a") as f:
        f.write("{broken\n")
    with caplog.at_level(logging.WARNING, logger="countdown_rl.data.loading"):
        ds = load_countdown(tmp_path / "data.jsonl", on_invalid="drop")
    assert plain(ds) == [r for i, r in enumerate(rows) if i not in (3, 10, 44)]
    assert "dropped 4 invalid row(s)" in caplog.text
    train, test, info = prepare_countdown(tmp_path / "data.jsonl", test_size=5, on_invalid="drop")
    assert (info.raw, info.invalid_dropped, info.train, info.test) == (N + 1, 4, N - 3 - 5, 5)


def test_on_invalid_must_be_known(tmp_path, rows):
    write_jsonl(rows, tmp_path / "p.jsonl")
    with pytest.raises(ValueError, match="on_invalid"):
        load_countdown(tmp_path / "p.jsonl", on_invalid="ignore")
