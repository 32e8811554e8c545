"""Datasets for any task: load, validate, filter, dedupe, split and add prompts.

1. Load source rows from a Hub id (with its config), a local ``.jsonl`` / ``.json`` / ``.parquet`` file, a folder
   saved with ``save_to_disk``, a folder of such files, or ``generated`` (the task's offline generator).
2. Validate every row with the task: ``task.prepare_row`` (the source layout -> the task's columns, e.g. GSM8K's
   gold number after ``####``), then ``task.row_problem``, the same check the task's rewards make. A bad row
   raises a one-line ``ValueError`` naming the source and the row (and the file line), or with
   ``on_invalid="drop"`` is dropped, counted and logged.
3. Keep the rows the task's options select (``task.filter_row``, e.g. MATH levels); none left is an error.
4. Dedupe on ``task.dedupe_key`` keeping the first occurrence, and split with no problem on both sides: a seeded
   random hold-out, the source's own evaluation split (``eval_dataset_split``), or a task's positional split
   (Countdown's ``tinyzero``).
5. Order the training rows (``data_order``, :mod:`countdown_rl.algorithms.curriculum`): as split (``random``: TRL
   shuffles), easy to hard by ``task.difficulty`` (a stable sort), or in seeded difficulty ``staged`` blocks. The
   held-out rows are never reordered.
6. Add a ``prompt`` column rendered by the task's template, keeping the task's columns next to it: TRL passes
   extra columns to reward functions as keyword arguments.

JSON files are parsed here rather than by Arrow, because Arrow coerces a column to one type (one ``3.5`` turns
every target into a float) and so could not say which row is bad. ``datasets`` is imported inside the functions
so that importing this module stays cheap.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from countdown_rl.algorithms.curriculum import DATA_ORDERS, DEFAULT_REPLAY, DEFAULT_STAGES, data_order_indices
from countdown_rl.tasks import DEFAULT_TASK, TASKS, get_task

if TYPE_CHECKING:
    from datasets import Dataset

    from countdown_rl.tasks.base import Task

__all__ = [
    "GENERATED",
    "ON_INVALID",
    "DataArguments",
    "DataInfo",
    "dedupe",
    "load_rows",
    "prepare_data",
    "prepare_dataset",
    "split_rows",
    "write_jsonl",
]

logger = logging.getLogger(__name__)

GENERATED = "generated"
"""``dataset_name`` that means: rows from the task's offline generator (``num_generated_rows`` of them)."""
ON_INVALID = ("raise", "drop")
DATA_SUFFIXES = (".jsonl", ".json", ".parquet")
# owner/name, as the Hub spells dataset ids; anything else that does not exist locally is a missing path.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
_SPLIT_NAMES = ("train", "test", "validation", "valid", "dev")
_MISSING = object()  # a key absent from a JSON record; distinct from an explicit null


