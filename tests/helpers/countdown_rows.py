"""Countdown rows for tests: the task, hand-made puzzles, and the data layer's one-call shorthands (tests/data/)."""

import random

from countdown_rl.data.loading import load_rows
from countdown_rl.data.prepare import prepare_dataset
from countdown_rl.data.splits import dedupe, split_rows
from countdown_rl.tasks import get_task

TASK = get_task("countdown")
N = 60  # rows of the ``rows`` fixture (tests/data/conftest.py)
# Hand-made puzzles for scoring by hand (one solvable, one not, two numbers).
PUZZLES = [{"nums": [7, 7, 65], "target": 51}, {"nums": [2, 3, 4], "target": 24}, {"nums": [10, 5], "target": 2}]


def load_countdown(path, **kwargs):
    return load_rows(TASK, path, **kwargs)[0]


def prepare_countdown(path, **kwargs):
    return prepare_dataset(TASK, path, **kwargs)


def split_countdown(ds, tinyzero_bounds=None, **kwargs):
    return split_rows(TASK, list(ds), bounds=tinyzero_bounds, **kwargs)[:2]


def dedupe_countdown(ds):
    return dedupe(TASK, list(ds))


def key(row):
    return (row["target"], tuple(sorted(row["nums"])))


def plain(ds):
    return [{"nums": r["nums"], "target": r["target"]} for r in ds]


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
