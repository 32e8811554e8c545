"""Tests for countdown_rl.training.data on the Countdown task: loading, validation, dedupe, splits and prompt columns
(all offline). Other tasks' rows go through the same functions in tests/test_tasks_data.py."""

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing in this project's tests may reach the Hub

import json
import logging
import random
import subprocess
import sys

import pytest
from datasets import Dataset, DatasetDict

from countdown_rl.tasks import get_task
from countdown_rl.tasks.countdown import TINYZERO_BOUNDS, CountdownTask, puzzles
from countdown_rl.tasks.countdown.prompts import build_prompt
from countdown_rl.training import data as data
from countdown_rl.training.data import dedupe, load_rows, prepare_dataset, split_rows, write_jsonl

TASK = get_task("countdown")


def load_countdown(path, **kwargs):
    return load_rows(TASK, path, **kwargs)[0]


def prepare_countdown(path, **kwargs):
    return prepare_dataset(TASK, path, **kwargs)


def split_countdown(ds, tinyzero_bounds=None, **kwargs):
    return split_rows(TASK, list(ds), bounds=tinyzero_bounds, **kwargs)[:2]


def dedupe_countdown(ds):
    return dedupe(TASK, list(ds))

N = 60


def key(row):
    return (row["target"], tuple(sorted(row["nums"])))


def plain(ds):
    return [{"nums": r["nums"], "target": r["target"]} for r in ds]


@pytest.fixture(scope="module")
def rows():
    return puzzles.generate_countdown(N, seed=7)


@pytest.fixture
def cache(tmp_path):
    return str(tmp_path / "hf-cache")  # keep datasets' parquet cache out of the user's home


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
    with caplog.at_level(logging.WARNING, logger="countdown_rl.training.data"):
        ds = load_countdown(tmp_path / "data.jsonl", on_invalid="drop")
    assert plain(ds) == [r for i, r in enumerate(rows) if i not in (3, 10, 44)]
    assert "dropped 4 invalid row(s)" in caplog.text
    train, test, info = prepare_countdown(tmp_path / "data.jsonl", test_size=5, on_invalid="drop")
    assert (info.raw, info.invalid_dropped, info.train, info.test) == (N + 1, 4, N - 3 - 5, 5)


def test_on_invalid_must_be_known(tmp_path, rows):
    write_jsonl(rows, tmp_path / "p.jsonl")
    with pytest.raises(ValueError, match="on_invalid"):
        load_countdown(tmp_path / "p.jsonl", on_invalid="ignore")


# ----------------------------------------------------------------------------------------------------- dedupe


def with_duplicates(rows, seed=0):
    """rows plus reordered (and some verbatim) copies of earlier rows, shuffled in after their originals."""
    rng = random.Random(seed)
    out = [dict(r) for r in rows]
    copies = 0
    for r in rng.sample(rows, 15):
        nums = list(r["nums"])
        rng.shuffle(nums)
        pos = rng.randint(out.index(r) + 1, len(out))  # after the original, so the original is the first occurrence
        out.insert(pos, {"nums": nums, "target": r["target"]})
        copies += 1
    return out, copies


def test_dedupe_removes_reordered_duplicates_keeping_first(rows):
    raw, copies = with_duplicates(rows)
    ds, removed = dedupe_countdown(Dataset.from_list(raw))
    assert removed == copies == len(raw) - N
    assert plain(ds) == rows  # the originals, in their order
    same, none_removed = dedupe_countdown(ds)
    assert none_removed == 0 and len(same) == N


def test_same_numbers_different_target_are_not_duplicates():
    ds = Dataset.from_list([{"nums": [1, 2, 3], "target": 6}, {"nums": [3, 2, 1], "target": 0}])
    assert dedupe_countdown(ds)[1] == 0


# ------------------------------------------------------------------------------------------------------ split


def test_random_split_sizes_no_overlap_and_determinism(rows):
    raw, copies = with_duplicates(rows, seed=1)
    ds = Dataset.from_list(raw)
    train, test = split_countdown(ds, test_size=12, seed=3)
    assert (len(train), len(test)) == (N - 12, 12)
    train_keys, test_keys = {key(r) for r in train}, {key(r) for r in test}
    assert not train_keys & test_keys
    assert train_keys | test_keys == {key(r) for r in rows}
    again_train, again_test = split_countdown(ds, test_size=12, seed=3)
    assert plain(again_test) == plain(test) and plain(again_train) == plain(train)
    other_test = split_countdown(ds, test_size=12, seed=4)[1]
    assert plain(other_test) != plain(test)


def test_split_of_a_selection_keeps_the_selected_rows(rows):
    shuffled = Dataset.from_list(rows).shuffle(seed=0)  # backed by an indices mapping
    train, test = split_countdown(shuffled, test_size=10)
    assert sorted(map(key, plain(train) + plain(test))) == sorted(map(key, rows))
    order = [key(r) for r in shuffled]  # each side keeps the selection's order
    assert [key(r) for r in test] == sorted((key(r) for r in test), key=order.index)


def test_random_split_fraction_and_bad_sizes(rows):
    ds = Dataset.from_list(rows)
    assert [len(p) for p in split_countdown(ds, test_size=0.25)] == [45, 15]
    assert [len(p) for p in split_countdown(ds, test_size=0)] == [N, 0]
    for bad in [N, N + 5, -1, 1.5, "10"]:
        with pytest.raises(ValueError, match="test_size"):
            split_countdown(ds, test_size=bad)
    with pytest.raises(ValueError, match="method"):
        split_countdown(ds, method="sequential")


def test_tinyzero_split_positions_and_leak_removal(rows):
    raw = [dict(r) for r in rows[:40]]
    # Rows [30, 35) are the test rows; plant a reordered copy of test row 31 at train position 5 and a
    # verbatim copy of train row 2 at train position 9.
    raw[5] = {"nums": list(reversed(raw[31]["nums"])), "target": raw[31]["target"]}
    raw[9] = dict(raw[2])
    train, test = split_countdown(Dataset.from_list(raw), method="tinyzero", tinyzero_bounds=(30, 35))
    assert plain(test) == raw[30:35]  # exactly the positional rows
    assert plain(train) == [r for i, r in enumerate(raw[:30]) if i not in (5, 9)]
    assert not {key(r) for r in train} & {key(r) for r in test}


def test_tinyzero_split_too_small_dataset(rows):
    assert TINYZERO_BOUNDS == (327_680, 328_704)
    with pytest.raises(ValueError, match=r"at least 328704 rows .* has 60"):
        split_countdown(Dataset.from_list(rows), method="tinyzero")
    with pytest.raises(ValueError, match="at least 70 rows"):
        split_countdown(Dataset.from_list(rows), method="tinyzero", tinyzero_bounds=(50, 70))


# ---------------------------------------------------------------------------------------------------- prepare


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


def test_write_jsonl_round_trip(tmp_path, rows):
    path = tmp_path / "deep" / "dir" / "p.jsonl"
    assert write_jsonl(iter(rows), path) == N
    assert [json.loads(line) for line in path.read_text().splitlines()] == rows


def test_countdown_datasets_and_default():
    assert TASK.default_dataset == "justinphan3110/Countdown-Tasks-3to4"
    assert set(CountdownTask.known_datasets) == {"justinphan3110/Countdown-Tasks-3to4", "Jiayi-Pan/Countdown-Tasks-3to4"}
    assert TASK.positional_splits == {"tinyzero": TINYZERO_BOUNDS}


def test_import_does_not_load_datasets():
    code = "import sys, countdown_rl.training.data; print('datasets' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
