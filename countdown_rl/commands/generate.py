"""``countdown-rl generate N --output_file rows.jsonl [--task NAME] [--task_options K=V ...]``: a task's offline
rows, in its dataset's layout, and the share of them the task's best blind rule solves."""

from __future__ import annotations

from pathlib import Path

from countdown_rl.commands.one_line import OneLineArgumentParser, examples
from countdown_rl.tasks import DEFAULT_TASK, TASKS


def build_parser() -> OneLineArgumentParser:
    """The ``countdown-rl generate`` argument parser."""
    parser = OneLineArgumentParser(
        prog="countdown-rl generate", description=main.__doc__,
        epilog=examples(
            "countdown-rl generate 2000 --output_file puzzles.jsonl --task_options sampling=balanced",
            "countdown-rl generate 400 --task format_copy --output_file rows.jsonl",
        ),
    )
    parser.add_argument("n", type=int, help="number of rows")
    parser.add_argument("--output_file", required=True, deprecated=["--out"], help="output .jsonl path")
    parser.add_argument("--task", choices=sorted(TASKS), default=DEFAULT_TASK, help="task (default countdown)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed")
    parser.add_argument("--task_options", nargs="*", default=[], metavar="KEY=VALUE",
                        help="the task's options, as a recipe's task_options (Countdown: sampling=balanced caps "
                             "every target-blind template at 6%%; default sampling=expression)")
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
    try:
        task = get_task(args.task, args.task_options)
    except ValueError as err:
        parser.error(str(err))
    rows = task.generate(args.n, seed=args.seed)
    write_jsonl(rows, out)
    print(f"wrote {args.n} {args.task} rows to {out}")
    rule = task.blind_rule(rows)
    if rule is not None:
        # An accuracy on these rows means little beside less than this: the best rule that never reads the question.
        print(f"best target-blind rule: {rule.describe()}, solves {100 * rule.accuracy:.1f}% of them")
    return 0
