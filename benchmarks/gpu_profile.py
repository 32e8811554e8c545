"""Where a GRPO step's time and memory go for a Qwen3-1.7B-sized model, ours against stock TRL.

Runs on any CUDA machine (``--device cuda``, the default when CUDA is available); ``--device cpu --model-size
tiny`` runs the same code on the tiny test Qwen3 for a smoke test (under a minute with tiny budgets).

Model. ``--model DIR`` loads real weights from a local folder. Otherwise a random-weight Qwen3-1.7B is built
from ``QWEN3_1_7B`` below (hidden 2048, 28 layers, 16 query / 8 KV heads of dim 128, MLP 6144, vocab 151936,
tied embeddings, rope theta 1e6, 40960 positions: the published ``Qwen/Qwen3-1.7B`` config.json as recalled,
cross-checked against a third-party listing of the same shapes; it could not be re-read from the Hub here),
with the project's tiny byte-level tokenizer for the prompts (ids it does not know decode to nothing). A
random model almost never emits EOS, so every completion runs to the budget: the worst case, which is what a
budget sweep wants. On GPU the weights are bf16 (``bf16=True`` training, AdamW states in bf16 too, as TRL's
``dtype="auto"`` loading of a bf16 checkpoint does); on CPU fp32.

Each configuration trains ``--warmup + --steps`` optimizer steps; the warm-up steps are dropped. One step =
``--prompts`` prompts x group size completions (default 8 x 8 = 64), generated once, then trained in
micro-batches of ``--micro-batch`` with gradient accumulation (TRL's ``steps_per_generation`` = accumulation
steps, so one generation per optimizer step). Per step, with ``torch.cuda.synchronize()`` before every clock
read (TRL 1.16's ``profiling_context`` only reports to wandb/mlflow/trackio, not to ``_metrics``, so the
phases are timed by wrapping the trainer's methods instead):

* generation: ``_generate_single_turn`` (``model.generate`` or vLLM);
* reward scoring: ``_calculate_rewards`` (for ours this includes the Countdown outcome classification);
* other scoring: the rest of ``_generate_and_score_completions`` (padding, advantages, metrics; reference-model
  log-probs when ``--beta`` > 0);
* training: the rest of the step: forward + backward of every micro-batch, clipping and the optimizer step.

Derived: generated tokens/s (non-pad completion tokens / generation time); training-phase model FLOPs
utilisation, MFU = model FLOPs / training time / peak, where model FLOPs per step are
``k * (2 * N_body * T + 2 * V * d * T_completion + 2 * L * d_attn * sum_i S_i^2)``: N_body the non-embedding
parameters over every trained token T (prompt + completion, padding excluded), the LM head (V x d) only over
completion tokens (TRL computes logits for those only), causal attention over each sequence of length S_i; k
= 3 for full fine-tuning (forward + backward) and 2 for LoRA (frozen weights get no weight gradients).
Gradient-checkpointing recomputation is not counted (model FLOPs, not hardware FLOPs). The peak is measured in
the same run: the best of a few timed loops of a large matmul in the training dtype (bf16 on GPU, fp32 on CPU).
Peak GPU memory is ``torch.cuda.max_memory_allocated`` over the configuration's run.

Sweeps: full fine-tuning at group size ``--group-size`` over ``--budgets``; then LoRA (peft, r ``--lora-rank``,
all linear layers) with gradient checkpointing under a ``--memory-cap-gib`` cap
(``torch.cuda.set_per_process_memory_fraction``) over ``--lora-group-sizes`` x ``--budgets``, reporting which
fit (an OOM is caught, memory freed, and the sweep goes on). Every configuration runs for ours and for stock
``trl.GRPOTrainer`` with the equivalent ``loss_type``/``scale_rewards`` (``--no-stock`` to skip), and the table
gives the step-time ratio ours/stock.

Generation backend: vLLM (colocate) when ``vllm`` is importable on a CUDA machine and ``--model`` gives real
weights (with their tokenizer), else transformers' ``generate``; the output says which and why. With vLLM each
configuration runs in a fresh subprocess (a colocated engine does not tear down cleanly), and the memory cap
applies to PyTorch's allocator only. The vLLM path could not be run where this was written (no GPU, no vllm).

Compiled generation (``--generation compiled``): every configuration runs twice for ours, with plain
``generate`` and with ``generation_backend: compiled`` (static cache + compiled decoding,
``countdown_rl.generation.compiled``), side by side (stock TRL with plain ``generate`` unless ``--no-stock``).
The trainer warms the compiled graph up before step 1, so the first compile is in its own column ("compile s"),
not in the step times; "compiled/plain" gives the step and generation time ratios. On CPU
(``--device cpu --model-size tiny``) this is a proxy only: the tiny model's decode step is overhead-bound.

Output: a Markdown table (and ``--out results.json`` with every step). Example on a GPU machine::

    python benchmarks/gpu_profile.py --budgets 256 512 1024 --steps 3 --warmup 1 --out gpu_profile.json
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.ensure_repo_on_path()

# Qwen/Qwen3-1.7B's published architecture (see the module docstring for how it was checked).
QWEN3_1_7B = dict(
    vocab_size=151936, hidden_size=2048, intermediate_size=6144, num_hidden_layers=28, num_attention_heads=16,
    num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, rms_norm_eps=1e-6,
    tie_word_embeddings=True, hidden_act="silu", attention_bias=False,
    rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0},
)
RESULT_MARKER = "RESULT_JSON "
COLUMNS = ["mode", "trainer", "G", "budget", "completions", "status", "step s", "gen s", "reward s",
           "other scoring s", "train s", "gen tok/s", "trained tok", "train TFLOP", "MFU %", "peak mem GiB",
           "ours/stock"]
COMPILED_COLUMNS = ["compile s", "step compiled/plain", "gen compiled/plain"]  # added with --generation compiled


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--device", choices=["cuda", "cpu"], default=None,
                        help="where to run (default: cuda when available, else cpu)")
    parser.add_argument("--model", default=None, help="local folder with real weights (and tokenizer)")
    parser.add_argument("--model-size", choices=["1.7b", "tiny"], default=None,
                        help="without --model: random Qwen3-1.7B, or the tiny test Qwen3 for CPU smoke runs "
                        "(default: 1.7b on cuda, tiny on cpu)")
    parser.add_argument("--budgets", type=int, nargs="+", default=[256, 512, 1024],
                        help="max_completion_length values to profile")
    parser.add_argument("--steps", type=int, default=3, help="measured optimizer steps per configuration")
    parser.add_argument("--warmup", type=int, default=1, help="optimizer steps dropped at the start of each run")
    parser.add_argument("--prompts", type=int, default=8, help="prompts per optimizer step")
    parser.add_argument("--group-size", type=int, default=8, help="completions per prompt, full fine-tuning")
    parser.add_argument("--lora-group-sizes", type=int, nargs="+", default=[8, 4],
                        help="completions per prompt tried in the LoRA sweep")
    parser.add_argument("--micro-batch", type=int, default=8,
                        help="completions per forward/backward (per_device_train_batch_size); the rest is "
                        "gradient accumulation")
    parser.add_argument("--modes", nargs="+", choices=["full", "lora"], default=["full", "lora"],
                        help="sweeps to run")
    parser.add_argument("--full-gradient-checkpointing", action="store_true",
                        help="also use gradient checkpointing for full fine-tuning")
    parser.add_argument("--lora-rank", type=int, default=16, help="LoRA rank (alpha = 2 x rank)")
    parser.add_argument("--memory-cap-gib", type=float, default=24.0, help="GPU memory cap for the LoRA sweep")
    parser.add_argument("--algorithm", choices=list(_common.STOCK_EQUIVALENT), default="grpo",
                        help="our algorithm (stock runs the equivalent loss_type/scale_rewards)")
    parser.add_argument("--beta", type=float, default=0.0, help="KL coefficient (> 0 adds a reference forward)")
    parser.add_argument("--rewards", nargs="+", default=["countdown"],
                        help="reward functions: project names and/or 'dense' (toy)")
    parser.add_argument("--no-stock", action="store_true", help="skip the stock-TRL runs (no overhead ratio)")
    parser.add_argument("--generation", choices=["auto", "transformers", "vllm", "compiled"], default="auto",
                        help="generation backend; auto = vLLM when installed and on CUDA, else transformers; "
                        "compiled = ours with plain generate and with generation_backend: compiled, side by side")
    parser.add_argument("--vllm-gpu-memory-utilization", type=float, default=0.3,
                        help="vLLM colocate memory share (capped LoRA runs use at most half the cap)")
    parser.add_argument("--isolate", action="store_true",
                        help="run every configuration in a fresh subprocess (always on with vLLM)")
    parser.add_argument("--peak-size", type=int, default=None,
                        help="matmul size for the peak measurement (default 8192 on GPU, 1024 on CPU)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default: 1 with --device cpu, where other processes share the "
                        "cores and OpenMP stragglers dominate; torch's default on CUDA)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data, the weights and the trainers")
    parser.add_argument("--out", default=None, help="write the results (with every step) to this JSON file")
    # internal: one configuration in a subprocess
    parser.add_argument("--only", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--peak-flops", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.device is None:
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.model_size is None:
        args.model_size = "1.7b" if args.device == "cuda" else "tiny"
    return args


# ------------------------------------------------------------------------------------------------------------
# Model, peak and FLOPs
# ------------------------------------------------------------------------------------------------------------


class ModelSource:
    """Where each run's fresh model comes from: a folder (real or saved tiny weights) or a random 1.7B config."""

    def __init__(self, args, workdir: str):
        import torch
        from transformers import AutoTokenizer

        self.device = args.device
        self.dtype = torch.bfloat16 if args.device == "cuda" else torch.float32
        self.seed = args.seed
        self.path: Path | None = None
        if args.model:
            self.path = Path(args.model)
            self.description = f"weights from {args.model}"
        elif args.model_size == "tiny":
            from countdown_rl.demo.tiny import save_tiny_model

            self.path = save_tiny_model(Path(workdir) / "tiny", size="test", seed=args.seed)
            self.description = "tiny random Qwen3 (countdown_rl.demo.tiny, size 'test')"
        else:
            self.description = "random-weight Qwen3-1.7B architecture (QWEN3_1_7B), tiny tokenizer"
        if self.path is not None:
            self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        else:
            from countdown_rl.demo.tiny import build_tiny_tokenizer

            self.tokenizer = build_tiny_tokenizer(seed=args.seed)

    def load(self):
        import torch
        from transformers import AutoModelForCausalLM, Qwen3Config, Qwen3ForCausalLM

        torch.manual_seed(self.seed)
        if self.path is not None:
            return AutoModelForCausalLM.from_pretrained(self.path, dtype=self.dtype).to(self.device)
        config = Qwen3Config(**QWEN3_1_7B, pad_token_id=self.tokenizer.pad_token_id,
                             eos_token_id=self.tokenizer.eos_token_id)
        with torch.device(self.device):  # initialise directly on the GPU: seconds, not minutes
            model = Qwen3ForCausalLM._from_config(config, dtype=self.dtype)
        model.generation_config.pad_token_id = self.tokenizer.pad_token_id
        model.generation_config.eos_token_id = self.tokenizer.eos_token_id
        return model

    def save_for_vllm(self, workdir: str) -> None:
        """vLLM loads weights from a folder: save the random model once (the same seed gives the same weights)."""
        if self.path is None:
            self.path = Path(workdir) / "random-qwen3-1.7b"
            model = self.load()
            model.save_pretrained(self.path)
            self.tokenizer.save_pretrained(self.path)
            del model


