"""Loading a model and its tokenizer: every ``from_pretrained`` of the package's callers goes through here.

1. :func:`load_tokenizer`, :func:`load_model_config`, :func:`load_causal_lm`: a folder or Hub id with the recipe's
   revision, ``trust_remote_code``, attention implementation and dtype (``"auto"``, ``None`` or a torch dtype's
   name: ``"bfloat16"``).
2. :func:`load_recipe_model`: a training recipe's tokenizer and model (TRL's ``ModelConfig``).
3. :func:`load_evaluated_model`: what ``countdown-rl eval`` scores: a model folder or Hub id, or a LoRA adapter
   folder (``adapter_config.json``) loaded on its base (:func:`adapter_base`) and merged for generation; with vLLM,
   an engine (an adapter merged into a temporary folder first).
4. :func:`merge_saved_adapter`: a trained LoRA adapter folded into a fresh copy of its base, saved to
   ``<output_dir>/merged``.

Where a model comes from (a GGUF file converted once, ``smollm2``, the checks before loading) is
:mod:`countdown_rl.models.source`'s. torch, transformers and peft are imported inside the functions.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["ADAPTER_CONFIG", "adapter_base", "is_adapter", "load_causal_lm", "load_evaluated_model",
           "load_model_config", "load_recipe_model", "load_tokenizer", "merge_saved_adapter", "torch_dtype",
           "vllm_cpu_dtype"]

ADAPTER_CONFIG = "adapter_config.json"
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def torch_dtype(dtype: Any) -> Any:
    """``None`` and ``"auto"`` as they are, a name (``"bfloat16"``) as the torch dtype.

    >>> torch_dtype("auto"), str(torch_dtype("bfloat16"))
    ('auto', 'torch.bfloat16')
    """
    if dtype is None or dtype == "auto" or not isinstance(dtype, str):
        return dtype
    import torch

    return getattr(torch, dtype)


def load_tokenizer(name: str | Path, *, revision: str | None = None, trust_remote_code: bool = False):
    """The tokenizer of a model folder or Hub id."""
    from transformers import AutoTokenizer

    kwargs = {"revision": revision, "trust_remote_code": trust_remote_code} if revision or trust_remote_code else {}
    return AutoTokenizer.from_pretrained(str(name), **kwargs)


def load_model_config(name: str | Path, *, revision: str | None = None, trust_remote_code: bool = False):
    """The model's ``config.json`` (no weights): what is checked before the weights load."""
    from transformers import AutoConfig

    kwargs = {"revision": revision, "trust_remote_code": trust_remote_code} if revision or trust_remote_code else {}
    return AutoConfig.from_pretrained(str(name), **kwargs)


def load_causal_lm(name: str | Path, *, dtype: Any = None, revision: str | None = None,
                   trust_remote_code: bool = False, attn_implementation: str | None = None):
    """A causal LM's weights from a model folder or Hub id (``dtype``: :func:`torch_dtype`)."""
    from transformers import AutoModelForCausalLM

    kwargs = {"revision": revision, "trust_remote_code": trust_remote_code, "attn_implementation": attn_implementation,
              "dtype": torch_dtype(dtype)}
    return AutoModelForCausalLM.from_pretrained(str(name), **{k: v for k, v in kwargs.items() if v is not None})


def load_recipe_model(model_args: Any, *, trust_remote_code: bool = False, check_config=None):
    """``(model, tokenizer)`` of a recipe's TRL ``ModelConfig`` (``model_name_or_path``, ``model_revision``,
    ``attn_implementation``, ``dtype``). ``check_config(tokenizer, config)``, when given, runs between the tokenizer
    and the weights (e.g. the compiled backend's pad/EOS and cache-length checks): what it raises, nothing loaded
    the weights yet."""
    name, revision = model_args.model_name_or_path, model_args.model_revision
    tokenizer = load_tokenizer(name, revision=revision, trust_remote_code=trust_remote_code)
    if check_config is not None:
        check_config(tokenizer, load_model_config(name, revision=revision, trust_remote_code=trust_remote_code))
    model = load_causal_lm(name, dtype=model_args.dtype, revision=revision, trust_remote_code=trust_remote_code,
                           attn_implementation=model_args.attn_implementation)
    return model, tokenizer