@dataclass
class DataArguments:
    """Which task and data a run trains or evaluates on: the recipe's data keys, shared by ``train`` and ``eval``."""

    task: str = field(
        default=DEFAULT_TASK,
        metadata={"help": f"Task: one of {', '.join(sorted(TASKS))}.", "choices": sorted(TASKS)},
    )
    task_options: list[str] = field(
        default_factory=list,
        metadata={"help": "Task options as key=value (e.g. unary_minus=true for countdown, levels=5 for math)."},
    )
    dataset_name: str | None = field(
        default=None,
        metadata={"help": "Hub dataset id, local .jsonl/.json/.parquet file or folder, or 'generated' (the task's "
                  "offline generator). Default: the task's dataset."},
    )
    dataset_config: str | None = field(
        default=None, metadata={"help": "Hub dataset config (e.g. 'main' for openai/gsm8k). Default: the task's."}
    )
    dataset_split: str = field(default="train", metadata={"help": "Split of the source dataset to train on."})
    eval_dataset_split: str | None = field(
        default=None,
        metadata={"help": "Split of the source to hold out (e.g. 'test'; problems also in it leave the training "
                  "rows). Default: hold out test_size rows of dataset_split."},
    )
    test_size: int = field(
        default=1024,
        metadata={"help": "Held-out rows: carved from dataset_split, or sampled (seeded) from eval_dataset_split."},
    )
    split_method: str = field(
        default="random",
        metadata={"help": "'random' (seeded, after dedupe) or a task's positional split ('tinyzero' for countdown)."},
    )
    split_seed: int = field(default=42, metadata={"help": "Seed of the held-out split (same in train and eval)."})
    on_invalid_rows: str = field(
        default="raise",
        metadata={"help": "A row the task cannot use: 'raise' (an error naming the row) or 'drop' (dropped and "
                  "counted).", "choices": list(ON_INVALID)},
    )
    prompt_template: str | None = field(
        default=None, metadata={"help": "Prompt template of the task (default: the task's)."}
    )
    num_generated_rows: int = field(
        default=2048, metadata={"help": "With dataset_name 'generated': how many rows the task's generator makes."}
    )
    data_order: str = field(
        default="random",
        metadata={"help": "Order of the training rows (the held-out rows are untouched): 'random' (TRL shuffles "
                  "each epoch), 'easy_to_hard' (stable sort by the task's difficulty) or 'staged' (difficulty "
                  "stages, each shuffled with a replay of earlier stages, seeded by split_seed). Not 'random': "
                  "shuffle_dataset is set to false.", "choices": list(DATA_ORDERS)},
    )
    curriculum_stages: int | None = field(
        default=None,
        metadata={"help": f"data_order 'staged': how many difficulty stages (default {DEFAULT_STAGES})."},
    )
    curriculum_replay: float | None = field(
        default=None,
        metadata={"help": "data_order 'staged': rows replayed from earlier stages, as a fraction of each stage's "
                  f"size, in [0, 1] (default {DEFAULT_REPLAY})."},
    )

    def __post_init__(self):
        if isinstance(self.task_options, str):  # one option on the command line
            self.task_options = [self.task_options]

    def get_task(self) -> Task:
        """The task with its options, checked (one-line errors naming the key)."""
        return get_task(self.task, self.task_options)

    def check(self) -> Task:
        """Everything that can be wrong in these keys without reading data; returns the task."""
        task = self.get_task()
        template = self.prompt_template or task.default_template
        if template not in task.prompt_templates:
            raise ValueError(
                f"prompt_template: {template!r} is not a template of task {task.name!r}; "
                f"choose one of {sorted(task.prompt_templates)}"
            )
        methods = ["random", *task.positional_splits]
        if self.split_method not in methods:
            raise ValueError(f"split_method: {self.split_method!r} is not one of {methods} (task {task.name!r})")
        if self.on_invalid_rows not in ON_INVALID:
            raise ValueError(f"on_invalid_rows: must be one of {list(ON_INVALID)}, got {self.on_invalid_rows!r}")
        if self.test_size <= 0:
            raise ValueError(f"test_size: must be positive, got {self.test_size}")
        if self.num_generated_rows <= 0:
            raise ValueError(f"num_generated_rows: must be positive, got {self.num_generated_rows}")
        if self.eval_dataset_split is not None and self.split_method != "random":
            raise ValueError(f"eval_dataset_split: cannot be combined with split_method={self.split_method!r}")
        if self.data_order not in DATA_ORDERS:
            raise ValueError(f"data_order: must be one of {list(DATA_ORDERS)}, got {self.data_order!r}")
        for key in ("curriculum_stages", "curriculum_replay"):
            if getattr(self, key) is not None and self.data_order != "staged":
                raise ValueError(f"{key}: only used with data_order 'staged', not {self.data_order!r}")
        if self.curriculum_stages is not None and self.curriculum_stages < 1:
            raise ValueError(f"curriculum_stages: must be >= 1, got {self.curriculum_stages}")
        if self.curriculum_replay is not None and not 0.0 <= self.curriculum_replay <= 1.0:
            raise ValueError(f"curriculum_replay: must be in [0, 1], got {self.curriculum_replay}")
        return task


@dataclass(frozen=True)
class DataInfo:
    """Row counts of one :func:`prepare_dataset` call (``duplicates_removed`` also counts training rows whose
    problem is in the held-out rows)."""

    task: str
    source: str
    raw: int
    invalid_dropped: int
    filtered_out: int
    duplicates_removed: int
    train: int
    test: int
    split_method: str
    data_order: str = "random"

    def as_dict(self) -> dict[str, Any]:
        """The counts as a plain dict (for logs and JSON)."""
        return asdict(self)


# ----------------------------------------------------------------------------------------------------------
# Validation
# ----------------------------------------------------------------------------------------------------------


