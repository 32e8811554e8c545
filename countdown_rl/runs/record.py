"""The record of a training run: ``<output_dir>/run_info.json``, one small typed value.

1. :class:`RunRecord` says what was trained (task, algorithm, base model, dataset, budget, reduction, ...) and by
   which command (``source``); ``recipe`` holds the effective recipe and ``extra`` what a caller adds (e.g. the
   demo's replication identity).
2. :func:`write_run_record` is its one writer (atomic, before training starts); :func:`read_run_record` its one
   reader (the model card, the report, the guard, sweeps, the demo's resume, the benchmarks): a file that is not
   a JSON object is a one-line ``ValueError`` naming it. Records written before a key existed read with that
   key's default (runs before tasks existed were all Countdown).
3. :func:`set_status` rewrites the status as the run goes (``running``, ``interrupted``, ``failed``,
   ``finished``, with the step and a one-line message), through the same reader and writer; :func:`update_extra`
   rewrites ``extra`` keys found out once training runs (e.g. a backend that fell back at its warm-up).

The run directory's fixed names and the exit codes live here too, so no module spells them as literals.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from countdown_rl.files import write_json_atomic

__all__ = ["EXIT_INTERRUPTED", "EXIT_NON_FINITE", "FINAL_EVAL_DIR", "RUN_INFO", "TRAINER_STATE", "ZERO_SHOT_DIR",
           "RunRecord", "read_run_record", "set_status", "write_run_record"]

RUN_INFO = "run_info.json"
TRAINER_STATE = "trainer_state.json"
FINAL_EVAL_DIR = "eval"  # the trained model's final evaluation (eval.json, eval.md, samples.jsonl)
ZERO_SHOT_DIR = "zero_shot"  # the base model's evaluation at the same budget, when a pipeline made one

EXIT_INTERRUPTED = 75  # EX_TEMPFAIL, "try again": a signal stopped the run after a checkpoint (resume it)
EXIT_NON_FINITE = 1  # a NaN or infinite loss or gradient norm stopped the run (the last good checkpoint is kept)


@dataclass
class RunRecord:
    """What a run trained, as ``run_info.json`` holds it.

    >>> r = RunRecord(task="gsm8k", algorithm="grpo", model="m", dataset="d", max_completion_length=128)
    >>> RunRecord.from_dict(r.to_dict()) == r
    True
    """

    task: str = "countdown"
    algorithm: str = "unknown"
    model: str = "unknown"
    dataset: str = "unknown"
    max_completion_length: int | None = None
    budget_schedule: list[list[int]] | None = None  # [[start_step, budget], ...] when the budget followed a schedule
    reduction: str | None = None  # ours; None where TRL's loss_type carries its own reduction
    loss_type: str | None = None  # TRL's loss type that ran (with hybrid: its second, clip-family half)
    std_normalization: str | None = None
    use_peft: bool = False
    num_processes: int = 1
    engine: dict[str, Any] = field(default_factory=dict)  # what ran: runs.engine.Engine.to_dict() (kind, nodes...)
    resumed_from: str | None = None
    source: str = "countdown-rl train"
    data: dict[str, Any] = field(default_factory=dict)
    recipe: dict[str, Any] = field(default_factory=dict)
    curriculum_stage: str | None = None
    status: dict[str, Any] = field(default_factory=dict)  # state running / interrupted / failed / finished, step
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        """Inverse of :meth:`to_dict`; keys this version does not know go to ``extra``, missing ones default."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        unknown = {k: v for k, v in data.items() if k not in known}
        if unknown:
            values["extra"] = {**unknown, **(values.get("extra") or {})}
        return cls(**values)


def write_run_record(output_dir: str | Path, record: RunRecord) -> Path:
    """Write ``record`` to ``<output_dir>/run_info.json`` atomically; returns the path."""
    path = Path(output_dir) / RUN_INFO
    write_json_atomic(path, record.to_dict())
    return path


def read_run_record(output_dir: str | Path) -> RunRecord | None:
    """The record in ``output_dir`` (None when there is none); a broken file is a one-line ValueError naming it.

    >>> import tempfile; d = tempfile.mkdtemp()
    >>> read_run_record(d) is None
    True
    >>> _ = write_run_record(d, RunRecord(task="math", algorithm="dr_grpo"))
    >>> read_run_record(d).task
    'math'
    """
    path = Path(output_dir) / RUN_INFO
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a readable run record ({err})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    try:
        return RunRecord.from_dict(data)
    except TypeError as err:
        raise ValueError(f"{path}: not a run record ({err})") from None


def set_status(output_dir: str | Path, state: str, *, step: int | None = None, message: str | None = None,
               **extra: Any) -> None:
    """Rewrite the record's ``status`` (the rest is kept; a missing record is started empty).

    >>> import tempfile; d = tempfile.mkdtemp(); set_status(d, "interrupted", step=3)
    >>> read_run_record(d).status["state"], read_run_record(d).status["step"]
    ('interrupted', 3)
    """
    record = read_run_record(output_dir) or RunRecord()
    record.status = {"state": state, "step": step, "message": message, **extra}
    write_run_record(output_dir, record)


def update_extra(output_dir: str | Path, **values: Any) -> bool:
    """Set ``extra`` keys of the record in ``output_dir`` (the rest is kept); False where there is no record.

    >>> import tempfile; d = tempfile.mkdtemp(); update_extra(d, rollouts="transformers")
    False
    >>> _ = write_run_record(d, RunRecord(extra={"lora": True})); update_extra(d, rollouts="transformers")
    True
    >>> read_run_record(d).extra
    {'lora': True, 'rollouts': 'transformers'}
    """
    record = read_run_record(output_dir)
    if record is None:
        return False
    record.extra = {**record.extra, **values}
    write_run_record(output_dir, record)
    return True
