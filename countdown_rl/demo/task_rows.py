"""The real-model demo on another task than Countdown: the task checked, and its rows made and split.

1. :func:`check_demo_task`: the task and its options as ``train`` and ``eval`` take them, checked before any model
   loads, each problem one line: an unknown task or option, a value the task refuses (reasoning-gym: a misspelled
   dataset, with the nearest names), a task without an offline generator or without demonstrations (the format
   warm-up learns them), or without a ``chat`` prompt; and an option the demo needs given (:data:`REQUIRED_OPTIONS`:
   reasoning-gym's datasets, as no default mixture has been measured for the demo).
2. :func:`task_parts`: ``num_sft + num_rl + num_eval`` rows from the task's generator (seeded), prepared, split by
   :func:`countdown_rl.data.splits.split_rows` (deduped, so no problem is on two sides), cut into three disjoint
   parts: ``sft`` (the format warm-up's), ``rl`` and ``eval`` (held out); too few distinct rows is one line.
3. :func:`describe_task`: one line naming the task and its options, for the log, the run record and the tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from countdown_rl.tasks.base import Task

__all__ = ["REQUIRED_OPTIONS", "check_demo_task", "describe_task", "task_parts"]

# Options the demo needs given, by task: the task's default is not a measured choice for the demo.
REQUIRED_OPTIONS = {"reasoning_gym": ("datasets", ("datasets=NAME or a mixture NAME:WEIGHT,... (e.g. "
                                                  "datasets=chain_sum); no default mixture has been measured for the "
                                                  "demo"))}
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

    required = REQUIRED_OPTIONS.get(name)
    if required is not None and not any(str(item).partition("=")[0].strip() == required[0] for item in options):
        raise ValueError(f"--task {name} needs --task_options {required[1]}")
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
