"""An RL trial on one setting of the Countdown screen: the real-model demo, its puzzles drawn in that setting's shape.

1. ``--setting``: a label of ``countdown_screen.SETTINGS`` whose rows are the package's generator (exactly once):
   its numbers, values, targets and sampling (``expression`` unless the setting says ``balanced``) become the
   demo's puzzles (``demo.config.PuzzleSpec``).
2. ``countdown-rl demo --model_name_or_path MODEL`` on them (``demo.pretrained.run_pretrained_demo``): the base model
   zero-shot, the warm-up on solver traces, GRPO or Dr.GRPO, the same held-out puzzles after each, the best
   target-blind rule beside them and the McNemar test of the RL model against its warm-up model. Everything but
   the sizes below is the demo's Countdown default (``demo.pretrained.pretrained_config``), placed as the demo
   places it (fp32 on a CPU without bf16 kernels).
3. The sizes are flags, smaller than the demo's so that a trial fits a session of 2 cores: warm-up steps, RL steps,
   held-out puzzles, samples a puzzle for pass@k; no reference-puzzle (transfer) evaluation, one checkpoint at the
   end. Written: the demo's folder (``OUT/<algorithm>/demo_results.json``, its eval files and table).

From the repository root::

    python benchmarks/countdown_trial.py --setting "3x1-9 t1-20 near" --out outputs/trial-near
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from countdown_screen import SETTINGS  # noqa: E402

_common.ensure_repo_on_path()

TRIAL_SETTINGS = {label: kwargs for label, source, kwargs in SETTINGS if source == "countdown"}
"""The screen's settings a trial can run: the package's generator, each number exactly once (the demo's rule)."""


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--setting", required=True, choices=sorted(TRIAL_SETTINGS), metavar="LABEL",
                        help=f"the screen's setting: one of {sorted(TRIAL_SETTINGS)}")
    parser.add_argument("--model", default="smollm2", help="a model folder, .gguf file or packaged name")
    parser.add_argument("--out", type=Path, required=True, help="the demo's output folder")
    parser.add_argument("--algorithm", choices=("grpo", "dr_grpo"), default="grpo", help="the RL algorithm")
    parser.add_argument("--seed", type=int, default=0, help="puzzles, warm-up and RL seed")
    parser.add_argument("--sft_steps", type=int, default=30, help="warm-up steps (8 solver traces a step)")
    parser.add_argument("--max_steps", type=int, default=30, help="RL steps")
    parser.add_argument("--learning_rate", type=float, default=None, help="RL's rate (default: the demo's)")
    parser.add_argument("--num_eval", type=int, default=128, help="held-out puzzles")
    parser.add_argument("--pass_k", type=int, default=4, help="samples a held-out puzzle for pass@k (0: none)")
    parser.add_argument("--quick", action="store_true", help="the demo's quick sizes: a smoke test of the script")
    args = parser.parse_args(argv)
    for name in ("sft_steps", "max_steps", "num_eval"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name} must be positive, got {getattr(args, name)}")
    if args.pass_k < 0 or args.pass_k == 1:
        parser.error(f"--pass_k must be 0 (none) or at least 2, got {args.pass_k}")
    return args


def trial_config(args: argparse.Namespace):
    """The demo's Countdown settings for ``args.model`` on the setting's puzzles, at the trial's sizes.

    >>> args = parse_args(["--setting", "3x1-9 t1-20 near", "--out", "o"])
    >>> c = trial_config(args)
    >>> c.puzzles.describe(), c.max_steps, c.num_transfer, c.save_steps
    ('generated Countdown puzzles (expression): 3 numbers in 1..9, targets 1..20', 30, 0, 30)
    """
    from dataclasses import replace

    from countdown_rl.demo.config import PuzzleSpec
    from countdown_rl.demo.pretrained import pretrained_config

    shape = {"sampling": "expression", **TRIAL_SETTINGS[args.setting]}
    config = pretrained_config(args.model, quick=args.quick, output_dir=str(args.out), algorithm=args.algorithm,
                               seed=args.seed, num_transfer=0)
    if args.quick:  # the demo's quick sizes, the setting's shape
        return replace(config, puzzles=replace(config.puzzles, **shape))
    sizes = {"num_sft": args.sft_steps * config.sft_batch_size,
             "num_rl": args.max_steps * config.prompts_per_step, "num_eval": args.num_eval}
    rate = {} if args.learning_rate is None else {"grpo_learning_rate": args.learning_rate}
    # one checkpoint (SmolLM2's weights and Adam state are 1.6 GB), the in-training curve on a third of the held-out
    return replace(config, puzzles=PuzzleSpec(**shape, **sizes), sft_steps=args.sft_steps, max_steps=args.max_steps,
                   pass_k=args.pass_k, save_steps=args.max_steps, eval_steps=max(1, args.max_steps // 3),
                   in_training_eval=min(args.num_eval, 64), **rate)


def main(argv=None) -> dict:
    args = parse_args(argv)
    from countdown_rl.demo.pretrained import run_pretrained_demo

    config = trial_config(args)
    print(f"trial: {args.setting!r} -> {config.puzzles.describe()}", flush=True)
    return run_pretrained_demo(config, own_process=True)


if __name__ == "__main__":
    main()
