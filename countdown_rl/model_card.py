"""The model card (``README.md`` in ``output_dir``) of a countdown-rl run.

1. ``run_info.json``, written by ``countdown-rl train`` before training, says what was trained: base model,
   dataset, algorithm, max completion length.
2. ``eval/eval.json``, written by the final evaluation, holds the held-out results table (when it exists).
3. ``render_model_card`` turns both into Markdown with Hub metadata (base_model, datasets, tags ``countdown-rl`` and
   ``grpo`` or ``dr-grpo``); ``write_model_card`` writes it atomically.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from countdown_rl.evaluation import markdown_table, read_eval
from countdown_rl.files import write_atomic, write_json_atomic

RUN_INFO = "run_info.json"
FINAL_EVAL = Path("eval") / "eval.json"
ALGORITHM_TAGS = {"grpo": "grpo", "dr_grpo": "dr-grpo"}




def render_model_card(
    *, base_model: str, dataset: str, algorithm: str, max_completion_length: int, final_eval: dict | None
) -> str:
    """Markdown model card with Hub front matter.

    >>> card = render_model_card(base_model="Qwen/Qwen3-1.7B", dataset="d", algorithm="dr_grpo",
    ...                          max_completion_length=512, final_eval=None)
    >>> "- dr-grpo" in card and "Qwen/Qwen3-1.7B" in card
    True
    """
    tags = ["countdown-rl", ALGORITHM_TAGS.get(algorithm, algorithm), "trl", "countdown"]
    front = ["---", f"base_model: {base_model}", "datasets:", f"- {dataset}", "library_name: transformers", "tags:"]
    front += [f"- {tag}" for tag in tags] + ["---", ""]
    name = {"grpo": "GRPO", "dr_grpo": "Dr.GRPO"}.get(algorithm, algorithm)
    body = [
        f"# {base_model} trained on Countdown with {name}",
        "",
        f"Fine-tuned with countdown-rl ({name}, on TRL's GRPOTrainer) to write an "
        "equation that reaches a target from given numbers, inside `<answer></answer>` tags.",
        "",
        "| | |",
        "|---|---|",
        f"| base model | `{base_model}` |",
        f"| dataset | `{dataset}` |",
        f"| algorithm | {name} (`{algorithm}`) |",
        f"| max completion length | {max_completion_length} tokens |",
        "",
        "## Held-out evaluation",
        "",
    ]
    if final_eval and final_eval.get("results"):
        meta = final_eval.get("meta", {})
        body.append(
            f"{meta.get('num_puzzles', '?')} held-out puzzles, "
            f"{'greedy' if not meta.get('temperature') else 'temperature ' + str(meta['temperature'])} decoding."
        )
        body += ["", markdown_table(final_eval["results"])]
    else:
        body.append("No final evaluation was run.")
    return "\n".join(front + body) + "\n"


def write_model_card(output_dir: str | Path, *, fallback: dict[str, Any] | None = None) -> Path:
    """Render the card from ``run_info.json`` (or ``fallback``) and ``eval/eval.json`` into ``output_dir/README.md``.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> write_json_atomic(d / RUN_INFO, {"model": "m", "dataset": "d", "algorithm": "grpo",
    ...                                  "max_completion_length": 256})
    >>> "- grpo" in write_model_card(d).read_text()
    True
    """
    output_dir = Path(output_dir)
    run_info = output_dir / RUN_INFO
    info = json.loads(run_info.read_text()) if run_info.is_file() else fallback
    if info is None:
        raise FileNotFoundError(f"{output_dir / RUN_INFO} is missing and no fallback run info was given")
    card = render_model_card(
        base_model=info["model"],
        dataset=info["dataset"],
        algorithm=info["algorithm"],
        max_completion_length=info["max_completion_length"],
        final_eval=read_eval(output_dir / FINAL_EVAL) if (output_dir / FINAL_EVAL).is_file() else None,
    )
    path = output_dir / "README.md"
    write_atomic(path, card)
    return path
