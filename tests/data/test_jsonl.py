"""Tests of countdown_rl.data.jsonl."""

import json

from countdown_rl.data.jsonl import write_jsonl
from tests.helpers.countdown_rows import N


def test_write_jsonl_round_trip(tmp_path, rows):
    path = tmp_path / "deep" / "dir" / "p.jsonl"
    assert write_jsonl(iter(rows), path) == N
    assert [json.loads(line) for line in path.read_text().splitlines()] == rows
