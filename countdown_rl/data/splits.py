"""Dedupe and split a task's rows with no problem (``task.dedupe_key``) on both sides: a seeded random hold-out
after dedupe, or a task's positional split (Countdown's ``tinyzero``)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from countdown_rl.tasks.base import Task

__all__ = ["dedupe", "split_rows"]


def dedupe(task: Task, rows: Sequence[Mapping[str, Any]], seen: set | None = None) -> tuple[list, int]:
    """Drop rows whose ``task.dedupe_key`` appeared earlier (or is in ``seen``); ``(rows kept, number removed)``.

    >>> from countdown_rl.tasks import get_task
    >>> kept, removed = dedupe(get_task("countdown"), [{"nums": [1, 2], "target": 3}, {"nums": [2, 1], "target": 3}])
    >>> len(kept), removed
    (1, 1)
    """
    seen = set() if seen is None else seen
    keep = []
    for row in rows:
        key = task.dedupe_key(row)
        if key not in seen:
            seen.add(key)
            keep.append(row)
    return keep, len(rows) - len(keep)


def _test_count(test_size: int | float, n: int) -> int:
    if isinstance(test_size, float) and 0 < test_size < 1:
        count = round(n * test_size)
    elif isinstance(test_size, int) and not isinstance(test_size, bool):
        count = test_size
    else:
        raise ValueError(f"test_size must be an int row count or a float in (0, 1), got {test_size!r}")
    if not 0 <= count < n:
        raise ValueError(f"test_size={test_size!r} must leave 0 <= test rows < {n}, the deduped dataset's size")
    return count


def split_rows(
    task: Task,
    rows: Sequence[Mapping[str, Any]],
    test_size: int | float = 1024,
    seed: int = 42,
    method: str = "random",
    *,
    bounds: tuple[int, int] | None = None,
) -> tuple[list, list, int]:
    """Split into ``(train, test, duplicates removed)`` with no problem (``task.dedupe_key``) on both sides.

    ``"random"``: dedupe, then hold out ``test_size`` rows (a count, or a fraction in (0, 1)) chosen with ``seed``;
    each side keeps the source order. A positional method (``task.positional_splits``, e.g. Countdown's
    ``"tinyzero"``): test = rows ``[train_end, test_end)`` exactly, train = rows ``[0, train_end)`` minus repeats
    and problems in test (``bounds`` overrides the task's); ``test_size`` and ``seed`` are unused.

    >>> from countdown_rl.tasks import get_task
    >>> task = get_task("countdown")
    >>> [len(part) for part in split_rows(task, task.generate(10), test_size=3)[:2]]
    [7, 3]
    """
    if method == "random":
        rows, removed = dedupe(task, rows)  # one row per problem, so no problem can land on both sides
        count = _test_count(test_size, len(rows))
        order = list(range(len(rows)))
        random.Random(seed).shuffle(order)
        held = set(order[:count])
        train = [row for i, row in enumerate(rows) if i not in held]
        return train, [row for i, row in enumerate(rows) if i in held], removed
    if method not in task.positional_splits:
        raise ValueError(f"split method {method!r} is not one of {['random', *task.positional_splits]}")
    start, end = bounds or task.positional_splits[method]
    if not 0 < start < end:
        raise ValueError(f"{method} bounds must be (train_end, test_end) with 0 < train_end < test_end, got {(start, end)}")
    if len(rows) < end:
        raise ValueError(
            f"{method} split needs at least {end} rows (train = rows [0, {start}), test = rows [{start}, {end})), "
            f"but the dataset has {len(rows)}; use split_method='random'"
        )
    test = list(rows[start:end])
    seen = {task.dedupe_key(row) for row in test}  # test rows stay exactly as given; train gives way
    train, removed = dedupe(task, rows[:start], seen)
    return train, test, removed
