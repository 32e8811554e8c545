"""``countdown-rl verify``: judge one completion against one row of a task and print the result as JSON.

Countdown: ``countdown-rl verify --nums 7 7 65 --target 51 [--unary_minus] TEXT`` (also the equation and its
exact value). Any task: ``countdown-rl verify --task format_copy --row '{"number": 4821}' TEXT``.
"""

from __future__ import annotations

import argparse
import json
import sys

from countdown_rl.commands.one_line import OneLineArgumentParser, examples, fail
from countdown_rl.tasks import DEFAULT_TASK, TASKS

PROG = "countdown-rl verify"


def build_parser() -> argparse.ArgumentParser:
    """The ``countdown-rl verify`` argument parser."""
    p = OneLineArgumentParser(
        prog=PROG, description=__doc__.split("\n\n")[0],
        epilog=examples(
            'countdown-rl verify --nums 7 7 65 --target 51 "<answer>(65 - 7) - 7</answer>"',
            'countdown-rl verify --nums 1 72 12 --target 863 --unary_minus "<answer>-1 + 72 * 12</answer>"',
            'countdown-rl verify --task format_copy --row \'{"number": 4821}\' "<answer>4821</answer>"',
        ),
    )
    p.add_argument("text", help="the completion (use - to read standard input)")
    p.add_argument("--task", choices=sorted(TASKS), default=DEFAULT_TASK, help="task (default countdown)")
    p.add_argument("--row", help="the row as JSON, with the task's columns")
    p.add_argument("--task_options", nargs="*", default=[], help="task options as key=value")
    countdown = p.add_argument_group("countdown shortcuts")
    countdown.add_argument("--nums", type=int, nargs="+", help="the given numbers")
    countdown.add_argument("--target", type=int, help="the target")
    countdown.add_argument("--numbers_rule", choices=["exact", "subset"], default="exact",
                           help="each number exactly once (default) or at most once")
    countdown.add_argument("--unary_minus", action="store_true",
                           help="accept a unary minus (-1 + 72 * 12), as the reference verifier does")
    return p



def main(argv: list[str] | None = None) -> int:
    """Run ``countdown-rl verify``; returns the exit code."""
    from countdown_rl.tasks import get_task

    args = build_parser().parse_args(argv)
    text = sys.stdin.read() if args.text == "-" else args.text
    options = list(args.task_options) + (["unary_minus=true"] if args.unary_minus else [])
    try:
        task = get_task(args.task, options)
    except ValueError as err:
        return fail(PROG, str(err))
    if args.task == "countdown" and args.row is None:
        if args.nums is None or args.target is None:
            return fail(PROG, "countdown needs --nums and --target (or --row '{\"nums\": [...], \"target\": N}')")
        from countdown_rl.tasks.countdown.verifier import score_completion

        score = score_completion(text, args.nums, args.target, numbers_rule=args.numbers_rule,
                                 unary_minus=task.options.unary_minus)
        value = None if score.value is None else str(score.value)
        print(json.dumps({"equation": score.equation, "value": value, "outcome": score.outcome.value,
                          "reward": score.reward}))
        return 0
    if args.row is None:
        return fail(PROG, f"--row: missing (a JSON object with the columns {list(task.columns)} of task {task.name!r})")
    try:
        row = task.prepare_row(json.loads(args.row))
    except (json.JSONDecodeError, ValueError, AttributeError) as err:
        return fail(PROG, f"--row: {err}")
    problem = task.row_problem(row)
    if problem:
        return fail(PROG, f"--row: {problem}")
    verdict = task.judge(text, row)
    print(json.dumps({"answer": verdict.answer, "outcome": verdict.outcome.value, "reward": verdict.reward}))
    return 0
