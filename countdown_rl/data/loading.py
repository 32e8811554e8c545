"""Source rows for a task: read, validated row by row, with one-line errors naming the source and the row.

1. Load source rows from a Hub id (with its config), a local ``.jsonl`` / ``.json`` / ``.parquet`` file, a folder
   saved with ``save_to_disk``, a folder of such files (split by the split name in the file path), or
   ``generated`` (the task's offline generator).
2. Validate every row with the task: ``task.prepare_row`` (the source layout -> the task's columns, e.g. GSM8K's
   gold number after ``####``), then ``task.row_problem``, the same check the task's rewards make. A bad row
   raises a one-line ``ValueError`` naming the source and the row (and the file line), or with
   ``on_invalid="drop"`` is dropped, counted and logged.

JSON files are parsed here rather than by Arrow, because Arrow coerces a column to one type (one ``3.5`` turns
every target into a float) and so could not say which row is bad. ``datasets`` is imported inside the functions
so that importing this module stays cheap.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from countdown_rl.data.arguments import GENERATED, ON_INVALID

if TYPE_CHECKING:
    from countdown_rl.tasks.base import Task

__all__ = ["DATA_SUFFIXES", "load_rows"]

logger = logging.getLogger(__name__)

DATA_SUFFIXES = (".jsonl", ".json", ".parquet")
# owner/name, as the Hub spells dataset ids; anything else that does not exist locally is a missing path.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
_SPLIT_NAMES = ("train", "test", "validation", "valid", "dev")
_MISSING = object()  # a key absent from a JSON record; distinct from an explicit null


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
    >>> from countdown_rl.data.jsonl import write_jsonl
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
