"""Tests of countdown_rl.data.splits on the Countdown task: dedupe and the held-out split (random, tinyzero)."""

import pytest
from datasets import Dataset

from countdown_rl.tasks.countdown import TINYZERO_BOUNDS
from tests.helpers.countdown_rows import N, split_countdown, dedupe_countdown, key, plain, with_duplicates


# ----------------------------------------------------------------------------------------------------- dedupe


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
