"""The real-model demo's RL steps in fp32 and under bf16 autocast, from one start model (CPU).

bf16 pays on a CPU only with bf16 kernels (``countdown_rl.runs.device.cpu_has_bf16_kernels``); without them it is
emulated, and the demos run fp32 there. This times what that choice saves:

1. ``--model`` (``smollm2``, a model folder, or ``tiny``); the demo's puzzles for ``--seed``
   (``demo.pretrained.pretrained_config``); the start model: ``--sft DIR``, else the demo's SFT warm-up cut to
   ``--sft-steps`` steps in fp32 (0: the base model itself).
2. For each of ``--precisions``: the demo's RL stage (``demo.stages.rl_recipe`` + ``train_rl``, on the CPU) for
   ``--steps`` steps into its own folder, from the same start model and seed, bf16 forced on or off as named (the
   demo's own choice left out), rollouts through ``--rollouts`` (plain ``generate`` by default: a few steps do not
   repay the compiled backend's first compile), no in-training evaluation, one checkpoint at the end.
3. Printed: per run, TRL's ``step_time`` of every step (rollout, log-prob pass, backward, optimizer step), their mean,
   the stage's wall time and this process's CPU seconds a step over the stage (far less sensitive to other work on
   a shared machine), and what the run record says ran (``extra.precision``); then bf16 / fp32 of both.

Run from the repository root: ``python benchmarks/demo_precision.py --model smollm2 --sft-steps 20``. A bf16 step
on a CPU without bf16 kernels takes minutes: keep ``--steps`` small there.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.ensure_repo_on_path()


def parse_args(argv=None) -> argparse.Namespace:
    parser = _common.demo_stage_parser(__doc__, "the demo's model: a name, a folder, or 'tiny'",
                                       "a start model folder (default: a short SFT warm-up here)")
    parser.add_argument("--sft-steps", type=int, default=20, help="SFT steps when no --sft (0: the base model)")
    parser.add_argument("--steps", type=int, default=2, help="RL steps a run")
    parser.add_argument("--precisions", nargs="+", choices=["fp32", "bf16"], default=["fp32", "bf16"],
                        help="the runs, in this order")
    parser.add_argument("--rollouts", choices=["transformers", "compiled"], default="transformers",
                        help="the rollouts' backend")
    parser.add_argument("--out", default="outputs/demo-precision", help="folder for the start model and the runs")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.sft_steps < 0:
        parser.error("--steps must be positive and --sft-steps not negative")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    _common.quiet_hf()
    import torch

    from countdown_rl.demo.pretrained import pretrained_config, rollout_keys
    from countdown_rl.demo.puzzles import demo_puzzles
    from countdown_rl.demo.stages import demo_record, rl_recipe, train_rl
    from countdown_rl.demo.tiny import save_tiny_model
    from countdown_rl.models.source import resolve_model_source
    from countdown_rl.runs.device import cpu_has_bf16_kernels

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    config = pretrained_config(args.model, seed=args.seed, output_dir=str(out), device="cpu")
    puzzles = demo_puzzles(config.puzzles, config.seed)
    base_dir = (save_tiny_model(out / "tiny") if args.model == "tiny"
                else Path(resolve_model_source(args.model, "--model").path))
    print(f"CPU: {torch.backends.cpu.get_cpu_capability()}, bf16 kernels: {cpu_has_bf16_kernels()}; "
          f"{torch.get_num_threads()} torch threads; torch {torch.__version__}", flush=True)
    if args.sft:
        start_dir = Path(args.sft)
    elif args.sft_steps == 0:
        start_dir = base_dir
    else:
        start_dir = _common.demo_sft(base_dir, out / "sft", puzzles, config, args.sft_steps, use_cpu=True)

    rows, means, results = [], {}, {}
    for name in args.precisions:
        run_dir = out / f"rl-{name}"
        run_config = replace(config, bf16=name == "bf16", max_steps=args.steps, save_steps=args.steps,
                             in_training_eval=0)
        recipe = rl_recipe(run_config, start_dir, run_dir, num_eval=len(puzzles["eval"]),
                           generation=rollout_keys(args.rollouts), final_eval=False)
        record = demo_record(start_dir, config.puzzles.describe(), puzzles, {"benchmark": "demo_precision"})
        started, cpu_started = time.perf_counter(), time.process_time()
        run = train_rl(recipe, puzzles["rl"], puzzles["eval"], record=record, show_progress=False)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        del run
        history = json.loads((run_dir / "trainer_state.json").read_text())["log_history"]
        steps = [entry["step_time"] for entry in history if "step_time" in entry]
        ran = json.loads((run_dir / "run_info.json").read_text())["extra"].get("precision", {})
        means[name] = (sum(steps) / len(steps), cpu / len(steps))
        results[name] = {"step_time": steps, "wall_s": wall, "cpu_s": cpu, "precision": ran}
        rows.append([name, ", ".join(f"{s:.1f}" for s in steps), f"{means[name][0]:.1f} s", f"{wall:.0f} s",
                     f"{means[name][1]:.1f} s", ran.get("summary", "-")])
        print(f"{name}: steps {', '.join(f'{s:.1f} s' for s in steps)}; stage {wall:.0f} s", flush=True)
    print()
    print(_common.markdown_table(["asked", "step_time of each step", "mean step", "stage wall time",
                                  "CPU seconds a step (stage)", "what ran (run record)"], rows))
    if {"fp32", "bf16"} <= set(means):
        print(f"\nbf16 / fp32: mean step {means['bf16'][0] / means['fp32'][0]:.1f}x, CPU seconds a step "
              f"{means['bf16'][1] / means['fp32'][1]:.1f}x")
    print(json.dumps({"model": args.model, "steps": args.steps, "rollouts": args.rollouts, "runs": results},
                     indent=1))


if __name__ == "__main__":
    from countdown_rl.generation.vllm_import import leave_vllm_out

    leave_vllm_out()  # nothing here generates with vLLM: its engine stays out of this process
    main()
