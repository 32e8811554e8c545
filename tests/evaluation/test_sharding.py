"""Evaluation shards (``countdown_rl.evaluation.sharding``); the shards of a real two-process evaluation:
tests/runs/test_engine.py."""

import doctest

import pytest

from countdown_rl.evaluation import sharding
from countdown_rl.evaluation.sharding import padded_shard


def test_the_module_examples_hold():
    assert doctest.testmod(sharding).failed == 0


def test_every_row_lands_in_one_shard_in_order():
    rows = list(range(7))
    shards = [padded_shard(rows, 3, i, pad=False) for i in range(3)]
    assert [part for part, _ in shards] == [[0, 1, 2], [3, 4], [5, 6]]
    assert [padding for _, padding in shards] == [0, 0, 0]
    assert [padded_shard(rows, 3, i, pad=True) for i in range(3)] == [([0, 1, 2], 0), ([3, 4, 0], 1), ([5, 6, 0], 1)]


@pytest.mark.parametrize("rows", [0, 1, 5, 7, 8])
@pytest.mark.parametrize("shards", [1, 2, 3])
def test_padded_shards_have_one_length_and_count_every_row_once(rows, shards):
    data = list(range(rows))
    parts = [padded_shard(data, shards, i, pad=True) for i in range(shards)]
    assert len({len(part) for part, _ in parts}) == 1  # every rank runs the same batches
    kept = [x for part, padding in parts for x in part[:len(part) - padding]]
    assert kept == data  # in order, each once, after dropping the padding
    assert [p for p, _ in (padded_shard(data, shards, i, pad=False) for i in range(shards))] == [
        part[:len(part) - padding] for part, padding in parts]