def model_shape(model) -> dict:
    """Parameter counts and attention sizes for the FLOPs model (of the base model, LoRA adapters excluded)."""
    config = model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    embed = model.get_input_embeddings().weight
    head = model.get_output_embeddings().weight
    total = sum(p.numel() for name, p in model.named_parameters() if "lora_" not in name)
    body = total - embed.numel() - (0 if head is embed else head.numel())
    return {
        "params": total,
        "body_params": body,
        "head_params": head.numel(),
        "layers": config.num_hidden_layers,
        "attn_dim": config.num_attention_heads * head_dim,
    }


def train_flops(shape: dict, tokens: float, completion_tokens: float, sum_sq_lengths: float, lora: bool) -> float:
    """Model FLOPs of one optimizer step's training phase (see the module docstring)."""
    forward = (2 * shape["body_params"] * tokens + 2 * shape["head_params"] * completion_tokens
               + 2 * shape["layers"] * shape["attn_dim"] * sum_sq_lengths)
    return forward * (2 if lora else 3)


def measure_peak_flops(device: str, size: int | None) -> tuple[float, str]:
    """Best FLOP/s of a timed square-matmul loop in the training dtype (bf16 on GPU, fp32 on CPU)."""
    import torch

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    n = size or (8192 if device == "cuda" else 1024)
    iters = 50 if device == "cuda" else 4
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    out = torch.empty(n, n, device=device, dtype=dtype)
    for _ in range(3):
        torch.matmul(a, b, out=out)
    best = 0.0
    for _ in range(5):
        sync()
        start = time.perf_counter()
        for _ in range(iters):
            torch.matmul(a, b, out=out)
        sync()
        best = max(best, 2 * n**3 * iters / (time.perf_counter() - start))
    del a, b, out
    return best, f"{str(dtype).removeprefix('torch.')} {n}x{n} matmul, best of 5 loops of {iters}"


