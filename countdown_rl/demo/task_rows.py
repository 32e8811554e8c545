"""The real-model demo on another task than Countdown: the task checked, and its rows made and split.

1. :func:`demo_options`: the options the demo runs with: those given, else the task's measured default
   (:data:`DEFAULT_OPTIONS`: reasoning-gym's mixture, chosen by ``benchmarks/reasoning_gym_screen.py``), and the
   transfer setting that goes with them (:data:`DEFAULT_TRANSFER`; with options of your own, none unless given).
2. :func:`check_demo_task`: the task and its options as ``train`` and ``eval`` take them, checked before any model
   loads, each problem one line: an unknown task or option, a value the task refuses (reasoning-gym: a misspelled
   dataset, with the nearest names), a task without an offline generator or without demonstrations (the format
   warm-up learns them), or without a ``chat`` prompt.
3. :func:`task_parts`: ``num_sft + num_rl + num_eval`` rows from the task's generator (seeded), prepared, split by
   :func:`countdown_rl.data.splits.split_rows` (deduped, so no problem is on two sides), cut into three disjoint
   parts: ``sft`` (the format warm-up's), ``rl`` and ``eval`` (held out); too few distinct rows is one line.
4. :func:`transfer_rows`: rows of the transfer setting (the same task, other options), none of them a problem the
   model trained on: how far what RL taught carries beyond the rows it practised on.
5. :func:`describe_task`: one line naming the task and its options, for the log, the run record and the tables.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from countdown_rl.tasks.base import Task

__all__ = ["DEFAULT_OPTIONS", "DEFAULT_TRANSFER", "check_demo_task", "demo_options", "describe_task", "task_parts",
           "transfer_rows"]

# The demo's options by task where none are given: reasoning-gym's default (one four-digit chain_sum) is beyond a
# small model. This mixture is where SmolLM2-135M-Instruct had RL signal after the format warm-up (greedy 17-36%,
# pass@8 39-72%, far above a constant answer; benchmarks/results/real-model.md, "Where a small model has RL signal"),
# less word_sorting, which the RL stage moved by 3 points where it moved one-digit arithmetic by 23-29 (seed 0);
# number_sorting, which it moved by 2, was kept (no reason was recorded for the difference).
_MIXTURE = {
    "chain_sum": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1},
    "basic_arithmetic": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1,
                         "operators": ["+", "-", "*"], "allow_parentheses": False, "allow_negation": False},
    "number_sorting": {"min_numbers": 3, "max_numbers": 3, "min_decimals": 0, "max_decimals": 0, "min_value": 0,
                       "max_value": 50},
}
DEFAULT_OPTIONS: dict[str, tuple[str, ...]] = {"reasoning_gym": (
    f"datasets={','.join(f'{name}:1' for name in _MIXTURE)}", f"config={json.dumps(_MIXTURE, sort_keys=True)}")}
# The transfer setting of each default: rows kept out of training (reasoning-gym: sums of three one-digit numbers, a
# level above the two-term sums trained on).
DEFAULT_TRANSFER: dict[str, tuple[str, ...]] = {"reasoning_gym": (
    "datasets=chain_sum", 'config={"chain_sum": {"max_digits": 1, "max_terms": 3, "min_digits": 1, "min_terms": 3}}')}
# How many rows are drawn for each one wanted: generators repeat problems, and the split keeps each once.
DRAW_FACTOR = 2


def check_demo_task(name: str, options: Sequence[str] = ()) -> Task:
    """The task ``name`` with ``options`` (``key=value`` items), ready for the demo; a ValueError (one line) when not.

    >>> check_demo_task("format_copy", ["max_digits=3"]).name
    'format_copy'
    >>> check_demo_task("gsm8k")
    Traceback (most recent call last):
    ...
    ValueError: --task gsm8k has no demonstrations (Task.demonstration) for the demo's format warm-up to learn
    """
    from countdown_rl.tasks import get_task
    from countdown_rl.tasks.base import Task

    task = get_task(name, list(options))
    if type(task).generate is Task.generate:
        raise ValueError(f"--task {name} has no offline generator (Task.generate): the demo makes its rows with one")
    if type(task).demonstration is Task.demonstration:
        raise ValueError(f"--task {name} has no demonstrations (Task.demonstration) for the demo's format warm-up "
                         "to learn")
    if "chat" not in task.prompt_templates:
        raise ValueError(f"--task {name} has no chat prompt template (the demo prompts a real model in its chat "
                         f"template); its templates: {sorted(task.prompt_templates)}")
    return task


def demo_options(name: str, options: Sequence[str] = (), transfer: Sequence[str] | None = None
                 ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(task options, transfer options)`` the demo runs with: ``options`` or the task's default
    (:data:`DEFAULT_OPTIONS`); ``transfer`` or, with the default options only, the default's transfer setting.

    >>> demo_options("format_copy", ["max_digits=3"])
    (('max_digits=3',), ())
    >>> demo_options("format_copy", ["max_digits=3"], ["max_digits=5"])
    (('max_digits=3',), ('max_digits=5',))
    """
    given = tuple(str(item) for item in options)
    if given:
        return given, tuple(transfer or ())
    default = DEFAULT_OPTIONS.get(name, ())
    return default, tuple(DEFAULT_TRANSFER.get(name, ()) if transfer is None and default else transfer or ())


