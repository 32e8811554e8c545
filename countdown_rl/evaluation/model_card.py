"""The model card (``README.md`` in ``output_dir``) of a countdown-rl run.

1. ``run_info.json`` (:class:`countdown_rl.runs.record.RunRecord`), written before training, says what was trained:
   task, base model, dataset, algorithm, max completion length.
2. ``eval/eval.json``, written by the final evaluation, holds the held-out results table (when it exists), and
   for Countdown the best target-blind rule on the same problems.
3. :func:`render_model_card` turns both into Markdown with Hub metadata (base_model, datasets, tags
   ``countdown-rl``, the algorithm's tag and the task's name); :func:`write_model_card` writes it atomically.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from countdown_rl.algorithms.curriculum import describe_schedule
from countdown_rl.algorithms.presets import ALGORITHMS, display_name
from countdown_rl.evaluation.eval_files import EVAL_JSON, read_eval
from countdown_rl.evaluation.scoring import blind_table, markdown_table
from countdown_rl.files import write_atomic
from countdown_rl.runs.record import FINAL_EVAL_DIR, RUN_INFO, RunRecord, read_run_record


def render_model_card(record: RunRecord, final_eval: dict | None) -> str:
    """Markdown model card with Hub front matter.

    >>> card = render_model_card(RunRecord(task="countdown", algorithm="dr_grpo", model="Qwen/Qwen3-1.7B",
    ...                                    dataset="d", max_completion_length=512), None)
    >>> "- dr-grpo" in card and "Qwen/Qwen3-1.7B" in card and "- countdown" in card
    True
    """
    algorithm = ALGORITHMS.get(record.algorithm)
    tags = ["countdown-rl", algorithm.tag if algorithm else record.algorithm, "trl", record.task]
    # YAML written by the YAML library: a dataset's description holds ": ", "{" and quotes (reasoning-gym's options),
    # which written as plain text made front matter that the Hub's card parser (and PEFT's save) refused
    metadata = {"base_model": record.model, "datasets": [record.dataset], "library_name": "transformers",
                "tags": list(dict.fromkeys(tags))}
    front = ["---", yaml.safe_dump(metadata, sort_keys=False, width=float("inf")).rstrip("\n"), "---", ""]
    name = display_name(record.algorithm)
    budget = "?" if record.max_completion_length is None else record.max_completion_length
    body = [
        f"# {record.model} trained on {record.task} with {name}",
        "",
        f"Fine-tuned with countdown-rl ({name}, on TRL's GRPOTrainer) on the `{record.task}` task, with "
        "rewards checked by a verifier.",
        "",
        "| | |",
        "|---|---|",
        f"| task | `{record.task}` |",
        f"| base model | `{record.model}` |",
        f"| dataset | `{record.dataset}` |",
        f"| algorithm | {name} (`{record.algorithm}`) |",
        f"| max completion length | {budget} tokens |",
        *([f"| budget schedule | {describe_schedule(record.budget_schedule)} tokens |"]
          if record.budget_schedule else []),
        "",
        "## Held-out evaluation",
        "",
    ]
    if final_eval and final_eval.get("results"):
        meta = final_eval.get("meta", {})
        body.append(
            f"{meta.get('num_rows', '?')} held-out problems, "
            f"{'greedy' if not meta.get('temperature') else 'temperature ' + str(meta['temperature'])} decoding."
        )
        body += ["", markdown_table(final_eval["results"])]
        if final_eval.get("blind_rule"):
            body += ["", "Beside the best target-blind rule on the same problems (a fixed expression over the numbers "
                     "that never reads the target):", "", blind_table(final_eval["blind_rule"], final_eval["results"])]
    else:
        body.append("No final evaluation was run.")
    return "\n".join(front + body) + "\n"


def write_model_card(output_dir: str | Path, *, fallback: RunRecord | None = None) -> Path:
    """Render the card from ``run_info.json`` (or ``fallback``) and ``eval/eval.json`` into ``output_dir/README.md``.

    >>> import tempfile; from countdown_rl.runs.record import write_run_record
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = write_run_record(d, RunRecord(task="gsm8k", algorithm="grpo", max_completion_length=256))
    >>> "- grpo" in write_model_card(d).read_text()
    True
    """
    output_dir = Path(output_dir)
    record = read_run_record(output_dir) or fallback
    if record is None:
        raise FileNotFoundError(f"{output_dir / RUN_INFO} is missing and no fallback run record was given")
    final = output_dir / FINAL_EVAL_DIR / EVAL_JSON
    card = render_model_card(record, read_eval(final) if final.is_file() else None)
    path = output_dir / "README.md"
    write_atomic(path, card)
    return path
