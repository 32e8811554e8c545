"""``countdown-rl generate N --output_file rows.jsonl [--task NAME]``: a task's offline rows, in its dataset's
layout."""

from __future__ import annotations

from pathlib import Path

from countdown_rl.commands.one_line import OneLineArgumentParser
from countdown_rl.tasks import DEFAULT_TASK, TASKS


def build_parser() -> OneLineArgumentParser:
    """The ``countdown-rl generate`` argument parser."""
    parser = OneLineArgumentParser(prog="countdown-rl generate", description=main.__doc__)
    parser.add_argument("n", type=int, help="number of rows")
    parser.add_argument("--output_file", required=True, deprecated=["--out"], help="output .jsonl path")
    parser.add_argument("--task", choices=sorted(TASKS), default=DEFAULT_TASK, help="task (default countdown)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Write ``N`` rows of the task's generator (Countdown: solvable puzzles with columns nums, target)."""
    from countdown_rl.tasks import get_task
    from countdown_rl.data.jsonl import write_jsonl

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.n <= 0:
        parser.error(f"n must be positive, got {args.n}")
    out = Path(args.output_file)
    if out.is_dir():
        parser.error(f"--output_file {out}: is a folder, expected a .jsonl file path")
    if any(parent.exists() and not parent.is_dir() for parent in out.parents):
        parser.error(f"--output_file {out}: a parent of it is a file, not a folder")
    write_jsonl(get_task(args.task).generate(args.n, seed=args.seed), out)
    print(f"wrote {args.n} {args.task} rows to {out}")
    return 0
