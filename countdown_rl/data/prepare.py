"""One call from a task and a source to prompted training and held-out datasets.

1. Load and validate the source rows (:mod:`countdown_rl.data.loading`).
2. Keep the rows the task's options select (``task.filter_row``, e.g. MATH levels); none left is an error.
3. Dedupe on ``task.dedupe_key`` keeping the first occurrence, and split with no problem on both sides
   (:mod:`countdown_rl.data.splits`): a seeded random hold-out, the source's own evaluation split
   (``eval_dataset_split``), or a task's positional split (Countdown's ``tinyzero``).
4. Order the training rows (``data_order``, :mod:`countdown_rl.algorithms.curriculum`): as split (``random``: TRL
   shuffles), easy to hard by ``task.difficulty`` (a stable sort), or in seeded difficulty ``staged`` blocks. The
   held-out rows are never reordered.
5. Add a ``prompt`` column rendered by the task's template, keeping the task's columns next to it: TRL passes
   extra columns to reward functions as keyword arguments.

``datasets`` is imported inside the functions so that importing this module stays cheap.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from countdown_rl.algorithms.curriculum import data_order_indices
from countdown_rl.data.arguments import DataArguments, DataInfo
from countdown_rl.data.loading import load_rows
from countdown_rl.data.splits import dedupe, split_rows

if TYPE_CHECKING:
    from datasets import Dataset

    from countdown_rl.tasks.base import Task

__all__ = ["prepare_all_rows", "prepare_data", "prepare_dataset", "prompted_dataset"]

logger = logging.getLogger(__name__)


def prompted_dataset(task: Task, rows: Sequence[Mapping[str, Any]], template: str | None = None) -> Dataset:
    """``rows`` as a ``datasets.Dataset`` with a ``prompt`` column in ``template`` (default: the task's) next to the
    task's columns (TRL passes them to the reward functions).

    >>> from countdown_rl.tasks import get_task
    >>> prompted_dataset(get_task("countdown"), [{"nums": [7, 7, 65], "target": 51}]).column_names
    ['nums', 'target', 'prompt']
    """
    from datasets import Dataset

    with_prompts = [{**row, "prompt": task.prompt(row, template)} for row in rows]
    return Dataset.from_list(with_prompts)


def prepare_dataset(
    task: Task,
    name_or_path: str | os.PathLike | None = None,
    *,
    split: str = "train",
    config: str | None = None,
    eval_split: str | None = None,
    test_size: int | float = 1024,
    seed: int = 42,
    template: str | None = None,
    split_method: str = "random",
    on_invalid: str = "raise",
    num_generated: int = 2048,
    bounds: tuple[int, int] | None = None,
    cache_dir: str | None = None,
    require_train: bool = True,
    order: str = "random",
    stages: int | None = None,
    replay: float | None = None,
) -> tuple[Dataset, Dataset, DataInfo]:
    """Load, validate, filter, dedupe, split, order and add a ``prompt`` column: ``(train, test, info)``.

    Rows keep the task's columns next to ``prompt`` (TRL hands them to reward functions). With ``eval_split``
    the held-out rows are (a seeded sample of at most ``test_size`` of) that split of the source, and training
    rows whose problem is among them are removed. ``require_train=False`` (evaluation) accepts a source whose rows
    are all held out, e.g. ``HuggingFaceH4/MATH-500`` with ``split="test", eval_split="test"``. ``order`` (with
    ``stages`` and ``replay`` for ``"staged"``, shuffled with ``seed``) orders the training rows only, after the
    split (:func:`countdown_rl.algorithms.curriculum.data_order_indices`).

    >>> import tempfile, os
    >>> from countdown_rl.tasks import get_task
    >>> task = get_task("countdown")
    >>> path = os.path.join(tempfile.mkdtemp(), "p.jsonl")
    >>> from countdown_rl.data.jsonl import write_jsonl
    >>> _ = write_jsonl(task.generate(20), path)
    >>> train, test, info = prepare_dataset(task, path, test_size=4)
    >>> info.train, info.test, train.column_names
    (16, 4, ['nums', 'target', 'prompt'])
    """
    template = template or task.default_template
    if template not in task.prompt_templates:
        raise ValueError(f"unknown prompt template {template!r}; choose one of {sorted(task.prompt_templates)}")
    if split_method not in ("random", *task.positional_splits):
        raise ValueError(f"split_method must be one of {['random', *task.positional_splits]}, got {split_method!r}")
    load = dict(config=config, on_invalid=on_invalid, num_generated=num_generated, seed=seed, cache_dir=cache_dir)
    rows, raw, dropped, source = load_rows(task, name_or_path, split, **load)
    kept = [row for row in rows if task.filter_row(row)]
    filtered = len(rows) - len(kept)
    if not kept:
        raise ValueError(f"{source}: no rows left after filtering with task_options {task.options}")
    if eval_split is None:
        train, test, removed = split_rows(task, kept, test_size, seed, split_method, bounds=bounds)
    else:
        held, _, held_dropped, _ = load_rows(task, name_or_path, eval_split, **load)
        held, _ = dedupe(task, [row for row in held if task.filter_row(row)])
        if not held:
            raise ValueError(f"{source}: split {eval_split!r} has no rows left after filtering")
        if len(held) > test_size:
            held = [held[i] for i in sorted(random.Random(seed).sample(range(len(held)), test_size))]
        train, removed = dedupe(task, kept, {task.dedupe_key(row) for row in held})
        test, dropped = held, dropped + held_dropped
        split_method = f"{eval_split} split"
    if not train and require_train:
        raise ValueError(f"{source}: no training rows left after the split")
    if order != "random":
        indices = data_order_indices([task.difficulty(row) for row in train], order, stages=stages, replay=replay,
                                     seed=seed)
        train = [train[i] for i in indices]
    info = DataInfo(task.name, source, raw, dropped, filtered, removed, len(train), len(test), split_method, order)
    logger.info("prepared %s: %s", source, info.as_dict())
    return prompted_dataset(task, train, template), prompted_dataset(task, test, template), info


def prepare_all_rows(args: DataArguments, task: Task | None = None) -> tuple[Dataset, DataInfo]:
    """Every row of ``args.dataset_split`` that the task's options select, as given (no dedupe, no hold-out), with
    a ``prompt`` column: what ``countdown-rl eval --all_rows`` scores, e.g. a whole file of puzzles.

    >>> import tempfile, os
    >>> from countdown_rl.data.jsonl import write_jsonl
    >>> from countdown_rl.tasks import get_task
    >>> path = os.path.join(tempfile.mkdtemp(), "p.jsonl")
    >>> _ = write_jsonl(get_task("countdown").generate(5), path)
    >>> rows, info = prepare_all_rows(DataArguments(dataset_name=path))
    >>> len(rows), info.test, info.split_method
    (5, 5, 'all rows')
    """
    task = task or args.check()
    rows, raw, dropped, source = load_rows(
        task, args.dataset_name, args.dataset_split, config=args.dataset_config, on_invalid=args.on_invalid_rows,
        num_generated=args.num_generated_rows, seed=args.split_seed,
    )
    kept = [row for row in rows if task.filter_row(row)]
    if not kept:
        raise ValueError(f"{source}: no rows left after filtering with task_options {task.options}")
    info = DataInfo(task.name, source, raw, dropped, len(rows) - len(kept), 0, 0, len(kept), "all rows")
    logger.info("prepared %s: %s", source, info.as_dict())
    return prompted_dataset(task, kept, args.prompt_template), info


def prepare_data(
    args: DataArguments, task: Task | None = None, *, require_train: bool = True
) -> tuple[Dataset, Dataset, DataInfo]:
    """:func:`prepare_dataset` with the recipe's :class:`DataArguments`."""
    task = task or args.check()
    return prepare_dataset(
        task,
        args.dataset_name,
        split=args.dataset_split,
        config=args.dataset_config,
        eval_split=args.eval_dataset_split,
        test_size=args.test_size,
        seed=args.split_seed,
        template=args.prompt_template,
        split_method=args.split_method,
        on_invalid=args.on_invalid_rows,
        num_generated=args.num_generated_rows,
        require_train=require_train,
        order=args.data_order,
        stages=args.curriculum_stages,
        replay=args.curriculum_replay,
    )
