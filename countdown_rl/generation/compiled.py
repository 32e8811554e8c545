"""Compiled static-cache generation for training and evaluation (``generation_backend: compiled``).

TRL 1.16 generates with a dynamic cache and ``disable_compile=True``; on an H100 a static cache with a compiled
decode step was 3.5x faster. The algorithm:

1. Size once: the static cache holds ``max(prompt_buckets) + max_new_tokens`` positions
   (``generation_config.max_cache_len``), so every call reuses one decode graph whatever its prompt length.
2. Pad: a batch's prompts are left-padded to the smallest bucket that holds its longest prompt, and a short
   batch is padded with copies of its last prompt up to the warmed-up row count (the copies are dropped), so
   shapes repeat. A prompt longer than every bucket adds a bucket (multiple of 64): the cache grows, one
   recompile, logged once.
3. Prepare: the model goes to eval mode with gradient checkpointing off, the cache on and the input embeddings'
   forward hooks (input-require-grads, backward only) detached; LoRA adapters are merged into the base weights
   (generating through unmerged adapters halved the H100's speed), which are backed up first and copied back
   afterwards, so the trained weights stay bit-identical (peft's unmerge subtracts the delta again, which is not
   exact in floating point).
4. Generate: transformers' ``generate`` with a static cache (:func:`static_cache`: transformers' own, but keys and
   values that come in two dtypes, as under bf16 autocast over fp32 weights, are kept in the wider) and a
   ``CompileConfig``: transformers compiles the one-token decode forward (the prefill stays eager); logits
   processors, sampling and stopping run eagerly as in plain ``generate``, so every sampling parameter, EOS id and
   the RNG stream are the plain path's. Tokens equal the plain path's as long as the compiled logits round the same
   way; on the CPU in float32 they do (greedy and seeded sampling, tested), and under bf16 autocast greedy tokens
   did in the tested runs; nothing guarantees it bit for bit in bf16.
5. Warm up before the first generation (the trainer does it when training begins, after the Trainer set up
   checkpointing: :mod:`countdown_rl.training.rollouts`) or before an evaluation: one short call per row count;
   the first compile's time is logged once instead of landing in step 1's ``step_time``. Later new graphs are
   logged as recompiles.
6. Fall back: where ``torch.compile`` cannot run (disabled, unsupported platform, no C++ compiler for inductor
   on CPU) or the warm-up fails, one warning line, and plain ``generate`` is used from then on.

On CPU, inductor compiles with the system C++ compiler: the compiled path runs (the tests use it), it is just
not where the speed-up matters.

>>> bucket_for(70, [64, 128]), bucket_for(200, [64, 128]), round_up(130, 64)
(128, None, 192)
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import os
import shutil
import time
from collections.abc import Iterator, Sequence

from countdown_rl.generation.sampling import left_pad, prompt_texts

logger = logging.getLogger("countdown_rl.generation.compiled")

BUCKET_MULTIPLE = 64  # automatic buckets and grown buckets are multiples of this


def round_up(n: int, multiple: int) -> int:
    """The smallest multiple of ``multiple`` that is >= ``n`` (and > 0)."""
    return max(multiple, -(-int(n) // multiple) * multiple)


def bucket_for(length: int, buckets: Sequence[int]) -> int | None:
    """The smallest bucket that holds ``length`` tokens, or None when none does."""
    return next((b for b in sorted(buckets) if b >= length), None)


def automatic_buckets(prompt_lengths: Sequence[int]) -> list[int]:
    """One bucket: the longest prompt seen, rounded up to a multiple of 64 (Countdown prompts vary by a few tokens).

    >>> automatic_buckets([101, 117, 96])
    [128]
    """
    if not prompt_lengths:
        raise ValueError("no prompts to size the generation buckets from; set generation_prompt_buckets")
    return [round_up(max(prompt_lengths), BUCKET_MULTIPLE)]


def compile_unavailable_reason(device_type: str = "cpu") -> str | None:
    """Why ``torch.compile`` cannot run here, or None when it can (checked cheaply; the warm-up is the real test)."""
    import torch

    if not hasattr(torch, "compile"):
        return f"torch {torch.__version__} has no torch.compile"
    import torch._dynamo

    if not torch._dynamo.is_dynamo_supported():
        return "torch.compile does not support this Python or platform"
    if getattr(torch._dynamo.config, "disable", False):
        return "torch.compile is disabled (TORCHDYNAMO_DISABLE)"
    if device_type == "cpu":
        compilers = [os.environ.get("CXX"), "g++", "c++", "clang++"]
        if not any(c and shutil.which(c) for c in compilers):
            return "no C++ compiler found for inductor on CPU (install g++ or set CXX)"
    return None


def check_generation_lengths(tokenizer, model_config, prompt_buckets: Sequence[int] | None, max_new_tokens: int):
    """Before the weights load: pad/EOS ids exist and fit the vocabulary; the static cache fits the positions.

    ``model_config`` is the model's ``PretrainedConfig`` (``AutoConfig``, cheap). Raises ValueError, one line.
    """
    vocab = getattr(model_config.get_text_config(decoder=True), "vocab_size", None)
    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
    if pad is None:
        raise ValueError("generation_backend=compiled: the tokenizer has no pad token (needed to left-pad prompts "
                         "to the buckets); set tokenizer.pad_token")
    if eos is None:
        raise ValueError("generation_backend=compiled: the tokenizer has no EOS token")
    for name, token in (("pad", pad), ("eos", eos)):
        if vocab is not None and not 0 <= token < vocab:
            raise ValueError(f"generation_backend=compiled: tokenizer {name}_token_id={token} is outside the "
                             f"model's vocabulary ({vocab} ids); tokenizer and model do not match")
    if prompt_buckets:
        positions = getattr(model_config.get_text_config(decoder=True), "max_position_embeddings", None)
        cache = max(prompt_buckets) + max_new_tokens
        if positions is not None and cache > positions:
            raise ValueError(f"generation_prompt_buckets: the static cache needs {max(prompt_buckets)} prompt + "
                             f"{max_new_tokens} completion = {cache} positions, the model has {positions}; "
                             "lower the largest bucket or max_completion_length")


@contextlib.contextmanager
def merged_lora(model) -> Iterator[None]:
    """Merge active LoRA (peft tuner) layers into their base weights; afterwards restore those weights exactly.

    A no-op for models without adapters. Backs up only the weights of the wrapped base layers.
    """
    try:
        from peft.tuners.tuners_utils import BaseTunerLayer
    except ImportError:
        yield
        return
    layers = [m for m in model.modules() if isinstance(m, BaseTunerLayer) and not m.merged and not m.disable_adapters]
    backups = []
    try:
        for layer in layers:
            base = layer.get_base_layer()
            backups.append([(p, p.detach().clone()) for p in base.parameters(recurse=False)])
            layer.merge()
        yield
    finally:
        import torch

        with torch.no_grad():
            for layer, saved in zip(layers, backups):
                if layer.merged:
                    layer.unmerge()  # bookkeeping (merged_adapters); the weights are copied back next
                for param, original in saved:
                    param.copy_(original)


@contextlib.contextmanager
def prepared_for_generation(model) -> Iterator[None]:
    """Eval mode, gradient checkpointing flags off, embedding hooks detached, LoRA merged; all restored afterwards.

    The flags are flipped on the layers directly (not ``gradient_checkpointing_disable``) so that the checkpointing
    settings survive, and so that training-time and evaluation-time calls see the same modules: one graph. The
    input embeddings' forward hooks are detached for the call: with checkpointing, transformers/peft register an
    input-require-grads hook there (it only matters for backward) and re-register one on every enable, so their
    count changes from step to step, and dynamo guards on it (a recompile per step otherwise).
    """
    from collections import OrderedDict

    was_training = model.training
    checkpointed = [m for m in model.modules() if getattr(m, "gradient_checkpointing", False) is True]
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    hooks = getattr(embeddings, "_forward_hooks", None)
    try:
        model.eval()
        for module in checkpointed:
            module.gradient_checkpointing = False
        if hooks:
            embeddings._forward_hooks = OrderedDict()
        with merged_lora(model):
            yield
    finally:
        if hooks:
            embeddings._forward_hooks = hooks
        for module in checkpointed:
            module.gradient_checkpointing = True
        model.train(was_training)


def static_cache(model, max_cache_len: int):
    """The static cache a compiled call fills: transformers' ``StaticCache``, but keys and values that reach it in
    two dtypes are stored in the wider one.

    Under bf16 autocast over fp32 weights (the CPU demo's setting) the projections come out bf16 but the rotary
    embedding multiplies the keys by fp32 cos/sin: keys fp32, values bf16. transformers' static cache takes one
    dtype from the first keys and cannot store the values (``index_copy_(): ... Float and BFloat16``), so the
    compiled warm-up failed there. Widening is exact (bf16 -> fp32 loses nothing) and attention under autocast
    casts both down as it does for plain ``generate``'s dynamic cache (fp32 keys, bf16 values). With one dtype
    (fp32 weights, bf16 weights, with or without autocast) it is transformers' cache unchanged.
    """
    return _widest_dtype_cache_class()(config=model.config.get_text_config(decoder=True), max_cache_len=max_cache_len)


@functools.cache
def _widest_dtype_cache_class():
    """One class for the process (the compiled graph guards on the cache's type): built on first use, as
    transformers is imported lazily here."""
    import torch
    from transformers import StaticCache

    class WidestDtypeStaticCache(StaticCache):
        def update(self, key_states, value_states, layer_idx, *args, **kwargs):
            if key_states.dtype != value_states.dtype:
                wide = torch.promote_types(key_states.dtype, value_states.dtype)
                key_states, value_states = key_states.to(wide), value_states.to(wide)
            return super().update(key_states, value_states, layer_idx, *args, **kwargs)

    return WidestDtypeStaticCache


def _graph_count() -> int:
    """Graphs dynamo has compiled in this process (torch's own counter; 0 if it moves)."""
    try:
        from torch._dynamo.utils import counters

        return int(counters["stats"]["unique_graphs"])
    except (ImportError, KeyError, TypeError):
        return 0


class CompiledGeneration:
    """Static-cache, compiled ``generate`` with bucketed prompts (see the module docstring).

    >>> gen = CompiledGeneration(max_new_tokens=256, prompt_buckets=[128, 192])
    >>> gen.cache_length, gen.width_for([40, 150])
    (448, 192)
    """

    def __init__(self, *, max_new_tokens: int, prompt_buckets: Sequence[int], rows: int | None = None):
        if max_new_tokens <= 0:
            raise ValueError(f"max_new_tokens must be positive, got {max_new_tokens}")
        if not prompt_buckets or any(b <= 0 for b in prompt_buckets):
            raise ValueError(f"prompt buckets must be positive token counts, got {list(prompt_buckets or [])}")
        self.max_new_tokens = int(max_new_tokens)
        self.buckets = sorted({int(b) for b in prompt_buckets})
        self.rows = rows  # batches with fewer rows are padded up to this many
        self.fallback_reason: str | None = None
        self.compile_seconds: dict[int, float] = {}  # sequences per call -> first-compile seconds
        self._graphs_after_warmup: int | None = None
        self._warming = False
        self._reported_shapes: set[tuple[int, int]] = set()

    @property
    def active(self) -> bool:
        return self.fallback_reason is None

    @property
    def cache_length(self) -> int:
        return self.buckets[-1] + self.max_new_tokens

    def width_for(self, lengths: Sequence[int]) -> int:
        """The bucket for a batch's longest prompt; a longer prompt adds a bucket and grows the cache (warned)."""
        longest = max(lengths)
        width = bucket_for(longest, self.buckets)
        if width is None:
            width = round_up(longest, BUCKET_MULTIPLE)
            logger.warning("compiled generation: a %d-token prompt exceeds the largest bucket %d; adding bucket %d "
                           "(the static cache grows to %d: one recompile)", longest, self.buckets[-1], width,
                           width + self.max_new_tokens)
            self.buckets = sorted({*self.buckets, width})
        return width

    def generation_config(self, base):
        """A copy of ``base`` (a ``GenerationConfig``) set up for the static cache and compiled decoding."""
        from transformers import CompileConfig

        config = copy.deepcopy(base)
        config.cache_implementation = None  # generate() passes the static cache in (static_cache)
        config.max_cache_len = self.cache_length
        config.use_cache = True
        config.disable_compile = False
        # dynamic=False: shapes are fixed by design, so a new shape is a visible recompile, not a slower graph.
        compile_config = CompileConfig(fullgraph=False, dynamic=False)
        compile_config._compile_all_devices = True  # transformers only auto-compiles on accelerators otherwise
        config.compile_config = compile_config
        return config

    def generate(self, model, prompt_ids: Sequence[Sequence[int]], base_config, *, rows: int | None = None):
        """Completion ids ``(len(prompt_ids) * num_return_sequences, T)`` for token-id prompts (no prompt part).

        ``base_config`` is the ``GenerationConfig`` the plain path would use (sampling, EOS, pad, budget).
        """
        import torch

        if base_config.pad_token_id is None:
            raise ValueError("compiled generation needs a pad_token_id in the generation config")
        width = self.width_for([len(p) for p in prompt_ids])
        padded_rows = max(rows or self.rows or 0, len(prompt_ids))
        input_ids, attention_mask = left_pad(prompt_ids, base_config.pad_token_id, width, rows=padded_rows)
        device = next(model.parameters()).device
        config = self.generation_config(base_config)
        config.max_new_tokens = base_config.max_new_tokens or self.max_new_tokens
        if config.max_new_tokens > self.max_new_tokens:
            raise ValueError(f"max_new_tokens={config.max_new_tokens} exceeds the static cache's budget "
                             f"{self.max_new_tokens}; build CompiledGeneration with the largest budget")
        before = _graph_count()
        with prepared_for_generation(model), torch.no_grad():
            output = model.generate(input_ids=input_ids.to(device), attention_mask=attention_mask.to(device),
                                    generation_config=config, past_key_values=static_cache(model, self.cache_length))
        if self._graphs_after_warmup is not None and not self._warming and _graph_count() > before:
            shape = (padded_rows, width)
            if shape not in self._reported_shapes:
                self._reported_shapes.add(shape)
                logger.warning("compiled generation: recompiled for %d rows x %d prompt tokens (a shape the "
                               "warm-up did not cover)", *shape)
        keep = len(prompt_ids) * (config.num_return_sequences or 1)
        return output[:keep, width:]

    def warm_up(self, model, base_config, rows: int) -> bool:
        """Compile for batches of ``rows`` prompts now, log the time once; on failure fall back (one warning).

        Returns whether the compiled path is active.
        """
        import torch

        sequences = rows * (base_config.num_return_sequences or 1)  # the batch the decode graph sees
        if not self.active or sequences in self.compile_seconds:
            return self.active
        device = next(model.parameters()).device
        reason = compile_unavailable_reason(device.type)
        if reason is None:
            config = copy.deepcopy(base_config)
            config.max_new_tokens, config.min_new_tokens = 2, 2  # one prefill + one compiled decode step
            dummy = [[base_config.pad_token_id if base_config.pad_token_id is not None else 0] * self.buckets[-1]]
            start = time.perf_counter()
            self._warming = True
            try:
                # A seeded side RNG: warming up must not move training's random stream.
                with torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else []):
                    self.generate(model, dummy, config, rows=rows)
            except Exception as err:  # noqa: BLE001 - any compile failure means: generate without compiling
                reason = f"the warm-up compile failed ({type(err).__name__}: {' '.join(str(err).split())[:160]})"
            else:
                self._warming = False
                seconds = time.perf_counter() - start
                self.compile_seconds[sequences] = seconds
                self._graphs_after_warmup = _graph_count()
                logger.info("compiled generation: first compile %.1f s (%d sequences, static cache %d = prompt "
                            "bucket %d + %d new tokens, device %s)", seconds, sequences, self.cache_length,
                            self.buckets[-1], self.max_new_tokens, device.type)
                return True
        self._warming = False
        self.fallback_reason = reason
        logger.warning("compiled generation unavailable: %s; falling back to plain generate", reason)
        return False


def completion_lists(completion_ids, eos_token_ids: Sequence[int]) -> list[list[int]]:
    """Per row, the ids up to and including the first EOS (all of them when none): TRL's completion mask.

    >>> import torch
    >>> completion_lists(torch.tensor([[5, 3, 9], [5, 6, 7]]), [3])
    [[5, 3], [5, 6, 7]]
    """
    eos = set(int(e) for e in eos_token_ids)
    out = []
    for row in completion_ids.tolist():
        end = next((i + 1 for i, token in enumerate(row) if token in eos), len(row))
        out.append(row[:end])
    return out


def compiled_for(tokenizer, prompts: Sequence, max_new_tokens: int, chat_template_kwargs) -> CompiledGeneration:
    """A ``CompiledGeneration`` whose one bucket holds the longest of these prompts (tokenized as ``generate`` does)."""
    texts = prompt_texts(tokenizer, prompts, chat_template_kwargs)
    lengths = [len(tokenizer(t, add_special_tokens=isinstance(p, str))["input_ids"]) for t, p in zip(texts, prompts)]
    return CompiledGeneration(max_new_tokens=max_new_tokens, prompt_buckets=automatic_buckets(lengths))


def rollout_generator(*, max_new_tokens: int, prompt_buckets: Sequence[int] | None, prompt_lengths,
                      rows: int | None = None) -> CompiledGeneration:
    """The registry's rollout factory: ``prompt_buckets``, or one bucket sized from ``prompt_lengths()`` (a
    callable, so the prompts are only tokenized when no bucket is given)."""
    buckets = prompt_buckets or automatic_buckets(prompt_lengths())
    return CompiledGeneration(max_new_tokens=max_new_tokens, prompt_buckets=buckets, rows=rows)


def evaluation_options(tokenizer, prompts: Sequence, max_new_tokens: int, chat_template_kwargs,
                       given: CompiledGeneration | None = None) -> dict:
    """The evaluation's extra keyword for ``sampling.generate``: ``given``, or one sized for these prompts."""
    return {"compiled": given or compiled_for(tokenizer, prompts, max_new_tokens, chat_template_kwargs)}
