"""``countdown-rl warmup --task NAME --out DIR [--model M]``: a model briefly fine-tuned on a task's rows.

The starting point of the CPU recipes (e.g. ``recipes/format_copy/cpu_tiny.yaml``): a model that sometimes
writes the answer format, so RL has differences between samples to learn from. Without ``--model`` it is the tiny
offline Qwen3 (saved first as ``<out>-base``); with it, that model (a folder, Hub id, ``.gguf`` file or
``smollm2``, converted once), on a GPU when there is one.
"""

from __future__ import annotations

from pathlib import Path

from countdown_rl.commands.one_line import OneLineArgumentParser, fail
from countdown_rl.tasks import TASKS

PROG = "countdown-rl warmup"
# The tiny random model needs a large rate to learn the format in 40 steps; a pretrained one keeps its knowledge
# only at a fine-tuning rate.
TINY_LEARNING_RATE = 2e-3
MODEL_LEARNING_RATE = 1e-5


def build_parser() -> OneLineArgumentParser:
    """The ``countdown-rl warmup`` argument parser."""
    parser = OneLineArgumentParser(prog=PROG, description=main.__doc__)
    parser.add_argument("--task", choices=sorted(TASKS), required=True, help="the task to warm up on")
    parser.add_argument("--out", required=True, help="folder for the warmed-up model (and <out>-base for the base)")
    parser.add_argument("--steps", type=int, default=40, help="SFT steps (default 40: sometimes right, not always)")
    parser.add_argument("--rows", type=int, default=512, help="generated rows to learn from (default 512)")
    parser.add_argument("--model", default=None,
                        help="the model to warm up: a folder, Hub id, .gguf file or smollm2 (default: the tiny Qwen3)")
    parser.add_argument("--size", choices=["test", "demo"], default=None,
                        help="tiny model size, without --model (default demo)")
    parser.add_argument("--learning_rate", type=float, default=None,
                        help=f"SFT learning rate (default {TINY_LEARNING_RATE} for the tiny model, "
                        f"{MODEL_LEARNING_RATE} with --model)")
    parser.add_argument("--task_options", nargs="*", default=[],
                        help="task options as key=value (as in the recipe's task_options)")
    parser.add_argument("--template", default=None, help="prompt template (default: the task's)")
    parser.add_argument("--seed", type=int, default=0, help="seed of rows, model and SFT (default 0)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """``countdown-rl warmup --task NAME --out DIR``: tiny offline Qwen3 + a short SFT on the task's rows."""
    parser = build_parser()
    args = parser.parse_args(argv)
    from countdown_rl.tasks import get_task
    from countdown_rl.training.warmup import sft_warmup, task_examples

    try:
        task = get_task(args.task, args.task_options)
    except ValueError as err:
        parser.error(str(err))
    if args.steps <= 0 or args.rows <= 0:
        parser.error("--steps and --rows must be positive")
    if args.template is not None and args.template not in task.prompt_templates:
        parser.error(f"--template {args.template!r} is not one of {sorted(task.prompt_templates)} (task {task.name})")
    if args.model is not None and args.size is not None:
        parser.error(f"--size is the tiny model's; --model {args.model} was given")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        return fail(PROG, f"--out {out} exists and is not a folder")
    rows = [task.prepare_row(r) for r in task.generate(args.rows, seed=args.seed)]
    examples = task_examples(task, rows, args.template)
    if args.model is None:
        from countdown_rl.demo.tiny import save_tiny_model

        base = out.with_name(out.name + "-base")
        save_tiny_model(base, args.size or "demo", args.seed)
        use_cpu, learning_rate = True, args.learning_rate or TINY_LEARNING_RATE
    else:
        import torch

        from countdown_rl.models.source import resolve_model_source

        try:
            source = resolve_model_source(args.model, "--model")
        except ValueError as err:
            return fail(PROG, err)
        base = source.path
        use_cpu, learning_rate = not torch.cuda.is_available(), args.learning_rate or MODEL_LEARNING_RATE
    sft_warmup(base, out, examples, steps=args.steps, learning_rate=learning_rate, seed=args.seed, use_cpu=use_cpu)
    print(f"wrote the warmed-up {task.name} model to {out} (base model: {base})")
    return 0
