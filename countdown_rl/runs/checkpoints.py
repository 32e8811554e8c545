"""Atomic checkpoints, and resuming from the newest complete one.

1. The Trainer writes each checkpoint into ``<output_dir>/.staging/checkpoint-N`` (:func:`staged_checkpoint`; the
   trainer's side is :class:`countdown_rl.training.reliability.AtomicCheckpointMixin`), so no ``checkpoint-N``
   exists while it is being written: a crash or a SIGKILL mid-save leaves a staging folder that nothing resumes
   from.
2. When every process has written its part, the main process (:func:`finish_staged_save`) fsyncs the files, writes
   ``checkpoint_complete.json`` (each file's size) and renames the folder to ``<output_dir>/checkpoint-N`` (one
   ``rename`` on one filesystem). Only then are old checkpoints rotated (``save_total_limit``): the newest complete
   checkpoint is never deleted before its successor is complete, and incomplete ones never count as kept.
3. On resume, :func:`last_complete_checkpoint` walks ``checkpoint-N`` from the highest step down and skips, with a
   one-line warning naming it, any whose manifest is missing a file or disagrees on a size (a truncated or deleted
   file). A checkpoint without a manifest (written before this module) must at least hold a readable
   ``trainer_state.json`` and weights.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

from countdown_rl.runs.record import TRAINER_STATE

STAGING = ".staging"
MANIFEST = "checkpoint_complete.json"
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "adapter_model.safetensors", "pytorch_model.bin",
            "adapter_model.bin", "pytorch_model.bin.index.json")


def checkpoint_dirs(output_dir: str | Path) -> list[Path]:
    """``checkpoint-N`` folders of ``output_dir``, lowest step first."""
    out = Path(output_dir)
    if not out.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in out.iterdir() if p.is_dir() and (m := _CHECKPOINT.match(p.name))]
    return [p for _, p in sorted(found)]


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_manifest(folder: Path) -> None:
    """Flush every file of ``folder`` to disk, then record their sizes in ``checkpoint_complete.json``."""
    files = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST):
        _fsync(path)
        files[path.relative_to(folder).as_posix()] = path.stat().st_size
    (folder / MANIFEST).write_text(json.dumps({"files": files}, indent=1))
    _fsync(folder / MANIFEST)
    _fsync(folder)


def checkpoint_problem(folder: str | Path) -> str | None:
    """Why ``folder`` is not a complete checkpoint (a few words), or None if it is."""
    folder = Path(folder)
    manifest = folder / MANIFEST
    if manifest.is_file():
        try:
            files = json.loads(manifest.read_text())["files"]
        except (OSError, ValueError, KeyError, TypeError):
            return f"unreadable {MANIFEST}"
        for name, size in files.items():
            path = folder / name
            if not path.is_file():
                return f"{name} is missing"
            if path.stat().st_size != size:
                return f"{name} has {path.stat().st_size} bytes, {size} were written"
        return None
    # No manifest: a checkpoint from before atomic saving. The least a resume needs.
    try:
        json.loads((folder / TRAINER_STATE).read_text())
    except (OSError, ValueError):
        return "trainer_state.json is missing or unreadable"
    if not any((folder / name).is_file() for name in _WEIGHTS):
        return "no model weights"
    return None


def _warn(message: str) -> None:
    print(f"countdown-rl train: warning: {message}", file=sys.stderr, flush=True)


def last_complete_checkpoint(output_dir: str | Path, warn=_warn) -> Path | None:
    """The highest-step complete ``checkpoint-N`` of ``output_dir`` (incomplete ones skipped, one warning each)."""
    for folder in reversed(checkpoint_dirs(output_dir)):
        problem = checkpoint_problem(folder)
        if problem is None:
            return folder
        warn(f"skipping incomplete checkpoint {folder} ({problem})")
    return None


def rotate(output_dir: str | Path, save_total_limit: int | None, keep: set[Path] = frozenset()) -> list[Path]:
    """Delete checkpoints beyond the newest ``save_total_limit`` complete ones (plus ``keep``); incomplete ones
    older than the newest complete checkpoint go too. Returns what was deleted."""
    if not save_total_limit or save_total_limit <= 0:
        return []
    folders = checkpoint_dirs(output_dir)
    complete = [f for f in folders if checkpoint_problem(f) is None]
    if not complete:
        return []
    kept = set(complete[-save_total_limit:]) | {Path(k) for k in keep}
    newest = int(_CHECKPOINT.match(complete[-1].name).group(1))
    deleted = []
    for folder in folders:
        step = int(_CHECKPOINT.match(folder.name).group(1))
        if folder not in kept and step < newest:
            shutil.rmtree(folder, ignore_errors=True)
            deleted.append(folder)
    return deleted


def publish(staged: Path, output_dir: Path) -> Path:
    """Manifest, then rename ``staged`` to ``output_dir/<name>``; an existing folder of that name (a checkpoint of
    the same step that was skipped as incomplete) is moved aside first and deleted after."""
    write_manifest(staged)
    final = output_dir / staged.name
    aside = None
    if final.exists():
        aside = staged.parent / f"replaced-{staged.name}"
        shutil.rmtree(aside, ignore_errors=True)
        os.replace(final, aside)
    os.replace(staged, final)
    _fsync(output_dir)
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)
    return final


def staged_checkpoint(run_dir: str | Path, step: int) -> Path:
    """Where the checkpoint of ``step`` is written before it is published: ``<run_dir>/.staging/checkpoint-N``."""
    return Path(run_dir) / STAGING / f"checkpoint-{step}"


def finish_staged_save(staged: Path, run_dir: Path, save_total_limit: int | None, keep: set[Path] = frozenset()) \
        -> Path:
    """Main process, once every process wrote its part: publish ``staged`` (manifest, rename), remove the empty
    staging folder, then rotate (``keep``: checkpoints never deleted, e.g. the best one). Returns the published
    folder."""
    final = publish(staged, run_dir)
    try:
        staged.parent.rmdir()  # the staging folder is only there while a save is in progress
    except OSError:
        pass
    rotate(run_dir, save_total_limit, keep=keep)
    return final