# ------------------------------------------------------------------------------------------------------------
# One configuration
# ------------------------------------------------------------------------------------------------------------


def is_oom(error: BaseException) -> bool:
    import torch

    text = str(error)
    return isinstance(error, torch.OutOfMemoryError) or "out of memory" in text.lower() or "ALLOC_FAILED" in text


def run_config(spec: dict, args, source: ModelSource, backend: str, peak: float, workdir: str) -> dict:
    """Train one configuration (mode, kind, group size, budget); a result row with per-step details."""
    import torch

    cuda = args.device == "cuda"
    lora = spec["mode"] == "lora"
    completions = args.prompts * spec["group"]
    micro = min(args.micro_batch, completions)
    row = {**spec, "completions": completions, "micro_batch": micro, "status": "ok"}
    if completions % micro:
        return {**row, "status": f"skipped: {completions} completions not a multiple of micro-batch {micro}"}
    cap = None
    if cuda:
        total = torch.cuda.get_device_properties(0).total_memory
        cap = min(1.0, args.memory_cap_gib * 2**30 / total) if lora else 1.0
        torch.cuda.set_per_process_memory_fraction(cap)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    timer = _common.StepTimer(sync=torch.cuda.synchronize if cuda else None)
    trainer = model = None
    try:
        model = source.load()
        shape = model_shape(model)
        peft_config = None
        if lora:
            from peft import LoraConfig

            peft_config = LoraConfig(r=args.lora_rank, lora_alpha=2 * args.lora_rank, lora_dropout=0.0,
                                     target_modules="all-linear", task_type="CAUSAL_LM")
        extra = {}
        if spec.get("generation") == "compiled":
            extra["generation_backend"] = "compiled"
        if backend == "vllm":
            share = args.vllm_gpu_memory_utilization
            if lora and cap is not None and cap < 1.0:
                share = min(share, 0.5 * cap)
            extra = dict(use_vllm=True, vllm_mode="colocate", vllm_gpu_memory_utilization=share,
                         vllm_max_model_length=spec["budget"] + 1024)  # prompts are ~150 tokens
        extra.update(spec.get("trainer_keys", {}))  # a caller's own config keys (benchmarks/gpu_study.py)
        dataset = _common.countdown_dataset(args.prompts * (args.warmup + args.steps), seed=args.seed)
        trainer = _common.build_trainer(
            spec["kind"], args.algorithm, model=model, tokenizer=source.tokenizer, dataset=dataset,
            rewards=_common.reward_funcs(args.rewards), callbacks=[timer.callback()], peft_config=peft_config,
            output_dir=str(Path(workdir) / "out"), use_cpu=not cuda, bf16=cuda, seed=args.seed,
            gradient_checkpointing=lora or args.full_gradient_checkpointing,
            per_device_train_batch_size=micro, gradient_accumulation_steps=completions // micro,
            num_generations=spec["group"], max_completion_length=spec["budget"], beta=args.beta,
            max_steps=args.warmup + args.steps, learning_rate=1e-6, logging_steps=1, **extra,
        )
        score = trainer._generate_and_score_completions

        def count_tokens(*a, **k):
            out = score(*a, **k)
            prompt_len = out["prompt_mask"].sum(1)
            completion_len = out["completion_mask"].sum(1)
            timer.add("prompt_tokens", prompt_len.sum().item())
            timer.add("completion_tokens", completion_len.sum().item())
            timer.add("sum_sq_lengths", ((prompt_len + completion_len).double() ** 2).sum().item())
            return out

        trainer._generate_and_score_completions = count_tokens  # wrapped again below: counting is scoring time
        timer.instrument(trainer, ["training_step", "gen_and_score", "generate", "rewards"])
        trainer.train()
        compiled = getattr(trainer, "_compiled_generation", None)
        if compiled is not None:
            row["compile_s"] = sum(compiled.compile_seconds.values())
            if not compiled.active:
                row["status"] = f"ok (compiled fell back: {compiled.fallback_reason[:60]})"
    except Exception as error:  # noqa: BLE001 - an OOM (or any failure) is a result of the sweep, not a crash
        first_line = (str(error).splitlines() or [""])[0][:120]
        row["status"] = "OOM" if is_oom(error) else f"error: {type(error).__name__}: {first_line}"
        # leaving the except block drops the traceback, and with it the failed run's tensors
    finally:
        if trainer is not None and getattr(trainer, "vllm_generation", None) is not None:
            trainer.vllm_generation = None
        trainer = model = None
        if spec.get("generation") == "compiled":
            # Compiled graphs are cached per code object (TRL's patched forward) and dynamo stops compiling after
            # 8 entries: drop this configuration's graphs so the next one compiles afresh.
            torch._dynamo.reset()
        gc.collect()
        if cuda:
            row["peak_mem_gib"] = torch.cuda.max_memory_allocated() / 2**30
            torch.cuda.empty_cache()
            torch.cuda.set_per_process_memory_fraction(1.0)
    row["memory_cap_gib"] = args.memory_cap_gib if (cuda and lora) else None
    steps = timer.measured(args.warmup)
    row["steps"] = steps
    if not row["status"].startswith("ok") or not steps:
        if row["status"] == "ok":
            row["status"] = "no measured step"
        return row
    p = _common.phase_medians(steps)
    flops = [train_flops(shape, s["prompt_tokens"] + s["completion_tokens"], s["completion_tokens"],
                         s["sum_sq_lengths"], lora) for s in steps]
    train_times = [s["step"] - s["gen_and_score"] for s in steps]
    row.update(
        step_s=p["step"], gen_s=p["generate"], reward_s=p["rewards"],
        other_scoring_s=p["gen_and_score"] - p["generate"] - p["rewards"],
        train_s=_common.median(train_times),
        gen_tok_per_s=_common.median(s["completion_tokens"] / s["generate"] for s in steps),
        trained_tokens=_common.median(s["prompt_tokens"] + s["completion_tokens"] for s in steps),
        completion_tokens=_common.median(s["completion_tokens"] for s in steps),
        train_flops=_common.median(flops),
        mfu=_common.median(f / t / peak for f, t in zip(flops, train_times)),
        params=shape["params"],
    )
    return row


