"""``countdown-rl train --config recipe.yaml [--key value ...]``: GRPO or Dr.GRPO on any task, from a recipe.

Also ``accelerate launch --config_file accelerate_configs/<x>.yaml -m countdown_rl.commands.train --config
recipe.yaml``.

1. Parse the recipe strictly (script, training and model arguments) and check everything that can be wrong in it
   (task, task options, template, reward names, batch arithmetic) before any model or dataset is loaded
   (:func:`countdown_rl.training.pipeline.plan_recipe`).
2. Logging; then :func:`countdown_rl.training.pipeline.run_recipe` runs the recipe: load, validate, filter, dedupe
   and split the task's dataset and render prompts (a bad file or row is reported before the model is loaded);
   tokenizer and model (dtype, attention implementation, LoRA through ``use_peft``);
   :func:`countdown_rl.training.pipeline.train_grpo` trains (resuming from the newest checkpoint when asked) and
   saves; then the model is evaluated on the held-out split, described in a model card, pushed to the Hub, and last,
   with ``merge_adapter``, merged into ``<output_dir>/merged``.
3. Around training (:mod:`countdown_rl.runs.reliability`): the output directory is never reused silently (``resume``,
   ``overwrite_output_dir``), checkpoints are atomic, SIGTERM/SIGINT/SIGUSR1 save a checkpoint and exit 75, a
   non-finite step stops the run (or is skipped), and ``run_info.json`` records the recipe and the run's status.
   Under ``countdown-rl sweep`` (which sets ``COUNTDOWN_RL_SWEEP_RUN``) one short progress line per logged step.
4. The process group ends; the exit code says how the run ended.

The launch is checked first (:mod:`countdown_rl.runs.engine`): the engine it asked for runs, or it is refused;
the log's first line and the run record say what runs. Every error found before loading is one line on stderr,
``countdown-rl train: error: ...``, and exit code 2.
"""

from __future__ import annotations

import argparse
import faulthandler
import logging
import os
import re
import sys

from countdown_rl.commands.one_line import SnakeCaseHelpFormatter, examples, fail
from countdown_rl.generation.vllm_import import leave_vllm_out
from countdown_rl.runs.engine import check_launch, end_launched_process, launch_rank
from countdown_rl.runs.guard import release_all_output_dirs
from countdown_rl.sweeps.runner import PROGRESS_ENV
from countdown_rl.training.pipeline import RecipeError, plan_recipe, progress_callback, run_recipe
from countdown_rl.training.recipe import missing_setup, parse_args, recipe_parser

PROG = "countdown-rl train"
logger = logging.getLogger("countdown_rl.train")


PROSE_DEFAULT = re.compile(r"\bdefaults\b|\bdefault:|\(default\b|\(the default\)|\bthe default of\b|\bby default\b",
                           re.IGNORECASE)
"""A key's help that says its default in words ("Default: the task's", "If `None` (default), ...")."""


