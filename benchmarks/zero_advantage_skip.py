"""Loss and backward pass with ``skip_zero_advantage`` off and on, over the same real rollouts (CPU).

A group whose samples all got the same reward has advantage 0 for every sample; with no KL term its loss is
exactly 0 and so is its gradient, yet TRL forwards and backpropagates it with the rest. ``skip_zero_advantage``
(``CountdownGRPOConfig``) leaves those rows out of the model passes and keeps the update the same.

1. ``--model`` (a saved model folder, e.g. the SFT stage of ``countdown-rl demo --model_name_or_path smollm2``,
   ``OUT/sft``; or ``tiny`` for a random tiny Qwen3) in a ``CountdownGRPOTrainer``: GRPO, beta 0, the demo's chat prompts on
   its RL puzzles, the Countdown reward, ``--prompts`` x ``--num-generations`` completions of at most
   ``--tokens``, bf16 autocast where the CPU has bf16 kernels, else fp32 (``--precision``): the real-model demo's
   RL step.
2. ``--batches`` rollout batches from TRL's own generation and scoring (``_generate_and_score_completions``).
3. On each batch, ``--repeats`` times, in alternating order: the loss and its backward pass with the skip off
   and on, gradients cleared in between, the wall time of each; and how far the two gradients are apart.
4. Printed: the share of completions with zero advantage, the median time off / on and their ratio, the loss and
   gradient differences.

Run from the repository root: ``python benchmarks/zero_advantage_skip.py --model OUT/sft``.
"""

from __future__ import annotations

import argparse
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
    parser.add_argument("--model", required=True, help="a saved model folder, or 'tiny' (random tiny Qwen3)")
    parser.add_argument("--prompts", type=int, default=4, help="prompts per batch")
    parser.add_argument("--num-generations", type=int, default=8, help="completions per prompt (group size)")
    parser.add_argument("--tokens", type=int, default=64, help="completion budget")
    parser.add_argument("--temperature", type=float, default=0.7, help="sampling temperature")
    parser.add_argument("--batches", type=int, default=3, help="rollout batches")
    parser.add_argument("--repeats", type=int, default=2, help="timed off/on pairs per batch")
    parser.add_argument("--reward", choices=["countdown", "dense"], default="countdown",
                        help="'dense' (share of even token ids) gives a random model's groups a spread")
    _common.add_precision_flag(parser)
    parser.add_argument("--fp32", dest="precision", action="store_const", const="fp32", help="--precision fp32")
    parser.add_argument("--seed", type=int, default=0, help="seed of the puzzles and the sampling")
    return parser.parse_args(argv)


def _rollout_dataset(n: int, seed: int):
    from countdown_rl.data.prepare import prompted_dataset
    from countdown_rl.demo.pretrained import pretrained_config
    from countdown_rl.demo.puzzles import demo_puzzles
    from countdown_rl.tasks import get_task

    rows = demo_puzzles(pretrained_config("smollm2").puzzles, seed=seed)["rl"][:n]
    return prompted_dataset(get_task("countdown"), rows, "chat")


def _loss_and_backward(trainer, batch, skip: bool):
    import torch

    trainer.args.skip_zero_advantage = skip
    trainer.model.zero_grad(set_to_none=True)
    start = time.perf_counter()
    with trainer.compute_loss_context_manager():
        loss = trainer._compute_loss(trainer.model, batch)
    trainer.accelerator.backward(loss)
    elapsed = time.perf_counter() - start
    grad = torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.grad is not None])
    return elapsed, loss.item(), grad


def main(argv=None) -> None:
    args = parse_args(argv)
    _common.quiet_hf()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from countdown_rl.demo.tiny import save_tiny_model

    workdir = tempfile.mkdtemp(prefix="skip-bench-")
    model_dir = save_tiny_model(Path(workdir) / "tiny") if args.model == "tiny" else Path(args.model)
    dataset = _rollout_dataset(args.prompts * args.batches, args.seed)
    trainer = _common.build_trainer(
        "ours", "grpo", model=AutoModelForCausalLM.from_pretrained(str(model_dir)),
        tokenizer=AutoTokenizer.from_pretrained(str(model_dir)), dataset=dataset,
        rewards=_common.reward_funcs([args.reward]), output_dir=str(Path(workdir) / "run"), use_cpu=True,
        bf16=_common.choose_bf16(args.precision), per_device_train_batch_size=args.prompts * args.num_generations,
        num_generations=args.num_generations, max_completion_length=args.tokens, temperature=args.temperature,
        beta=0.0, gradient_checkpointing=False, seed=args.seed)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    torch.manual_seed(args.seed)

    times = {False: [], True: []}
    zero_share, loss_gap, grad_gap = [], 0.0, 0.0
    rows = list(dataset)
    for b in range(args.batches):
        prompts = rows[b * args.prompts:(b + 1) * args.prompts]
        group = [dict(row) for row in prompts for _ in range(args.num_generations)]
        start = time.perf_counter()
        batch = trainer._generate_and_score_completions(group)
        zero = batch["advantages"].eq(0).float().mean().item()
        zero_share.append(zero)
        print(f"batch {b}: rollout {time.perf_counter() - start:.1f} s, zero-advantage completions {zero:.0%}, "
              f"longest completion {int(batch['completion_mask'].sum(1).max())} tokens", flush=True)
        for r in range(args.repeats):
            order = (False, True) if (b + r) % 2 == 0 else (True, False)
            results = {skip: _loss_and_backward(trainer, batch, skip) for skip in order}
            for skip in order:
                times[skip].append(results[skip][0])
            loss_gap = max(loss_gap, abs(results[True][1] - results[False][1]))
            full = results[False][2]
            grad_gap = max(grad_gap, ((results[True][2] - full).norm() / full.norm().clamp(min=1e-30)).item())
    off, on = _common.median(times[False]), _common.median(times[True])
    print(_common.markdown_table(
        ["model", "completions", "zero-advantage share", "loss + backward, skip off", "skip on", "off / on",
         "largest loss difference", "largest gradient difference (relative norm)"],
        [[args.model, args.prompts * args.num_generations, f"{sum(zero_share) / len(zero_share):.0%}",
          f"{off:.2f} s", f"{on:.2f} s", f"{off / on:.2f}x", f"{loss_gap:.1e}", f"{grad_gap:.1e}"]]))


if __name__ == "__main__":
    from countdown_rl.generation.vllm_import import leave_vllm_out

    leave_vllm_out()  # nothing here generates with vLLM: its engine stays out of this process
    main()