def _validate(
    task: Task,
    records: Sequence[Any],
    source: str,
    on_invalid: str,
    problems: Mapping[int, str] | None = None,
    lines: Sequence[int] | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """Prepared valid rows and the number dropped; raise on the first bad one unless ``on_invalid == "drop"``.

    ``problems`` holds rows already known to be bad (unparsable JSON); ``lines`` maps rows to file lines.
    """
    if on_invalid not in ON_INVALID:
        raise ValueError(f"on_invalid must be one of {list(ON_INVALID)}, got {on_invalid!r}")
    problems = problems or {}
    keep: list[dict[str, Any]] = []
    bad: list[str] = []
    for i, record in enumerate(records):
        problem = problems.get(i)
        if problem is None and not isinstance(record, Mapping):
            problem = f"expected an object with columns, got {type(record).__name__}"
        if problem is None:
            try:
                row = task.prepare_row(record)
            except ValueError as err:
                problem = str(err)
            else:
                problem = task.row_problem(row)
        if problem is None:
            keep.append(row)
            continue
        where = f"row {i} of {source}" + (f" (line {lines[i]})" if lines is not None else "")
        message = f"{where}: {problem}"
        if on_invalid == "raise":
            raise ValueError(message)
        bad.append(message)
    if bad:
        logger.warning("dropped %d invalid row(s) of %s; first: %s", len(bad), source, bad[0])
    if not keep:
        raise ValueError(f"{source}: no valid rows ({len(bad)} invalid) for task {task.name!r}")
    return keep, len(bad)


# ----------------------------------------------------------------------------------------------------------
# Loading
# ----------------------------------------------------------------------------------------------------------


def _read_json_rows(path: Path) -> tuple[list[Any], dict[int, str], list[int] | None]:
    """Records of a JSON Lines file, a JSON array of objects, or a JSON object of equal-length columns.

    Returns (records, problems by row index, file line of each row or None for whole-file JSON).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    if path.suffix == ".json":
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = _MISSING  # not one JSON document: read it as JSON Lines below
        if isinstance(whole, list):
            return whole, {}, None
        if isinstance(whole, dict):
            columns = list(whole.values())
            if columns and all(isinstance(c, list) and len(c) == len(columns[0]) for c in columns):
                return [dict(zip(whole, values)) for values in zip(*columns)], {}, None
            raise ValueError(f"{path}: expected a JSON array of objects or an object of equal-length column lists")
        if whole is not _MISSING:
            raise ValueError(f"{path}: expected a JSON array of objects, got {type(whole).__name__}")
    records: list[Any] = []
    problems: dict[int, str] = {}
    lines: list[int] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as err:
            problems[len(records)] = f"invalid JSON ({err.msg})"
            records.append(None)
        lines.append(line_no)
    return records, problems, lines


def _check_columns(task: Task, found: Iterable[str], source: str) -> None:
    """Fail fast, naming the columns found, when no row could have what the task reads."""
    found = list(found)
    probe = {c: None for c in found}
    try:  # a row with these columns (all None): prepare_row fails on missing columns, not on values
        probe = task.prepare_row(probe)
    except (ValueError, KeyError, TypeError):
        pass
    missing = [c for c in task.columns if c not in probe]
    if missing:
        raise ValueError(
            f"{source}: missing column(s) {missing} for task {task.name!r}; found columns {found}"
        )


def _load_file(task: Task, path: Path, on_invalid: str, cache_dir: str | None) -> tuple[list[dict], int, int]:
    """Load and validate one data file: (valid rows, raw row count, invalid dropped)."""
    suffix = path.suffix.lower()
    source = str(path)
    if suffix in (".jsonl", ".json"):
        records, problems, lines = _read_json_rows(path)
        if not records:
            raise ValueError(f"{source}: no rows")
        columns: dict[str, None] = {}  # union of keys in first-seen order
        for record in records:
            if isinstance(record, dict):
                columns.update(dict.fromkeys(record))
        _check_columns(task, columns, source)
        rows, dropped = _validate(task, records, source, on_invalid, problems, lines)
        return rows, len(records), dropped
    if suffix == ".parquet":
        import datasets

        ds = datasets.load_dataset("parquet", data_files=str(path), split="train", cache_dir=cache_dir)
        _check_columns(task, ds.column_names, source)
        rows, dropped = _validate(task, ds.to_list(), source, on_invalid)
        return rows, len(ds), dropped
    raise ValueError(f"{path}: unsupported file type {path.suffix!r}; expected one of {list(DATA_SUFFIXES)}")


def _split_files(folder: Path, split: str) -> list[Path]:
    """The data files of ``folder`` that belong to ``split``, by the split name as a path token
    (``train.jsonl``, ``data/test-00000.parquet``); with no split names at all, every file is ``train``."""
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.suffix.lower() in DATA_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)  # skip .cache/ and the like
    )
    if not files:
        raise FileNotFoundError(f"{folder}: no {'/'.join(DATA_SUFFIXES)} files and not a save_to_disk folder")

    def split_of(p: Path) -> str | None:
        tokens = re.split(r"[/\\_.\-]+", str(p.relative_to(folder).with_suffix("")).lower())
        return next((name for name in _SPLIT_NAMES if name in tokens), None)

    by_split: dict[str | None, list[Path]] = {}
    for p in files:
        by_split.setdefault(split_of(p), []).append(p)
    if set(by_split) == {None}:
        if split != "train":
            raise ValueError(f"{folder}: files carry no split names, so they are all 'train'; got split={split!r}")
        return files
    if split not in by_split:
        raise ValueError(f"{folder}: no files for split {split!r}; found splits {sorted(s for s in by_split if s)}")
    return by_split[split]


def _load_folder(task: Task, folder: Path, split: str, on_invalid: str, cache_dir: str | None):
    import datasets

    if (folder / "dataset_dict.json").is_file() or (folder / "state.json").is_file():  # save_to_disk output
        loaded = datasets.load_from_disk(str(folder))
        if isinstance(loaded, datasets.DatasetDict):
            if split not in loaded:
                raise ValueError(f"{folder}: no split {split!r}; available splits {list(loaded)}")
            loaded = loaded[split]
        elif split != "train":
            raise ValueError(f"{folder} holds a single saved dataset; split={split!r} needs a DatasetDict folder")
        _check_columns(task, loaded.column_names, str(folder))
        rows, dropped = _validate(task, loaded.to_list(), str(folder), on_invalid)
        return rows, len(loaded), dropped
    parts = [_load_file(task, p, on_invalid, cache_dir) for p in _split_files(folder, split)]
    return [row for part in parts for row in part[0]], sum(p[1] for p in parts), sum(p[2] for p in parts)


def load_rows(
    task: Task,
    name_or_path: str | os.PathLike | None = None,
    split: str = "train",
    *,
    config: str | None = None,
    on_invalid: str = "raise",
    num_generated: int = 2048,
    seed: int = 42,
    cache_dir: str | None = None,
) -> tuple[list[dict[str, Any]], int, int, str]:
    """Load and validate rows for ``task``: ``(prepared valid rows, raw row count, invalid dropped, source)``.

    ``name_or_path`` is a Hub id (``config`` defaults to the one the task knows for it), a ``.jsonl`` / ``.json``
    / ``.parquet`` file, a ``save_to_disk`` folder, a folder of data files, or ``"generated"``; None is the
    task's default dataset. Rows are not deduped or filtered here.

    >>> import tempfile, os
    >>> from countdown_rl.tasks import get_task
    >>> path = os.path.join(tempfile.mkdtemp(), "p.jsonl")
    >>> write_jsonl([{"nums": [7, 7, 65], "target": 51}], path)
    1
    >>> load_rows(get_task("countdown"), path)[0]
    [{'nums': [7, 7, 65], 'target': 51}]
    """
    if on_invalid not in ON_INVALID:
        raise ValueError(f"on_invalid must be one of {list(ON_INVALID)}, got {on_invalid!r}")
    name = os.fspath(name_or_path) if name_or_path is not None else task.default_dataset
    if name == GENERATED:
        # A held-out split of generated data comes from the same pool (the split dedupes and holds out).
        source = f"{GENERATED} {task.name} rows (seed {seed})"
        rows, dropped = _validate(task, task.generate(num_generated, seed=seed), source, on_invalid)
        return rows, num_generated, dropped, source
    path = Path(name).expanduser()
    if path.is_file():
        if split != "train":
            raise ValueError(f"{path} is a single file (one split); split={split!r} needs a Hub id or a folder")
        return (*_load_file(task, path, on_invalid, cache_dir), str(path))
    if path.is_dir():
        return (*_load_folder(task, path, split, on_invalid, cache_dir), str(path))
    if not _HUB_ID.fullmatch(name) or path.suffix.lower() in DATA_SUFFIXES:
        raise FileNotFoundError(f"no such file or folder: {name!r} (and it is not a Hub dataset id like 'owner/name')")
    import datasets

    config = config if config is not None else (task.known_datasets.get(name) or {}).get("config")
    source = f"{name}" + (f" (config {config!r})" if config else "") + f" (split {split!r})"
    ds = datasets.load_dataset(name, config, split=split, cache_dir=cache_dir)
    _check_columns(task, ds.column_names, source)
    rows, dropped = _validate(task, ds.to_list(), source, on_invalid)
    return rows, len(ds), dropped, source


# ----------------------------------------------------------------------------------------------------------
# Dedupe and split
# ----------------------------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------------------------
# One call
# ----------------------------------------------------------------------------------------------------------


def _dataset(task: Task, rows: Sequence[Mapping[str, Any]], template: str) -> Dataset:
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
    return _dataset(task, train, template), _dataset(task, test, template), info


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


def write_jsonl(rows: Iterable[Mapping[str, Any]], path: str | os.PathLike) -> int:
    """Write one JSON object per line (creating parent folders); return the number of rows written.

    >>> import tempfile, os
    >>> write_jsonl([{"a": 1}, {"a": 2}], os.path.join(tempfile.mkdtemp(), "sub", "p.jsonl"))
    2
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(dict(row), ensure_ascii=False) + "\n")
            count += 1
    return count