def describe_task(task: Task, options: Sequence[str] = ()) -> str:
    """One line naming the task and its options.

    >>> from countdown_rl.tasks import get_task
    >>> describe_task(get_task("format_copy", ["max_digits=3"]), ["max_digits=3"])
    'generated format_copy rows (max_digits=3)'
    """
    return f"generated {task.name} rows" + (f" ({' '.join(options)})" if options else "")


def task_parts(task: Task, num_sft: int, num_rl: int, num_eval: int, seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    """``{"sft", "rl", "eval"}``: disjoint parts of the task's generated rows (prepared), fixed per seed.

    >>> from countdown_rl.tasks import get_task
    >>> parts = task_parts(get_task("format_copy", ["max_digits=3"]), 8, 4, 2)
    >>> [len(parts[name]) for name in ("sft", "rl", "eval")]
    [8, 4, 2]
    """
    from countdown_rl.data.splits import split_rows

    counts = {"sft": num_sft, "rl": num_rl, "eval": num_eval}
    if any(count <= 0 for count in counts.values()):
        raise ValueError(f"every part needs rows, got {counts}")
    wanted = num_sft + num_rl + num_eval
    rows = [task.prepare_row(row) for row in task.generate(DRAW_FACTOR * wanted, seed=seed)]
    train, test, _ = split_rows(task, rows, test_size=num_eval, seed=seed)
    if len(train) < num_sft + num_rl:
        raise ValueError(f"task {task.name}: {len(train) + len(test)} distinct rows among {len(rows)} generated, "
                         f"{wanted} wanted ({counts}); choose options with more distinct problems, or fewer rows")
    return {"sft": train[:num_sft], "rl": train[num_sft: num_sft + num_rl], "eval": test}


def transfer_rows(task: Task, num: int, seed: int, trained_on: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``num`` prepared rows of ``task`` (the transfer setting), none of them a problem of ``trained_on`` (prepared
    rows of the same task: its ``dedupe_key``) nor repeated; fixed per seed. Too few distinct rows is one line.

    >>> from countdown_rl.tasks import get_task
    >>> task = get_task("format_copy", ["max_digits=3"])
    >>> trained = task_parts(task, 8, 4, 2)
    >>> rows = transfer_rows(get_task("format_copy", ["max_digits=5"]), 4, 1, trained["sft"] + trained["rl"])
    >>> len(rows), len({str(row) for row in rows})
    (4, 4)
    """
    if num <= 0:
        raise ValueError(f"transfer rows: expected a positive number, got {num}")
    seen = {task.dedupe_key(row) for row in trained_on}
    drawn = DRAW_FACTOR * (num + len(seen))  # a trained problem may be drawn again: it is skipped
    rows: list[dict[str, Any]] = []
    for row in task.generate(drawn, seed=seed):
        row = task.prepare_row(row)
        key = task.dedupe_key(row)
        if key not in seen:
            seen.add(key)
            rows.append(row)
        if len(rows) == num:
            return rows
    raise ValueError(f"task {task.name}: the transfer setting gave {len(rows)} new distinct rows among {drawn} "
                     f"generated, {num} wanted; choose options with more distinct problems")