def is_adapter(model: str | Path) -> bool:
    """Whether ``model`` is a LoRA adapter folder (it holds ``adapter_config.json``)."""
    return (Path(model).expanduser() / ADAPTER_CONFIG).is_file()


def adapter_base(path: str | Path, key: str = "--model_name_or_path") -> str:
    """The base model an adapter folder names (``base_model_name_or_path``); one-line ValueError if none."""
    path = Path(path).expanduser()
    config = json.loads((path / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    base = config.get("base_model_name_or_path")
    if not base:
        raise ValueError(f"{key} {path}: {ADAPTER_CONFIG} names no base_model_name_or_path")
    return base


def vllm_cpu_dtype(dtype: str) -> str:
    """``dtype`` for a vLLM engine: ``auto`` on vLLM's CPU platform is this CPU's precision (bfloat16 with bf16
    kernels, else float32), never vLLM's own ``auto`` (bfloat16 on every x86 CPU, emulated without the kernels)."""
    from countdown_rl.generation.vllm_settings import engine_dtype
    from countdown_rl.generation.vllm_sync import vllm_on_cpu
    from countdown_rl.runs.device import cpu_has_bf16_kernels

    if dtype != "auto" or not vllm_on_cpu():
        return dtype
    return engine_dtype(cpu_has_bf16_kernels())


def _vllm_engine(path: str, dtype: str, seed: int, kwargs: dict[str, Any] | None):
    from countdown_rl.generation.sampling import vllm_engine

    return vllm_engine(path, dtype=vllm_cpu_dtype(dtype), seed=seed, **(kwargs or {}))


def load_evaluated_model(
    model: str, *, dtype: str = "auto", device: str | None = None, for_vllm: bool = False, seed: int = 0,
    vllm_kwargs: dict[str, Any] | None = None,
):
    """Load ``(model, tokenizer)`` to evaluate; a LoRA adapter folder is loaded on its base model and merged.

    With ``for_vllm`` the model is a ``vllm.LLM`` (an adapter is merged into a temporary folder first), built with
    ``vllm_kwargs`` (e.g. ``{"enforce_eager": True}``).
    """
    import torch

    path = Path(model).expanduser()
    adapter = is_adapter(path)
    # An adapter folder usually holds the tokenizer training saved; otherwise use the base model's.
    tokenizer_source = model
    if adapter and not any((path / f).is_file() for f in _TOKENIZER_FILES):
        tokenizer_source = adapter_base(path)
    tokenizer = load_tokenizer(tokenizer_source)
    if for_vllm and not adapter:
        return _vllm_engine(model, dtype, seed, vllm_kwargs), tokenizer
    if adapter:
        from peft import AutoPeftModelForCausalLM

        loaded = AutoPeftModelForCausalLM.from_pretrained(str(path), dtype=torch_dtype(dtype))
        # Merged weights generate faster and the same as base + adapter.
        loaded = loaded.merge_and_unload()
    else:
        loaded = load_causal_lm(model, dtype=dtype)
    if for_vllm:
        merged = tempfile.mkdtemp(prefix="countdown-rl-merged-")
        atexit.register(shutil.rmtree, merged, True)  # a full copy of the weights: do not leave it behind
        loaded.save_pretrained(merged)
        tokenizer.save_pretrained(merged)
        return _vllm_engine(merged, dtype, seed, vllm_kwargs), tokenizer
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    return loaded.to(device), tokenizer


def merge_saved_adapter(output_dir: str, base_model: str, **load_kwargs: Any) -> Path:
    """Fold the LoRA adapter saved in ``output_dir`` into a fresh copy of ``base_model`` and save the full model and
    the tokenizer to ``<output_dir>/merged`` (one process; the trainer's own model, sharded or not, is untouched).
    ``load_kwargs`` go to :func:`load_causal_lm` (dtype, revision, trust_remote_code)."""
    from peft import PeftModel

    base = load_causal_lm(base_model, **load_kwargs)
    merged = PeftModel.from_pretrained(base, output_dir).merge_and_unload()
    target = Path(output_dir) / "merged"
    merged.save_pretrained(target)
    load_tokenizer(output_dir).save_pretrained(target)
    return target