def run_isolated(spec: dict, argv: list[str], peak: float) -> dict:
    """``run_config`` in a fresh Python process (for vLLM, whose colocated engine does not tear down cleanly)."""
    command = [sys.executable, str(Path(__file__).resolve()), *argv, "--only", json.dumps(spec),
               "--peak-flops", repr(peak)]
    done = subprocess.run(command, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_MARKER):
            return json.loads(line[len(RESULT_MARKER):])
    tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
    return {**spec, "status": f"error: subprocess rc={done.returncode}: {tail[0][:120]}", "steps": []}


# ------------------------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------------------------


def trainer_label(spec: dict) -> str:
    return spec["kind"] + ("+compiled" if spec.get("generation") == "compiled" else "")


def format_rows(rows: list[dict], cuda: bool, compiled: bool = False) -> list[list[str]]:
    stock_step = {(r["mode"], r["group"], r["budget"]): r.get("step_s") for r in rows if r["kind"] == "stock"}
    plain = {(r["mode"], r["group"], r["budget"]): r for r in rows
             if r["kind"] == "ours" and r.get("generation") != "compiled" and r["status"] == "ok"}
    table = []
    for r in rows:
        ok = r["status"].startswith("ok")

        def f(key, fmt, scale=1.0, r=r, ok=ok):
            return format(r[key] * scale, fmt) if ok and r.get(key) is not None else "-"

        ratio = "-"
        stock = stock_step.get((r["mode"], r["group"], r["budget"]))
        if r["kind"] == "ours" and ok and stock:
            ratio = f"{r['step_s'] / stock:.3f}"
        memory = f"{r['peak_mem_gib']:.1f}" if cuda and r.get("peak_mem_gib") is not None else "n/a"
        mode = r["mode"] + (f" (cap {r['memory_cap_gib']:g} GiB)" if r.get("memory_cap_gib") else "")
        cells = [mode, trainer_label(r), str(r["group"]), str(r["budget"]), str(r["completions"]), r["status"],
                 f("step_s", ".3f"), f("gen_s", ".3f"), f("reward_s", ".4f"), f("other_scoring_s", ".4f"),
                 f("train_s", ".3f"), f("gen_tok_per_s", ".0f"), f("trained_tokens", ".0f"),
                 f("train_flops", ".3g", 1e-12), f("mfu", ".2f", 100.0), memory, ratio]
        if compiled:
            base = plain.get((r["mode"], r["group"], r["budget"]))
            is_compiled = r.get("generation") == "compiled" and ok and base is not None
            cells += [f("compile_s", ".1f"),
                      f"{r['step_s'] / base['step_s']:.3f}" if is_compiled else "-",
                      f"{r['gen_s'] / base['gen_s']:.3f}" if is_compiled else "-"]
        table.append(cells)
    return table


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    _common.quiet_hf()
    import importlib.util

    import torch
    import transformers
    import trl

    cuda = args.device == "cuda"
    threads = args.threads or (1 if not cuda else None)
    if threads:
        torch.set_num_threads(threads)
    if cuda and not torch.cuda.is_available():
        raise SystemExit("--device cuda but CUDA is not available; use --device cpu --model-size tiny")
    has_vllm = importlib.util.find_spec("vllm") is not None
    if args.generation == "vllm" and not (has_vllm and cuda):
        raise SystemExit("--generation vllm needs vllm installed and --device cuda")
    if args.generation == "compiled":
        backend, why = "transformers", "--generation compiled: ours with plain generate and compiled, side by side"
    elif args.generation != "auto":
        backend, why = args.generation, f"--generation {args.generation}"
    elif not has_vllm:
        backend, why = "transformers", "vllm not installed"
    elif not cuda:
        backend, why = "transformers", "CPU run"
    elif not args.model:
        # untested: vLLM detokenising a random 151936-token model's output with the 475-token tiny tokenizer
        backend, why = "transformers", "random weights + tiny tokenizer; pass --model or --generation vllm"
    else:
        backend, why = "vllm", "vllm installed"
    isolate = args.isolate or backend == "vllm"
    workdir = tempfile.mkdtemp(prefix="gpu_profile_")
    source = ModelSource(args, workdir)
    if backend == "vllm" and args.only is None:
        source.save_for_vllm(workdir)
        argv = [*argv, "--model", str(source.path)] if not args.model else argv

    if args.only is not None:  # subprocess: one configuration, result on stdout
        row = run_config(json.loads(args.only), args, source, backend, args.peak_flops, workdir)
        print(RESULT_MARKER + json.dumps(row))
        return 0

    peak, peak_how = measure_peak_flops(args.device, args.peak_size)
    device_name = torch.cuda.get_device_name(0) if cuda else f"CPU (torch threads: {torch.get_num_threads()})"
    specs = []
    for mode in args.modes:
        for group in ([args.group_size] if mode == "full" else args.lora_group_sizes):
            for budget in args.budgets:
                for kind in ("ours",) if args.no_stock else _common.TRAINER_KINDS:
                    specs.append({"mode": mode, "kind": kind, "group": group, "budget": budget})
                    if kind == "ours" and args.generation == "compiled":
                        specs.append({"mode": mode, "kind": kind, "group": group, "budget": budget,
                                      "generation": "compiled"})
    print(f"# GRPO step profile on {device_name}: {source.description}; algorithm {args.algorithm}; "
          f"{args.prompts} prompts x G per step, micro-batch {args.micro_batch}; measured steps {args.steps} "
          f"after warm-up {args.warmup}; generation: {backend} ({why}); peak {peak / 1e12:.3g} TFLOP/s "
          f"({peak_how}); torch {torch.__version__}, transformers {transformers.__version__}, trl {trl.__version__}",
          flush=True)
    rows = []
    started = time.perf_counter()
    for spec in specs:
        if isolate:
            row = run_isolated(spec, argv, peak)
        else:
            row = run_config(spec, args, source, backend, peak, workdir)
        rows.append(row)
        step = f"{row['step_s']:.3f} s/step" if row.get("step_s") is not None else ""
        print(f"  {spec['mode']} {trainer_label(spec)} G={spec['group']} budget={spec['budget']}: {row['status']} "
              f"{step}", flush=True)

    print()
    compiled = args.generation == "compiled"
    print(_common.markdown_table(COLUMNS + (COMPILED_COLUMNS if compiled else []), format_rows(rows, cuda, compiled)))
    print(f"\nTimes are medians over measured steps. MFU: training-phase model FLOPs (k=3 full, k=2 LoRA) / train "
          f"time / measured peak {peak / 1e12:.3g} TFLOP/s. 'ours/stock' = step-time ratio. Generation: {backend} "
          f"({why}). Memory: {'torch.cuda.max_memory_allocated' if cuda else 'n/a on CPU'}"
          f"{'; LoRA rows under the cap' if cuda else ''}. Total {time.perf_counter() - started:.0f} s.")
    lora_rows = [r for r in rows if r["mode"] == "lora"]
    if lora_rows:
        cap = f"under a {args.memory_cap_gib:g} GiB cap" if cuda else "(no cap on CPU)"
        fits = {}
        for r in lora_rows:  # a configuration fits when every trainer that ran it fitted
            key = f"G={r['group']} budget={r['budget']}"
            fits[key] = fits.get(key, True) and r["status"].startswith("ok")
        print(f"LoRA r={args.lora_rank} + gradient checkpointing {cap}: fits: "
              f"{', '.join(k for k, ok in fits.items() if ok) or 'none'}; does not fit / failed: "
              f"{', '.join(k for k, ok in fits.items() if not ok) or 'none'}.")
    if args.out:
        meta = {
            "device": device_name, "model": source.description, "generation": backend, "generation_reason": why,
            "peak_flops": peak, "peak_measurement": peak_how, "args": vars(args),
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "trl": trl.__version__},
            "columns": COLUMNS + (COMPILED_COLUMNS if compiled else []),
        }
        Path(args.out).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
