"""``countdown-rl warmup --task NAME --output_dir DIR [--model_name_or_path M]``: a model briefly fine-tuned on a
task's rows.

The starting point of the CPU recipes (e.g. ``recipes/format_copy/cpu_tiny.yaml``): a model that sometimes
writes the answer format, so RL has differences between samples to learn from. Without ``--model_name_or_path`` it
is the tiny offline Qwen3 (saved first as ``<output_dir>-base``); with it, that model (a folder, Hub id, ``.gguf``
file or ``smollm2``, converted once), on a GPU when there is one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from countdown_rl.commands.one_line import OneLineArgumentParser, examples, fail
from countdown_rl.tasks import TASKS

PROG = "countdown-rl warmup"
# The tiny random model needs a large rate to learn the format in 40 steps; a pretrained one keeps its knowledge
# only at a fine-tuning rate.
TINY_LEARNING_RATE = 2e-3
MODEL_LEARNING_RATE = 1e-5


def build_parser() -> OneLineArgumentParser:
    """The ``countdown-rl warmup`` argument parser."""
    parser = OneLineArgumentParser(
        prog=PROG, description=main.__doc__,
        epilog=examples(
            "countdown-rl warmup --task format_copy --task_options max_digits=3 --num_rows 400 --max_steps 40 "
            "--output_dir outputs/format-copy-warm",
            "countdown-rl train --config recipes/format_copy/cpu_tiny.yaml     then RL from it",
        ),
    )
    parser.add_argument("--task", choices=sorted(TASKS), default=None, help="the task to warm up on (or --config)")
    parser.add_argument("--config", default=None,
                        help="a train recipe: warm up on the rows it trains on (its task, task options, template and "
                        "data keys), so its held-out rows stay unseen; instead of --task, --task_options and "
                        "--prompt_template")
    parser.add_argument("--output_dir", required=True, deprecated=["--out"],
                        help="folder for the warmed-up model (and <output_dir>-base for the base)")
    parser.add_argument("--max_steps", type=int, default=40, deprecated=["--steps"],
                        help="SFT steps (default 40: sometimes right, not always)")
    parser.add_argument("--num_rows", type=int, default=None, deprecated=["--rows"],
                        help="generated rows to learn from (default 512; with --config: the first N of the recipe's "
                        "training rows, default all)")
    parser.add_argument("--model_name_or_path", default=None, deprecated=["--model"],
                        help="the model to warm up: a folder, Hub id, .gguf file or smollm2 (default: the tiny Qwen3)")
    parser.add_argument("--size", choices=["test", "demo"], default=None,
                        help="tiny model size, without --model_name_or_path (default demo)")
    parser.add_argument("--learning_rate", type=float, default=None,
                        help=f"SFT learning rate (default {TINY_LEARNING_RATE} for the tiny model, "
                        f"{MODEL_LEARNING_RATE} with --model_name_or_path)")
    parser.add_argument("--task_options", nargs="*", default=[],
                        help="task options as key=value (as in the recipe's task_options)")
    parser.add_argument("--prompt_template", default=None, deprecated=["--template"],
                        help="prompt template (default: the task's)")
    parser.add_argument("--seed", type=int, default=0, help="seed of rows, model and SFT (default 0)")
    return parser


def recipe_rows(recipe: str) -> tuple[Any, str | None, list[dict[str, Any]]]:
    """``(task, template, training rows)`` of a train recipe's data keys: the rows ``countdown-rl train`` would train
    on, so that a warm-up never sees the recipe's held-out rows. Other keys of the recipe are not read here."""
    import dataclasses

    import yaml

    from countdown_rl.data.arguments import DataArguments
    from countdown_rl.data.prepare import prepare_data

    with open(recipe, encoding="utf-8") as f:
        keys = yaml.safe_load(f)
    if not isinstance(keys, dict):
        raise ValueError(f"{recipe}: expected a mapping of recipe keys")
    data = DataArguments(**{f.name: keys[f.name] for f in dataclasses.fields(DataArguments) if f.name in keys})
    task = data.check()
    train, _, _ = prepare_data(data, task)
    return task, data.prompt_template, train.remove_columns("prompt").to_list()


def main(argv: list[str] | None = None) -> int:
    """``countdown-rl warmup --task NAME --output_dir DIR``: tiny offline Qwen3 + a short SFT on the task's rows."""
    parser = build_parser()
    args = parser.parse_args(argv)
    from countdown_rl.tasks import get_task
    from countdown_rl.training.warmup import sft_warmup, task_examples

    if (args.config is None) == (args.task is None):
        parser.error("give --task (rows from the task's generator) or --config (a recipe's training rows), not both")
    if args.config is not None and (args.task_options or args.prompt_template):
        parser.error("--config takes the task options and prompt template from the recipe; drop --task_options and "
                     "--prompt_template")
    if args.max_steps <= 0 or (args.num_rows is not None and args.num_rows <= 0):
        parser.error("--max_steps and --num_rows must be positive")
    if args.config is not None:
        try:
            task, template, rows = recipe_rows(args.config)
        except OSError as err:
            return fail(PROG, f"--config {args.config}: {err.strerror or err}")
        except ValueError as err:
            return fail(PROG, err)
        rows = rows[: args.num_rows]
    else:
        try:
            task = get_task(args.task, args.task_options)
        except ValueError as err:
            parser.error(str(err))
        template = args.prompt_template
        if template is not None and template not in task.prompt_templates:
            parser.error(f"--prompt_template {template!r} is not one of {sorted(task.prompt_templates)} (task {task.name})")
        rows = [task.prepare_row(r) for r in task.generate(args.num_rows or 512, seed=args.seed)]
    if args.model_name_or_path is not None and args.size is not None:
        parser.error(f"--size is the tiny model's; --model_name_or_path {args.model_name_or_path} was given")
    out = Path(args.output_dir)
    if out.exists() and not out.is_dir():
        return fail(PROG, f"--output_dir {out} exists and is not a folder")
    examples = task_examples(task, rows, template)
    if args.model_name_or_path is None:
        from countdown_rl.demo.tiny import save_tiny_model

        base = out.with_name(out.name + "-base")
        save_tiny_model(base, args.size or "demo", args.seed)
        use_cpu, learning_rate = True, args.learning_rate or TINY_LEARNING_RATE
    else:
        import torch

        from countdown_rl.models.source import resolve_model_source

        try:
            source = resolve_model_source(args.model_name_or_path, "--model_name_or_path")
        except ValueError as err:
            return fail(PROG, err)
        base = source.path
        use_cpu, learning_rate = not torch.cuda.is_available(), args.learning_rate or MODEL_LEARNING_RATE
    sft_warmup(base, out, examples, steps=args.max_steps, learning_rate=learning_rate, seed=args.seed, use_cpu=use_cpu)
    print(f"wrote the warmed-up {task.name} model to {out} (base model: {base})")
    return 0
