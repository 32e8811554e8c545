"""Score a model on Countdown puzzles at one or more token budgets (shared by eval, training, demo, benchmarks).

1. Generate: :func:`generate` (transformers, batched, left padding) or :func:`generate_vllm` returns, per prompt,
   ``num_samples`` :class:`Completion` objects (text, tokens up to and including EOS, whether the budget cut it).
2. Score: :func:`score_samples` runs the exact verifier on every completion and makes one JSON-ready row each.
3. Aggregate: :func:`summarise` turns rows into a :class:`BudgetResult` (accuracy on first samples, token use,
   truncation, unbiased pass@k). :func:`evaluate_budgets` generates once at the largest budget and cuts the
   same completions down to each smaller budget -- identical to separate runs, since a completion never sees
   its budget -- and :func:`evaluate_puzzles` is its one-budget form.
4. Write and read: :func:`write_eval_outputs` writes ``eval.json``, ``eval.md`` and ``samples.jsonl``
   atomically; :func:`read_eval`, :func:`read_samples` and :func:`markdown_table` serve the report.
5. :func:`countdown_metrics` gives the few fractions the trainer logs as ``eval/accuracy`` etc.

torch, transformers and vllm are imported inside the functions that need them, so the report and the CLIs'
argument checks stay fast.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from countdown_rl.files import format_number, format_percent, render_markdown_table, write_atomic
from countdown_rl.prompts import build_prompt
from countdown_rl.verifier import Outcome, score_completion

__all__ = [
    "BudgetResult",
    "Completion",
    "countdown_metrics",
    "cut_to_budget",
    "evaluate_budgets",
    "evaluate_puzzles",
    "format_number",
    "format_percent",
    "generate",
    "generate_vllm",
    "markdown_table",
    "pass_at_k",
    "read_eval",
    "read_samples",
    "render_markdown_table",
    "score_samples",
    "summarise",
    "write_atomic",
    "write_eval_outputs",
]

BACKENDS = ("transformers", "compiled", "vllm")
EVAL_JSON, EVAL_MD, SAMPLES_JSONL = "eval.json", "eval.md", "samples.jsonl"


# --------------------------------------------------------------------------------------------------------------
# Data types
# --------------------------------------------------------------------------------------------------------------


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


@dataclass
class BudgetResult:
    """Aggregate scores at one token budget.

    Accuracy and the correct / partial / failed counts are over each puzzle's FIRST sample (greedy or sample 0),
    so they are comparable between greedy and sampled runs; token statistics, truncation and pass@k use every
    completion.
    """

    max_tokens: int
    num_puzzles: int
    num_samples: int
    accuracy: float
    correct: int
    partial: int
    failed: int
    mean_tokens: float
    max_tokens_used: int
    utilisation: float
    truncation_rate: float
    mean_tokens_correct: float | None
    mean_tokens_incorrect: float | None
    pass_at_k: dict[int, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (pass@k keys stay ints here; JSON turns them into strings).

        >>> r = summarise([{"outcome": "correct", "num_tokens": 4, "truncated": False, "sample_index": 0}], 8)
        >>> r.to_dict()["accuracy"], r.to_dict()["utilisation"]
        (1.0, 0.5)
        """
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BudgetResult:
        """Inverse of :meth:`to_dict`, also after a JSON round trip (string pass@k keys); unknown keys are ignored."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["pass_at_k"] = {int(k): float(v) for k, v in (data.get("pass_at_k") or {}).items()}
        return cls(**values)


# --------------------------------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------------------------------


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


def _prompt_texts(tokenizer, prompts: Sequence[Any], chat_template_kwargs: Mapping[str, Any] | None) -> list[str]:
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


def _left_pad(ids: Sequence[Sequence[int]], pad_id: int):
    """Left-padded ``input_ids`` and ``attention_mask`` tensors (done here so the tokenizer is never mutated)."""
    import torch

    width = max(len(x) for x in ids)
    input_ids = torch.full((len(ids), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(ids), width), dtype=torch.long)
    for row, x in enumerate(ids):
        if x:
            input_ids[row, width - len(x) :] = torch.tensor(x, dtype=torch.long)
            attention_mask[row, width - len(x) :] = 1
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
    With ``compiled`` (a :class:`countdown_rl.compiled_generation.CompiledGeneration`) generation uses the static
    cache and compiled decoding; the last batch is padded to a full one (its extra rows dropped).
    """
    import torch
    from tqdm.auto import tqdm

    _check_sampling(max_new_tokens, temperature, num_samples)
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    texts = _prompt_texts(tokenizer, prompts, chat_template_kwargs)
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
                input_ids, attention_mask = _left_pad(ids, pad_id)
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
    """Like :func:`generate`, with vLLM: ``model`` is a ``vllm.LLM`` or a model path/id to load one from.

    ``tokenizer`` (None: the engine's) renders chat prompts; ``batch_size`` is ignored (vLLM schedules itself).
    """
    del batch_size
    _check_sampling(max_new_tokens, temperature, num_samples)
    try:
        import vllm
    except ImportError as err:
        raise ImportError("backend 'vllm' needs vllm: pip install 'countdown-rl[vllm]' (CUDA GPU only)") from err
    llm = vllm.LLM(model=str(model), seed=seed, dtype=dtype) if isinstance(model, (str, os.PathLike)) else model
    tokenizer = tokenizer if tokenizer is not None else llm.get_tokenizer()
    params = vllm.SamplingParams(n=num_samples, temperature=float(temperature), max_tokens=max_new_tokens, seed=seed)
    outputs = llm.generate(_prompt_texts(tokenizer, prompts, chat_template_kwargs), params, use_tqdm=show_progress)
    return [
        [
            # vLLM keeps the EOS token in token_ids and says "length" when the budget stopped it.
            Completion(o.text, len(o.token_ids), o.finish_reason == "length", tuple(int(t) for t in o.token_ids))
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


# --------------------------------------------------------------------------------------------------------------
# Scoring and aggregation
# --------------------------------------------------------------------------------------------------------------


def score_samples(
    puzzles: Sequence[Mapping[str, Any]], prompts: Sequence[Any], completions: Sequence[Sequence[Completion]]
) -> list[dict[str, Any]]:
    """One row per completion, puzzle-major: nums, target, prompt, completion, extracted answer, outcome, ...

    >>> rows = score_samples([{"nums": [7, 7, 65], "target": 51}], ["p"],
    ...                      [[Completion("<answer>(65 - 7) - 7</answer>", 9, False)]])
    >>> rows[0]["answer"], rows[0]["outcome"], rows[0]["reward"]
    ('(65 - 7) - 7', 'correct', 1.0)
    """
    if not len(puzzles) == len(prompts) == len(completions):
        raise ValueError(f"{len(puzzles)} puzzles, {len(prompts)} prompts and {len(completions)} completion lists")
    rows = []
    for puzzle, prompt, samples in zip(puzzles, prompts, completions):
        nums, target = [int(x) for x in puzzle["nums"]], int(puzzle["target"])
        for index, completion in enumerate(samples):
            score = score_completion(completion.text, nums, target)
            rows.append(
                {
                    "nums": nums,
                    "target": target,
                    "prompt": prompt,
                    "completion": completion.text,
                    "answer": score.equation,
                    "outcome": score.outcome.value,
                    "reward": score.reward,
                    "num_tokens": completion.num_tokens,
                    "truncated": completion.truncated,
                    "sample_index": index,
                }
            )
    return rows


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one puzzle: ``1 - C(n - c, k) / C(n, k)`` with n samples of which c are correct.

    >>> pass_at_k(4, 1, 1), pass_at_k(4, 1, 2), pass_at_k(4, 0, 4), pass_at_k(4, 1, 4)
    (0.25, 0.5, 0.0, 1.0)
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    # Product form: the binomials themselves overflow floats for large n.
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def _pass_ks(num_samples: int) -> list[int]:
    """1, 2, 4, ... below num_samples, and num_samples itself."""
    ks = [2**i for i in range(num_samples.bit_length()) if 2**i < num_samples]
    return [*ks, num_samples]


def summarise(samples: Sequence[Mapping[str, Any]], max_tokens: int, num_samples: int = 1) -> BudgetResult:
    """Aggregate rows from :func:`score_samples` (``num_samples`` consecutive rows per puzzle) at one budget.

    >>> rows = [{"outcome": o, "num_tokens": t, "truncated": t == 8, "sample_index": 0}
    ...         for o, t in [("correct", 4), ("partial", 6), ("failed", 8)]]
    >>> r = summarise(rows, max_tokens=8)
    >>> r.accuracy, (r.correct, r.partial, r.failed), r.mean_tokens, r.truncation_rate
    (0.3333333333333333, (1, 1, 1), 6.0, 0.3333333333333333)
    """
    if max_tokens <= 0 or num_samples < 1:
        raise ValueError(f"need max_tokens > 0 and num_samples >= 1, got {max_tokens}, {num_samples}")
    if not samples:
        raise ValueError("no samples to summarise")
    if len(samples) % num_samples:
        raise ValueError(f"{len(samples)} rows are not a whole number of puzzles x {num_samples} samples")
    puzzles = [samples[i : i + num_samples] for i in range(0, len(samples), num_samples)]
    for group in puzzles:
        if [row["sample_index"] for row in group] != list(range(num_samples)):
            raise ValueError("rows must be puzzle-major with sample_index 0..num_samples-1 for each puzzle")
    first = [Outcome(group[0]["outcome"]) for group in puzzles]
    tokens = [int(row["num_tokens"]) for row in samples]
    correct_tokens = [int(r["num_tokens"]) for r in samples if r["outcome"] == Outcome.CORRECT.value]
    incorrect_tokens = [int(r["num_tokens"]) for r in samples if r["outcome"] != Outcome.CORRECT.value]
    mean_tokens = sum(tokens) / len(tokens)
    ks = _pass_ks(num_samples) if num_samples > 1 else []
    hits = [sum(row["outcome"] == Outcome.CORRECT.value for row in group) for group in puzzles]
    return BudgetResult(
        max_tokens=max_tokens,
        num_puzzles=len(puzzles),
        num_samples=num_samples,
        accuracy=first.count(Outcome.CORRECT) / len(puzzles),
        correct=first.count(Outcome.CORRECT),
        partial=first.count(Outcome.PARTIAL),
        failed=first.count(Outcome.FAILED),
        mean_tokens=mean_tokens,
        max_tokens_used=max(tokens),
        utilisation=mean_tokens / max_tokens,
        truncation_rate=sum(bool(row["truncated"]) for row in samples) / len(samples),
        mean_tokens_correct=sum(correct_tokens) / len(correct_tokens) if correct_tokens else None,
        mean_tokens_incorrect=sum(incorrect_tokens) / len(incorrect_tokens) if incorrect_tokens else None,
        pass_at_k={k: sum(pass_at_k(num_samples, c, k) for c in hits) / len(hits) for k in ks},
    )


def countdown_metrics(result: BudgetResult) -> dict[str, float]:
    """What the trainer logs at each evaluation (as ``eval/accuracy`` etc.): fractions of puzzles and mean tokens.

    >>> r = summarise([{"outcome": "partial", "num_tokens": 6, "truncated": False, "sample_index": 0}], 8)
    >>> countdown_metrics(r)
    {'accuracy': 0.0, 'partial': 1.0, 'failed': 0.0, 'mean_completion_tokens': 6.0}
    """
    return {
        "accuracy": result.accuracy,
        "partial": result.partial / result.num_puzzles,
        "failed": result.failed / result.num_puzzles,
        "mean_completion_tokens": result.mean_tokens,
    }


# --------------------------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------------------------


def _prompts_for(puzzles: Sequence[Mapping[str, Any]], template: str) -> list[Any]:
    return [p["prompt"] if p.get("prompt") is not None else build_prompt(p["nums"], p["target"], template)
            for p in puzzles]


def _compiled_for(tokenizer, prompts: Sequence[Any], max_new_tokens: int, chat_template_kwargs):
    """A ``CompiledGeneration`` whose one bucket holds the longest of these prompts (tokenized as ``generate`` does)."""
    from countdown_rl.compiled_generation import CompiledGeneration, automatic_buckets

    texts = _prompt_texts(tokenizer, prompts, chat_template_kwargs)
    lengths = [len(tokenizer(t, add_special_tokens=isinstance(p, str))["input_ids"]) for t, p in zip(texts, prompts)]
    return CompiledGeneration(max_new_tokens=max_new_tokens, prompt_buckets=automatic_buckets(lengths))


def _load_tokenizer(name_or_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(name_or_path))


def evaluate_budgets(
    model,
    tokenizer,
    puzzles: Sequence[Mapping[str, Any]],
    *,
    budgets: Iterable[int],
    template: str = "r1_zero",
    batch_size: int = 32,
    temperature: float = 0.0,
    num_samples: int = 1,
    seed: int = 0,
    backend: str = "transformers",
    chat_template_kwargs: Mapping[str, Any] | None = None,
    show_progress: bool = True,
    compiled=None,
) -> list[tuple[BudgetResult, list[dict[str, Any]]]]:
    """Score ``puzzles`` at every budget from ONE generation at the largest budget; results in budget order.

    A completion never sees its budget, so its first B tokens are what a run with ``max_new_tokens=B`` makes
    (the same batches, the same seed): cutting is exact for greedy decoding and for seeded sampling alike.
    ``backend="compiled"`` uses ``compiled`` (a ``CompiledGeneration``; default: one sized for these prompts).
    """
    budgets = sorted(set(int(b) for b in budgets))
    if not budgets or budgets[0] <= 0:
        raise ValueError(f"budgets must be positive token counts, got {budgets}")
    if not puzzles:
        raise ValueError("no puzzles to evaluate")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    puzzles = [dict(p) for p in puzzles]
    prompts = _prompts_for(puzzles, template)
    if tokenizer is None:  # vLLM: the engine's tokenizer, or the one saved with the model
        tokenizer = model.get_tokenizer() if hasattr(model, "get_tokenizer") else _load_tokenizer(model)
    generator = generate_vllm if backend == "vllm" else generate
    extra = {}
    if backend == "compiled":
        extra["compiled"] = compiled or _compiled_for(tokenizer, prompts, budgets[-1], chat_template_kwargs)
    completions = generator(
        model,
        tokenizer,
        prompts,
        max_new_tokens=budgets[-1],
        batch_size=batch_size,
        temperature=temperature,
        num_samples=num_samples,
        seed=seed,
        chat_template_kwargs=chat_template_kwargs,
        show_progress=show_progress,
        **extra,
    )
    out = []
    for budget in budgets:
        cut = [[cut_to_budget(c, budget, tokenizer) for c in samples] for samples in completions]
        rows = score_samples(puzzles, prompts, cut)
        out.append((summarise(rows, budget, num_samples), rows))
    return out


def evaluate_puzzles(
    model,
    tokenizer,
    puzzles: Sequence[Mapping[str, Any]],
    *,
    max_tokens: int,
    template: str = "r1_zero",
    batch_size: int = 32,
    temperature: float = 0.0,
    num_samples: int = 1,
    seed: int = 0,
    backend: str = "transformers",
    chat_template_kwargs: Mapping[str, Any] | None = None,
    show_progress: bool = True,
    compiled=None,
) -> tuple[BudgetResult, list[dict[str, Any]]]:
    """Generate for ``puzzles`` (dicts with ``nums``, ``target`` and optionally ``prompt``) and score them.

    ``model`` is a transformers model, or for ``backend="vllm"`` a ``vllm.LLM`` or a model path. Returns the
    :class:`BudgetResult` and the per-sample rows of :func:`score_samples`.
    """
    [(result, rows)] = evaluate_budgets(
        model,
        tokenizer,
        puzzles,
        budgets=[max_tokens],
        template=template,
        batch_size=batch_size,
        temperature=temperature,
        num_samples=num_samples,
        seed=seed,
        backend=backend,
        chat_template_kwargs=chat_template_kwargs,
        show_progress=show_progress,
        compiled=compiled,
    )
    return result, rows


# --------------------------------------------------------------------------------------------------------------
# Output files
# --------------------------------------------------------------------------------------------------------------










def markdown_table(results: Sequence[BudgetResult]) -> str:
    """One row per budget: accuracy, outcome counts, token use, truncation and pass@k (when sampled)."""
    ks = sorted({k for r in results for k in r.pass_at_k})
    headers = [
        "max tokens", "accuracy", "correct / partial / failed", "mean tokens", "max tokens used", "utilisation",
        "truncated", "mean tokens (correct)", "mean tokens (incorrect)", *[f"pass@{k}" for k in ks],
    ]
    rows = [
        [
            r.max_tokens,
            format_percent(r.accuracy),
            f"{r.correct} / {r.partial} / {r.failed}",
            format_number(r.mean_tokens),
            r.max_tokens_used,
            format_percent(r.utilisation),
            format_percent(r.truncation_rate),
            format_number(r.mean_tokens_correct),
            format_number(r.mean_tokens_incorrect),
            *[format_percent(r.pass_at_k.get(k)) for k in ks],
        ]
        for r in results
    ]
    return render_markdown_table(headers, rows)


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
    lines = [
        json.dumps({**row, "max_tokens": r.max_tokens}, ensure_ascii=False)
        for r in results
        for row in samples_by_budget.get(r.max_tokens, ())
    ]
    described = ", ".join(f"{k}: `{meta[k]}`" for k in ("model", "dataset", "split", "template") if k in meta)
    sampling = "greedy" if not meta.get("temperature") else f"temperature {meta['temperature']}"
    md = (
        f"# Countdown evaluation\n\n{described}\n\n"
        f"{results[0].num_puzzles if results else 0} puzzles, {sampling}, "
        f"{meta.get('num_samples', 1)} sample(s) per puzzle, backend `{meta.get('backend', '?')}`, "
        f"countdown-rl {meta['version']}, {meta['date']}.\n\n{markdown_table(results)}\n"
    )
    write_atomic(out_dir / SAMPLES_JSONL, "".join(line + "\n" for line in lines))
    write_atomic(out_dir / EVAL_MD, md)
    # eval.json last: its presence marks a complete evaluation.
    write_atomic(out_dir / EVAL_JSON, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


def _eval_file(path: str | Path, name: str) -> Path:
    path = Path(path)
    return path / name if path.is_dir() else path


def read_eval(path: str | Path) -> dict[str, Any]:
    """Read an ``eval.json`` (or the folder holding one): ``{"meta": {...}, "results": [BudgetResult, ...]}``.

    Results come back as :class:`BudgetResult` objects in the file's order.
    """
    file = _eval_file(path, EVAL_JSON)
    if not file.is_file():
        raise FileNotFoundError(f"no {EVAL_JSON} at {file}")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        results = [BudgetResult.from_dict(r) for r in data["results"]]
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ValueError(f"{file}: not an evaluation file ({err})") from None
    return {"meta": dict(data.get("meta") or {}), "results": results}


def read_samples(path: str | Path, max_tokens: int | None = None) -> list[dict[str, Any]]:
    """Rows of a ``samples.jsonl`` (or the folder holding one), optionally only those at one budget."""
    file = _eval_file(path, SAMPLES_JSONL)
    rows = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows if max_tokens is None else [r for r in rows if r.get("max_tokens") == max_tokens]
