"""The output-directory guard of ``countdown-rl train`` and the demo: a folder holding a run is never reused silently.

1. :func:`check_output_dir` runs after the recipe is parsed and before anything is loaded. An empty or missing
   ``output_dir`` is fine. A folder holding another run's files is refused in one line naming the folder and the
   first keys that differ, unless the caller says how to go on: ``resume: true`` (continue that run; its recipe
   must match except :data:`MAY_CHANGE_ON_RESUME`), TRL's ``resume_from_checkpoint`` (the same check), or
   ``overwrite_output_dir: true`` (start afresh; the old checkpoints are removed just before training starts,
   :func:`clear_previous_run`).
2. The recipe compared is the run record's (:mod:`countdown_rl.runs.record`): every effective key of the recipe
   dataclasses, after ``__post_init__`` (:func:`effective_recipe`).
3. ``resume: true`` is idempotent, for requeued jobs: no checkpoint yet means "start", a checkpoint means
   "continue from the newest complete one" (:mod:`countdown_rl.runs.checkpoints`). TRL's
   ``resume_from_checkpoint: true`` keeps its meaning: a checkpoint must exist.
4. One output directory, one job: :func:`claim_output_dir` (the job's main process, before the checks above) holds
   an exclusive ``flock`` on ``<output_dir>/_countdown_rl.lock`` for the life of the process, with the owner's
   host, pid and SLURM job written in it. A second job, however close its start, finds the lock held and is
   refused in one line naming the owner. The kernel releases the lock when its process ends (exit, crash,
   SIGKILL), so a dead owner never blocks a resume; the file stays, and is not part of the run.
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import json
import os
import shutil
import socket
import time
from pathlib import Path
from typing import Any

from countdown_rl.runs.checkpoints import STAGING, checkpoint_dirs
from countdown_rl.runs.record import RUN_INFO, TRAINER_STATE, RunRecord, read_run_record

# Keys that may differ between a run and its resumption: where it writes, how far it goes, and what it logs,
# evaluates, saves or pushes on the way. Everything that shapes the optimisation itself must match.
MAY_CHANGE_ON_RESUME = frozenset({
    "output_dir", "resume", "resume_from_checkpoint", "overwrite_output_dir",
    "max_steps", "num_train_epochs",
    "logging_steps", "logging_strategy", "logging_first_step", "logging_nan_inf_filter", "log_level",
    "log_level_replica", "log_on_each_node", "log_completions", "num_completions_to_print", "disable_tqdm",
    "report_to", "run_name", "project",
    "eval_strategy", "eval_steps", "eval_on_start", "eval_delay", "per_device_eval_batch_size",
    "eval_subset_size", "final_eval_size",
    "save_strategy", "save_steps", "save_total_limit", "save_only_model",
    "push_to_hub", "hub_model_id", "hub_strategy", "hub_private_repo", "hub_token", "hub_always_push",
    "hub_revision", "merge_adapter", "dataloader_num_workers", "dataloader_prefetch_factor",
})
LOCK_FILE = "_countdown_rl.lock"  # the job's claim (module docstring, 4); "_*" keeps it out of every Hub push
_held_locks: dict[str, Claim] = {}  # output_dir (resolved) -> this process's claim on it
# Keys that depend on how the process was launched, not on the recipe: recorded, never compared.
NOT_COMPARED = frozenset({"local_rank"})
FIRST_KEYS_SHOWN = 3


class OutputDirError(ValueError):
    """The output directory cannot be used as asked (one line)."""


def effective_recipe(*arg_objects: Any) -> dict[str, Any]:
    """Every key of the parsed recipe dataclasses as plain JSON values (TrainingArguments' own ``to_dict`` redacts
    tokens and turns enums into strings)."""
    recipe: dict[str, Any] = {}
    for obj in arg_objects:
        recipe.update(obj.to_dict() if hasattr(obj, "to_dict") else dataclasses.asdict(obj))
    return json.loads(json.dumps(recipe, default=str))


def recipe_differences(saved: dict[str, Any], current: dict[str, Any], *, resuming: bool) -> list[str]:
    """Keys whose values differ, sorted, as ``key: saved -> current``; on resume the keys that may change are left
    out. A key only one side has (a newer package) counts only if it is not at its default on the other."""
    ignored = NOT_COMPARED | (MAY_CHANGE_ON_RESUME if resuming else {"output_dir"})
    missing = object()
    diffs = []
    for key in sorted(set(saved) | set(current)):
        if key in ignored:
            continue
        old, new = saved.get(key, missing), current.get(key, missing)
        if old is missing or new is missing or old == new:
            continue
        diffs.append(f"{key}: {json.dumps(old)} -> {json.dumps(new)}")
    return diffs


def _saved_record(output_dir: Path) -> RunRecord | None:
    """The run record in ``output_dir`` through the one reader; an unreadable one says how to go on."""
    try:
        return read_run_record(output_dir)
    except ValueError as err:
        raise OutputDirError(f"output_dir {output_dir}: {err}; pass overwrite_output_dir: true to start "
                             "afresh") from None


def _status_words(record: RunRecord) -> str:
    status = record.status or {}
    state = status.get("state", "unknown state")
    return f"{state} at step {status['step']}" if status.get("step") is not None else state


def check_output_dir(output_dir: str | Path, recipe: dict[str, Any], *, resume: bool, overwrite: bool,
                     resume_from_checkpoint: Any = None) -> RunRecord | None:
    """Refuse to reuse ``output_dir`` silently (module docstring, 2); returns the saved record (or None).

    Nothing is read but ``run_info.json`` and the folder listing; nothing is written or deleted.
    """
    out = Path(output_dir)
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"output_dir {out}: exists and is not a folder")
    if not out.is_dir() or not any(p.name != LOCK_FILE for p in out.iterdir()):
        return None
    if resume and overwrite:
        raise OutputDirError("resume and overwrite_output_dir: choose one (continue the run, or start afresh)")
    if overwrite:  # the old run goes: nothing to compare
        return None
    info = _saved_record(out)
    resuming = resume or resume_from_checkpoint not in (None, False, "", "false", "False")
    how = ("pass --resume true to continue it, --overwrite_output_dir true to start afresh there, "
           "or choose another output_dir")
    if info is None:
        if resuming:  # a folder of checkpoints with no record (an older run): TRL's resume, unchecked
            return None
        raise OutputDirError(f"output_dir {out}: not empty and holds no {RUN_INFO} (not a countdown-rl run); "
                             "pass --overwrite_output_dir true to use it anyway, or choose another output_dir")
    saved = info.recipe
    if not saved:  # written before recipes were recorded: nothing to compare
        if resuming:
            return info
        raise OutputDirError(f"output_dir {out}: holds another run ({RUN_INFO} without a recorded recipe); {how}")
    diffs = recipe_differences(saved, recipe, resuming=resuming)
    if resuming and diffs:
        raise OutputDirError(
            f"output_dir {out}: cannot resume, the recipe differs from the saved one in {len(diffs)} key(s): "
            f"{'; '.join(diffs[:FIRST_KEYS_SHOWN])} (only max_steps and the logging, evaluation, saving and Hub "
            "keys may change on resume: runs.guard.MAY_CHANGE_ON_RESUME)"
        )
    if not resuming:
        what = (f"a run with a different recipe ({'; '.join(diffs[:FIRST_KEYS_SHOWN])}"
                f"{'; ...' if len(diffs) > FIRST_KEYS_SHOWN else ''})" if diffs else "a run with the same recipe")
        raise OutputDirError(f"output_dir {out}: holds {what}, {_status_words(info)}; {how}")
    return info


def _lock_owner(path: Path) -> str:
    try:
        owner = json.loads(path.read_text(encoding="utf-8"))
        job = f", SLURM job {owner['slurm_job_id']}" if owner.get("slurm_job_id") else ""
        return f"host {owner['host']}, pid {owner['pid']}{job}, since {owner['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "owner unknown"


@dataclasses.dataclass
class Claim:
    """This process's hold on an output directory's lock (:func:`claim_output_dir`)."""

    fd: int
    created_dir: bool
    created_file: bool


def claim_output_dir(output_dir: str | Path) -> Claim:
    """Claim ``output_dir`` for this job (module docstring, 4): creates the folder if needed and holds its lock
    until :func:`release_output_dir` or the process ends; idempotent within a process. A lock held by another
    live process is a one-line :class:`OutputDirError`. The owner is written by :func:`confirm_claim`, once the
    checks pass, so a refused job leaves the folder as it found it.

    >>> import tempfile; d = tempfile.mkdtemp(); claim_output_dir(d).created_dir, release_output_dir(d)
    (False, None)
    """
    out = Path(output_dir)
    key = str(out.resolve())
    if key in _held_locks:
        return _held_locks[key]
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"output_dir {out}: exists and is not a folder")
    created_dir = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK_FILE
    created_file = not path.exists()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        os.close(fd)
        if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise OutputDirError(f"output_dir {out}: cannot lock {LOCK_FILE} ({err.strerror}); this file system "
                                 "does not support flock: choose an output_dir on one that does") from None
        raise OutputDirError(f"output_dir {out}: in use by another job ({_lock_owner(path)}); wait for it to end, "
                             "or choose another output_dir") from None
    _held_locks[key] = Claim(fd, created_dir, created_file)
    return _held_locks[key]


def confirm_claim(output_dir: str | Path) -> None:
    """Write this job as the owner into the lock it holds (host, pid, SLURM job, start time)."""
    claim = _held_locks[str(Path(output_dir).resolve())]
    owner = {"host": socket.gethostname(), "pid": os.getpid(), "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
             "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    os.ftruncate(claim.fd, 0)
    os.pwrite(claim.fd, (json.dumps(owner) + "\n").encode(), 0)


def release_output_dir(output_dir: str | Path, *, refused: bool = False) -> None:
    """Release this process's claim on ``output_dir`` (no-op without one). What the claim created (the lock file,
    the folder) goes again when the job was ``refused`` or wrote nothing else there."""
    out = Path(output_dir)
    claim = _held_locks.pop(str(out.resolve()), None)
    if claim is None:
        return
    try:
        # What the claim created goes again if nothing else was written (the run never started) or it was refused.
        # A folder deleted while claimed (by hand, or a test's temporary folder) leaves nothing to tidy.
        if claim.created_file and out.is_dir() and (refused or [p.name for p in out.iterdir()] == [LOCK_FILE]):
            (out / LOCK_FILE).unlink(missing_ok=True)
    finally:
        os.close(claim.fd)  # releases the flock; a run's lock file stays (unlinking it races a waiter's open)
    if claim.created_dir and out.is_dir() and not any(out.iterdir()):
        out.rmdir()


def release_all_output_dirs() -> None:
    """Release every claim this process holds (a command's last step: its process may go on, e.g. in tests)."""
    for key in list(_held_locks):
        release_output_dir(key)


def clear_previous_run(output_dir: str | Path) -> list[str]:
    """For ``overwrite_output_dir``: remove the previous run's checkpoints (which a later resume would pick up) and
    its status; other files are overwritten by the new run. Returns the names removed."""
    out = Path(output_dir)
    removed = []
    for path in [*checkpoint_dirs(out), out / STAGING]:
        if path.is_dir():
            shutil.rmtree(path)
            removed.append(path.name)
    for name in (RUN_INFO, TRAINER_STATE):
        if (out / name).is_file():
            (out / name).unlink()
            removed.append(name)
    return removed
