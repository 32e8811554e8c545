"""The eval files: ``eval.json``, ``eval.md`` and ``samples.jsonl``, what describes them, writing and reading.

1. :func:`eval_meta` assembles the metadata every evaluation carries (task, model, split, template, sampling,
   backend, ...), so ``countdown-rl eval``, the trainer's final evaluation and the demo describe theirs alike.
2. :func:`write_eval_outputs` writes the three files atomically, ``eval.json`` last: its presence marks a
   complete evaluation. A task with a blind rule (Countdown) gets it on the same rows, in both files.
   :func:`read_eval` and :func:`read_samples` read them back (the report, the model card).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from countdown_rl.evaluation.scoring import BudgetResult, blind_split, blind_table, markdown_table, upgrade_keys
from countdown_rl.files import write_atomic
from countdown_rl.tasks import DEFAULT_TASK

__all__ = ["EVAL_JSON", "EVAL_MD", "SAMPLES_JSONL", "eval_meta", "read_eval", "read_samples", "write_eval_outputs"]

EVAL_JSON, EVAL_MD, SAMPLES_JSONL = "eval.json", "eval.md", "samples.jsonl"


def eval_meta(*, task: str, model: str, num_rows: int, backend: str, template: str | None = None,
              temperature: float = 0.0, num_samples: int = 1, split: str = "test", **more: Any) -> dict[str, Any]:
    """The metadata of an evaluation (``eval.json``'s ``meta``); ``more`` adds the caller's own keys.

    >>> meta = eval_meta(task="countdown", model="m", num_rows=3, backend="transformers", stage="final")
    >>> meta["split"], meta["stage"], "template" in meta  # no template named: none recorded
    ('test', 'final', False)
    """
    meta = {"task": task, "model": model, "split": split, "template": template, "num_rows": num_rows,
            "temperature": temperature, "num_samples": num_samples, "backend": backend, **more}
    if template is None:
        del meta["template"]
    return meta


def _version() -> str:
    from countdown_rl import __version__

    return __version__


def write_eval_outputs(
    out_dir: str | Path,
    results: Sequence[BudgetResult],
    samples_by_budget: Mapping[int, Sequence[Mapping[str, Any]]],
    meta: Mapping[str, Any],
) -> None:
    """Write ``eval.json`` (meta + one result per budget), ``eval.md`` and ``samples.jsonl`` into ``out_dir``.

    ``samples_by_budget`` maps each budget to its rows; ``samples.jsonl`` holds them all with a ``max_tokens``
    field. ``meta`` gets ``version`` and ``date`` when it lacks them. Every file is written atomically.
    """
    out_dir = Path(out_dir)
    meta = {**meta}
    meta.setdefault("version", _version())
    meta.setdefault("date", datetime.now(timezone.utc).isoformat(timespec="seconds"))
    payload = {"meta": meta, "results": [r.to_dict() for r in results]}
    blind = blind_split(meta.get("task", DEFAULT_TASK), samples_by_budget, results)
    if blind is not None:
        payload["blind_rule"] = blind
    lines = [
        json.dumps({**row, "max_tokens": r.max_tokens}, ensure_ascii=False)
        for r in results
        for row in samples_by_budget.get(r.max_tokens, ())
    ]
    described = ", ".join(f"{k}: `{meta[k]}`" for k in ("task", "model", "dataset", "split", "template") if k in meta)
    if meta.get("task_options"):  # what the rows are (e.g. reasoning-gym's dataset and its config), not only where from
        described += ", task options: " + " ".join(f"`{option}`" for option in meta["task_options"])
    sampling = "greedy" if not meta.get("temperature") else f"temperature {meta['temperature']}"
    md = (
        f"# {str(meta.get('task', DEFAULT_TASK)).capitalize()} evaluation\n\n{described}\n\n"
        f"{results[0].num_rows if results else 0} rows, {sampling}, "
        f"{meta.get('num_samples', 1)} sample(s) per row, backend `{meta.get('backend', '?')}`, "
        f"countdown-rl {meta['version']}, {meta['date']}.\n\n{markdown_table(results)}\n"
    )
    if blind is not None:
        md += (f"\nBeside the best target-blind rule on the same rows (a fixed expression over the numbers that never "
               f"reads the target):\n\n{blind_table(blind, results)}\n")
    write_atomic(out_dir / SAMPLES_JSONL, "".join(line + "\n" for line in lines))
    write_atomic(out_dir / EVAL_MD, md)
    # eval.json last: its presence marks a complete evaluation.
    write_atomic(out_dir / EVAL_JSON, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


def _eval_file(path: str | Path, name: str) -> Path:
    path = Path(path)
    return path / name if path.is_dir() else path


def read_eval(path: str | Path) -> dict[str, Any]:
    """Read an ``eval.json`` (or the folder holding one): ``{"meta": {...}, "results": [BudgetResult, ...]}``.

    Results come back as :class:`BudgetResult` objects in the file's order; a file written before a key was
    renamed (``num_puzzles``, now ``num_rows``) reads under the new names. ``blind_rule`` is the task's best blind
    rule on the same rows (:func:`~countdown_rl.evaluation.scoring.blind_split`), None for files without one.
    """
    file = _eval_file(path, EVAL_JSON)
    if not file.is_file():
        raise FileNotFoundError(f"no {EVAL_JSON} at {file}")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        results = [BudgetResult.from_dict(r) for r in data["results"]]
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ValueError(f"{file}: not an evaluation file ({err})") from None
    return {"meta": upgrade_keys(data.get("meta") or {}), "results": results, "blind_rule": data.get("blind_rule")}


def read_samples(path: str | Path, max_tokens: int | None = None) -> list[dict[str, Any]]:
    """Rows of a ``samples.jsonl`` (or the folder holding one), optionally only those at one budget."""
    file = _eval_file(path, SAMPLES_JSONL)
    rows = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows if max_tokens is None else [r for r in rows if r.get("max_tokens") == max_tokens]
