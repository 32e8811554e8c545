"""The ``countdown-rl`` command: a thin dispatcher to each subcommand's module.

Subcommand modules are imported only when run, so ``countdown-rl --help`` answers without importing torch or TRL.
Each entry point is ``module:function`` taking ``argv: list[str] | None`` and returning an exit code (or None).
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import import_module
from pathlib import Path

from countdown_rl.one_line import OneLineArgumentParser

# name -> ("module:function" taking argv, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("countdown_rl.train:main", "train with GRPO / Dr.GRPO from a recipe (TRL --config YAML + --key value)"),
    "eval": ("countdown_rl.evaluate:main", "evaluate a model, checkpoint, adapter or Hub id on held-out puzzles"),
    "report": ("countdown_rl.report:main", "tables and plots from one or more run directories"),
    "generate": ("countdown_rl.cli:generate_main", "write solvable Countdown puzzles to a JSONL file"),
    "verify": ("countdown_rl.cli:verify_main", "score one completion against numbers and a target"),
    "demo": ("countdown_rl.demo:main", "offline CPU demo: tiny model, SFT warm-up, GRPO, before/after table"),
    "push": ("countdown_rl.hub:main", "push a finished run directory (model, card, eval files) to the Hub"),
}


def _top_level_parser() -> argparse.ArgumentParser:
    from countdown_rl import __version__

    parser = OneLineArgumentParser(
        prog="countdown-rl",
        description="GRPO and Dr.GRPO on the Countdown task, built on Hugging Face TRL.",
        epilog="Run 'countdown-rl COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"countdown-rl {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        commands.add_parser(name, help=help_text, add_help=False)
    return parser


def generate_main(argv: list[str] | None = None) -> int:
    """``countdown-rl generate N --out puzzles.jsonl``: solvable puzzles from the offline generator."""
    from countdown_rl.data import write_jsonl
    from countdown_rl.puzzles import generate_countdown

    parser = OneLineArgumentParser(prog="countdown-rl generate", description=generate_main.__doc__)
    parser.add_argument("n", type=int, help="number of puzzles")
    parser.add_argument("--out", required=True, help="output .jsonl path (columns nums, target)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed")
    args = parser.parse_args(argv)
    if args.n <= 0:
        parser.error(f"n must be positive, got {args.n}")
    out = Path(args.out)
    if out.is_dir():
        parser.error(f"--out {out}: is a folder, expected a .jsonl file path")
    if any(parent.exists() and not parent.is_dir() for parent in out.parents):
        parser.error(f"--out {out}: a parent of it is a file, not a folder")
    write_jsonl(generate_countdown(args.n, seed=args.seed), args.out)
    print(f"wrote {args.n} puzzles to {args.out}")
    return 0


def verify_main(argv: list[str] | None = None) -> int:
    """``countdown-rl verify --nums 7 7 65 --target 51 TEXT``: extracted answer, value, outcome and reward."""
    from countdown_rl.verifier import score_completion

    parser = OneLineArgumentParser(prog="countdown-rl verify", description=verify_main.__doc__)
    parser.add_argument("text", help="the completion (use - to read standard input)")
    parser.add_argument("--nums", type=int, nargs="+", required=True, help="the given numbers")
    parser.add_argument("--target", type=int, required=True, help="the target")
    parser.add_argument("--numbers-rule", choices=["exact", "subset"], default="exact")
    args = parser.parse_args(argv)
    text = sys.stdin.read() if args.text == "-" else args.text
    score = score_completion(text, args.nums, args.target, numbers_rule=args.numbers_rule)
    value = None if score.value is None else str(score.value)
    print(json.dumps({"equation": score.equation, "value": value, "outcome": str(score.outcome.value),
                      "reward": score.reward}))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        # --help, --version, no command or an unknown one: argparse prints and exits.
        _top_level_parser().parse_args(argv)
        _top_level_parser().print_help()
        return 2
    module_name, function_name = COMMANDS[argv[0]][0].split(":")
    return getattr(import_module(module_name), function_name)(argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main())