class _HelpFormatter(SnakeCaseHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Every key with its default, once: ``(default: X)`` unless the help says the default in words (a default of
    None is often settled later, e.g. ``advantage_eps``'s 1e-4); one spelling per key."""

    def _get_help_string(self, action):
        if action.help and PROSE_DEFAULT.search(action.help):
            return action.help
        return super()._get_help_string(action)


def build_parser():
    """The recipe parser (:func:`countdown_rl.training.recipe.recipe_parser`) named and with help as a command's,
    ``--config`` first among the options (TrlParser reads it before parsing, so it is only shown here)."""
    parser = recipe_parser(
        prog=PROG,
        description="Train with GRPO / Dr.GRPO from a recipe: --config recipe.yaml (TRL's YAML) and --key value "
        "overrides of the keys below.",
        formatter_class=_HelpFormatter,
        epilog=examples(
            "countdown-rl train --config recipes/smoke/cpu_tiny.yaml     a CPU smoke run (setup: docs/demo.md)",
            "accelerate launch --config_file accelerate_configs/single_gpu.yaml -m countdown_rl.commands.train "
            "--config recipes/countdown/qwen3-1.7b/grpo_512.yaml",
            "countdown-rl train --config recipes/countdown/qwen3-1.7b/grpo_512.yaml --learning_rate 5e-6 "
            "--output_dir outputs/try",
            "countdown-rl train --config recipes/countdown/qwen3-1.7b/grpo_512.yaml --resume true   after exit 75",
        ),
    )
    config = parser.add_argument("--config", metavar="RECIPE.yaml", dest="recipe_file", default=argparse.SUPPRESS,
                                 help="The recipe: a YAML file of the keys below (TRL's --config); --key value "
                                 "after it overrides a key. Default: none, every key at its default.")
    for actions in (parser._actions, parser._optionals._group_actions):  # listed right after --help
        actions.insert(1, actions.pop(actions.index(config)))
    return parser


def with_setup(err: Exception, argv: list[str] | None, script_args, model_args) -> str:
    """``err``, plus the recipe's one-time setup command when the model or data file it names is not made yet
    (:func:`countdown_rl.training.recipe.missing_setup`)."""
    given = list(sys.argv[1:] if argv is None else argv)
    recipe = given[given.index("--config") + 1] if "--config" in given[:-1] else None
    setup = recipe and missing_setup(recipe, {"model_name_or_path": model_args.model_name_or_path,
                                              "dataset_name": script_args.dataset_name})
    return f"{err}; {setup}" if setup else str(err)


def main(argv: list[str] | None = None, *, own_process: bool | None = None) -> int:
    """Run ``countdown-rl train`` with ``argv``; returns the exit code. ``own_process`` (default: ``argv is None``, the
    process's entry point) lets a run that uses no vLLM keep vLLM out of the process for good
    (:func:`countdown_rl.generation.vllm_import.leave_vllm_out`) and lets a finished run of a multi-process launch end
    its process (:func:`countdown_rl.runs.engine.end_launched_process`); a call inside a longer-lived process leaves
    both be."""
    try:
        return train(argv, own_process=argv is None if own_process is None else own_process)
    finally:  # the output directory's claim (runs.guard) ends with the command, not only with the process
        release_all_output_dirs()


def train(argv: list[str] | None = None, own_process: bool = False) -> int:
    try:
        check_launch(None)  # first: parsing the recipe already acts on the launcher's DeepSpeed variables
        script_args, training_args, model_args = parse_args(argv, build_parser())
        planned = plan_recipe(script_args, training_args, model_args)
    except (ValueError, TypeError) as err:  # every process of a launch finds the same error: the first one says it
        return fail(PROG, err) if launch_rank() == 0 else 2

    if own_process and not faulthandler.is_enabled():  # a rank that dies of a signal prints its Python stack
        faulthandler.enable()
    # nothing in this run generates with vLLM: keep its native libraries out of the process
    left_out = own_process and not training_args.use_vllm and leave_vllm_out()
    import transformers

    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    transformers.utils.logging.set_verbosity(training_args.get_process_log_level())
    logger.info("engine: %s (as launched; the run record says what ran)", planned.engine.summary())
    if left_out:
        logger.info("vLLM: not imported into this process (use_vllm is false)")
    # Under `countdown-rl sweep`: one short line per logged step, "[sweep i/n name] step k/N: ..."
    sweep_progress = [progress_callback(1, f"[sweep {os.environ[PROGRESS_ENV]}]")] if PROGRESS_ENV in os.environ else []
    try:
        run = run_recipe(script_args, training_args, model_args, planned, callbacks=sweep_progress)
    except RecipeError as err:  # a bad data file or row, a model not found, a LoRA target matching no layer
        return fail(PROG, with_setup(err, argv, script_args, model_args))
    accelerator = run.trainer.accelerator
    logger.info("process %d of %d", accelerator.process_index, accelerator.num_processes)
    code = 0
    if run.stopped is not None:  # interrupted (checkpoint saved) or non-finite: one line said so
        code = run.stopped
    elif run.push_error:
        fail(PROG, run.push_error)
        code = 1
    if own_process:  # under a multi-process launch every rank ends here, its output directory's claim released
        release_all_output_dirs()
        end_launched_process(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
