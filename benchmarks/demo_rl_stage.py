"""The real-model demo's RL stage with the prompt-once log-prob pass off and on, from one SFT model, at the same steps.

``countdown-rl demo --model_name_or_path smollm2`` runs base -> SFT -> RL -> evaluations; this runs its stages as the
demo does (the demo's own functions and settings, ``demo.pretrained.pretrained_config``), with the RL stage twice:

1. The demo's puzzles for ``--seed`` and its SFT warm-up (or ``--sft DIR``: an SFT model made earlier, e.g.
   ``outputs/demo-smollm2/sft``).
2. The RL stage (``demo.stages.rl_recipe`` + ``train_rl``: rollouts through the demo's backend, the in-training
   evaluations, the checkpoints) with ``shared_prompt_forward: false``, then with it ``true``, each into its own
   folder, from the same SFT model and seed.
3. Printed: the stage's wall time each way and the minutes saved, the mean seconds per optimizer step, the in-training
   held-out accuracy at the last step of each (the same update up to float rounding, so near-equal), and what each
   run's record says ran (``extra.log_prob_pass``).

``--quick`` is the demo's quick settings (2 steps, a smoke test of the script). Run from the repository root::

    python benchmarks/demo_rl_stage.py --model smollm2 --out outputs/demo-rl-stage
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.ensure_repo_on_path()


def parse_args(argv=None) -> argparse.Namespace:
    parser = _common.demo_stage_parser(__doc__, "the demo's model (a name or a folder)",
                                       "an SFT model folder to start from (default: run the SFT stage)")
    parser.add_argument("--out", default="outputs/demo-rl-stage", help="folder for the SFT model and both RL runs")
    parser.add_argument("--quick", action="store_true", help="the demo's quick settings: a smoke test")
    return parser.parse_args(argv)


def _held_out_accuracy(run_dir: Path) -> float | None:
    """The last in-training held-out accuracy the trainer logged (``eval_accuracy``), if any."""
    states = sorted(run_dir.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name.split("-")[1]))
    if not states:
        return None
    history = json.loads(states[-1].read_text())["log_history"]
    values = [entry["eval_accuracy"] for entry in history if "eval_accuracy" in entry]
    return values[-1] if values else None


def main(argv=None) -> None:
    args = parse_args(argv)
    _common.quiet_hf()
    from countdown_rl.demo.config import placed, placement_line
    from countdown_rl.demo.pretrained import choose_backends, pretrained_config, rollout_keys
    from countdown_rl.demo.puzzles import demo_puzzles
    from countdown_rl.demo.stages import demo_record, rl_recipe, train_rl
    from countdown_rl.models.source import resolve_model_source

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # as the demo: its device, and bf16 only where the device computes it (fp32 on a CPU without bf16 kernels)
    config, placement = placed(pretrained_config(args.model, quick=args.quick, seed=args.seed, output_dir=str(out)))
    print(placement_line(placement), flush=True)
    puzzles = demo_puzzles(config.puzzles, config.seed)
    base_dir = Path(resolve_model_source(args.model, "--model").path)
    backend, _, why_not_vllm = choose_backends(str(base_dir), quick=args.quick, device=config.device)
    print(f"{config.puzzles.describe()}: {len(puzzles['rl'])} RL puzzles, {len(puzzles['eval'])} held out; rollouts "
          f"through {backend}" + (f" ({why_not_vllm})" if why_not_vllm else ""), flush=True)
    if args.sft:
        sft_dir = Path(args.sft)
    else:
        sft_dir = _common.demo_sft(base_dir, out / "sft", puzzles, config, config.sft_steps,
                                   use_cpu=config.device == "cpu", bf16=config.sft_bf16)

    rows, seconds = [], {}
    for flag in (False, True):
        run_dir = out / f"rl-shared-prompt-{str(flag).lower()}"
        recipe = rl_recipe(config, sft_dir, run_dir, num_eval=len(puzzles["eval"]), generation=rollout_keys(backend),
                           final_eval=False)
        recipe["shared_prompt_forward"] = flag
        record = demo_record(sft_dir, config.puzzles.describe(), puzzles, {"benchmark": "demo_rl_stage"})
        start = time.perf_counter()
        run = train_rl(recipe, puzzles["rl"], puzzles["eval"], record=record, show_progress=False)
        seconds[flag] = time.perf_counter() - start
        steps = run.trained.global_step
        ran = json.loads((run_dir / "run_info.json").read_text())["extra"]["log_prob_pass"]
        del run
        accuracy = _held_out_accuracy(run_dir)
        rows.append([str(flag).lower(), str(steps), f"{seconds[flag] / 60:.1f} min", f"{seconds[flag] / steps:.1f} s",
                     "-" if accuracy is None else f"{100 * accuracy:.1f}%", ran])
        print(f"shared_prompt_forward {str(flag).lower()}: {steps} steps in {seconds[flag]:.0f} s ({ran})", flush=True)
    print()
    print(_common.markdown_table(["shared_prompt_forward", "steps", "RL stage", "per step",
                                  "last in-training held-out accuracy", "log-prob pass (run record)"], rows))
    print(f"\nRL stage off / on: {seconds[False] / seconds[True]:.2f}x; minutes saved: "
          f"{(seconds[False] - seconds[True]) / 60:.1f} of {seconds[False] / 60:.1f}")


if __name__ == "__main__":
    main()
