"""Train a model on Countdown with GRPO or Dr.GRPO: ``countdown-rl train --config recipe.yaml [--key value ...]``.

Also ``accelerate launch --config_file accelerate_configs/<x>.yaml -m countdown_rl.train --config recipe.yaml``.

1. Parse the recipe strictly (script, training and model arguments) and check everything that can be wrong in it
   before any model or dataset is loaded.
2. Seed and logging; load, validate, dedupe and split the dataset; render prompts (a bad file or row is reported
   before the model is loaded).
3. Tokenizer and model (dtype, attention implementation, LoRA through ``use_peft``); rewards by name.
4. ``CountdownGRPOTrainer`` trains (resuming from the newest checkpoint when asked); the model (or adapter) is
   saved, evaluated on the held-out split, described in a model card, pushed to the Hub, and last, with
   ``merge_adapter``, merged into ``<output_dir>/merged``.

Every error found before loading is one line on stderr, ``countdown-rl train: error: ...``, and exit code 2.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from countdown_rl.data import DEFAULT_DATASET, ON_INVALID
from countdown_rl.prompts import PROMPT_TEMPLATES
from countdown_rl.rewards import REWARD_FUNCS

logger = logging.getLogger("countdown_rl.train")


@dataclass
class CountdownScriptArguments:
    """What to train on and what to do around training (the recipe's non-TRL keys)."""

    dataset_name: str = field(
        default=DEFAULT_DATASET,
        metadata={"help": "Hub dataset id, or a local .jsonl/.parquet file or folder, with columns nums and target."},
    )
    dataset_split: str = field(default="train", metadata={"help": "Split of the source dataset to read."})
    test_size: int = field(default=1024, metadata={"help": "Held-out puzzles split off for evaluation."})
    split_method: str = field(
        default="random",
        metadata={"help": "'random' (seeded, after dedupe) or 'tinyzero' (TinyZero's fixed test rows).",
                  "choices": ["random", "tinyzero"]},
    )
    split_seed: int = field(default=42, metadata={"help": "Seed of the held-out split (same as `countdown-rl eval`)."})
    on_invalid_rows: str = field(
        default="raise",
        metadata={"help": "A row with missing or non-integer nums/target: 'raise' (an error naming the row) or "
                  "'drop' (dropped and counted).", "choices": list(ON_INVALID)},
    )
    prompt_template: str = field(
        default="r1_zero",
        metadata={"help": f"Prompt template: one of {sorted(PROMPT_TEMPLATES)}.", "choices": sorted(PROMPT_TEMPLATES)},
    )
    reward_funcs: list[str] = field(
        default_factory=lambda: ["countdown"],
        metadata={"help": f"Reward functions by name ({', '.join(sorted(REWARD_FUNCS))}); weights: reward_weights."},
    )
    eval_subset_size: int = field(
        default=128,
        metadata={"help": "Held-out puzzles scored greedily every eval_steps during training (0: none)."},
    )
    final_eval_size: int | None = field(
        default=None,
        metadata={"help": "Held-out puzzles for the final evaluation (default: the whole test split; 0: skip)."},
    )
    merge_adapter: bool = field(
        default=False,
        metadata={"help": "With use_peft: also write the LoRA-merged full model to <output_dir>/merged."},
    )


def _recipe_parser():
    """TrlParser over our three dataclasses whose argparse errors raise ValueError (argparse prints usage, exits)."""
    from trl import ModelConfig, TrlParser

    from countdown_rl.trainer import CountdownGRPOConfig

    class RecipeParser(TrlParser):
        def error(self, message):
            raise ValueError(message)

    return RecipeParser((CountdownScriptArguments, CountdownGRPOConfig, ModelConfig))


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


def parse_args(argv: list[str] | None = None):
    """Parse ``--config recipe.yaml`` plus ``--key value`` overrides; unknown keys are errors naming the source."""
    import yaml

    argv = list(sys.argv[1:] if argv is None else argv)
    config_path = argv[argv.index("--config") + 1] if "--config" in argv[:-1] else None
    parser = _recipe_parser()
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


def check_recipe(script_args, training_args, model_args) -> None:
    """Everything that can be wrong in a recipe, checked before any model or dataset is loaded (one line each)."""
    from countdown_rl.rewards import get_reward_funcs

    if not model_args.model_name_or_path:
        raise ValueError("model_name_or_path: missing (a Hub id or a local model folder)")
    if training_args.max_completion_length is None or training_args.max_completion_length <= 0:
        raise ValueError(f"max_completion_length: must be positive, got {training_args.max_completion_length}")
    if training_args.generation_batch_size % training_args.num_generations != 0:
        raise ValueError(
            f"generation_batch_size: {training_args.generation_batch_size} completions per rollout are not divisible "
            f"by num_generations={training_args.num_generations}"
        )
    get_reward_funcs(script_args.reward_funcs)  # unknown names raise, naming the reward and the registry
    if training_args.reward_weights is not None and len(training_args.reward_weights) != len(
        script_args.reward_funcs
    ):
        raise ValueError(
            f"reward_weights: {len(training_args.reward_weights)} weights for "
            f"{len(script_args.reward_funcs)} reward_funcs"
        )
    if script_args.test_size <= 0:
        raise ValueError(f"test_size: must be positive, got {script_args.test_size}")
    if training_args.use_vllm:
        from trl.import_utils import is_vllm_available

        if not is_vllm_available():
            raise ValueError("use_vllm: vllm is not installed; pip install 'countdown-rl[vllm]' (needs a CUDA GPU)")
    if model_args.use_peft:
        import peft  # noqa: F401  (a dependency; imported here so a broken install fails before loading)
    elif script_args.merge_adapter:
        raise ValueError("merge_adapter: only meaningful with use_peft: true")


def resolve_checkpoint(resume: str | bool | None, output_dir: str) -> str | None:
    """``true`` -> newest ``checkpoint-N`` in ``output_dir`` (an error if none); a path -> that path."""
    from transformers.trainer_utils import get_last_checkpoint

    if resume in (None, False, "false", "False", ""):
        return None
    if resume in (True, "true", "True"):
        last = get_last_checkpoint(output_dir) if os.path.isdir(output_dir) else None
        if last is None:
            raise ValueError(f"resume_from_checkpoint: no checkpoint-* folder in {output_dir}")
        return last
    if not os.path.isdir(resume):
        raise ValueError(f"resume_from_checkpoint: {resume} is not a folder")
    return resume


def _error(err: BaseException) -> int:
    """Print an error as ONE line (``countdown-rl train: error: ...``) on stderr; the exit code 2."""
    print(f"countdown-rl train: error: {' '.join(str(err).split())}", file=sys.stderr)
    return 2


def _end_distributed() -> None:
    """Wait for every process, then tear the process group down (a bare exit sometimes aborts a rank)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    try:
        script_args, training_args, model_args = parse_args(argv)
        check_recipe(script_args, training_args, model_args)
        checkpoint = resolve_checkpoint(training_args.resume_from_checkpoint, training_args.output_dir)
    except (ValueError, TypeError) as err:
        return _error(err)

    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
    from trl import get_peft_config

    from countdown_rl.data import prepare_countdown
    from countdown_rl.model_card import RUN_INFO, write_json_atomic
    from countdown_rl.rewards import get_reward_funcs
    from countdown_rl.trainer import CountdownGRPOTrainer

    set_seed(training_args.seed)
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    transformers.utils.logging.set_verbosity(training_args.get_process_log_level())
    logger.info("script %s", script_args)
    logger.info("model %s", model_args)

    try:  # missing columns, a bad row, no such file: one line naming the file (and row), before the model loads
        train_ds, test_ds, info = prepare_countdown(
            script_args.dataset_name,
            split=script_args.dataset_split,
            test_size=script_args.test_size,
            seed=script_args.split_seed,
            template=script_args.prompt_template,
            split_method=script_args.split_method,
            on_invalid=script_args.on_invalid_rows,
        )
    except (ValueError, FileNotFoundError, ConnectionError) as err:  # ConnectionError: a Hub id, offline
        return _error(err)
    logger.info("dataset %s", info)

    tokenizer = AutoTokenizer.from_pretrained(
        model_args.model_name_or_path, revision=model_args.model_revision,
        trust_remote_code=training_args.trust_remote_code,
    )
    if training_args.generation_backend == "compiled":  # pad/EOS ids and the static cache, before the weights load
        from transformers import AutoConfig

        from countdown_rl.compiled_generation import check_generation_lengths

        try:
            check_generation_lengths(
                tokenizer,
                AutoConfig.from_pretrained(model_args.model_name_or_path, revision=model_args.model_revision,
                                           trust_remote_code=training_args.trust_remote_code),
                training_args.generation_prompt_buckets,
                training_args.max_completion_length,
            )
        except ValueError as err:
            return _error(err)
    dtype = model_args.dtype if model_args.dtype in (None, "auto") else getattr(torch, model_args.dtype)
    model = AutoModelForCausalLM.from_pretrained(
        model_args.model_name_or_path,
        revision=model_args.model_revision,
        trust_remote_code=training_args.trust_remote_code,
        attn_implementation=model_args.attn_implementation,
        dtype=dtype,
    )
    eval_subset = test_ds.select(range(min(script_args.eval_subset_size, len(test_ds))))
    trainer = CountdownGRPOTrainer(
        model=model,
        reward_funcs=get_reward_funcs(script_args.reward_funcs),
        args=training_args,
        train_dataset=train_ds,
        eval_dataset=eval_subset if len(eval_subset) else None,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
    )
    logger.info("process %d of %d", trainer.accelerator.process_index, trainer.accelerator.num_processes)
    if trainer.accelerator.is_main_process:
        run_info = {
            "model": model_args.model_name_or_path,
            "dataset": script_args.dataset_name,
            "algorithm": training_args.algorithm,
            "max_completion_length": training_args.max_completion_length,
            "reduction": training_args.reduction,
            "std_normalization": training_args.std_normalization,
            "use_peft": model_args.use_peft,
            "generation_backend": training_args.generation_backend,
            "num_processes": trainer.accelerator.num_processes,
            "resumed_from": checkpoint,
            "data": info if isinstance(info, dict) else vars(info),
        }
        write_json_atomic(Path(training_args.output_dir) / RUN_INFO, run_info)
    trainer.train(resume_from_checkpoint=checkpoint)
    trainer.save_model(training_args.output_dir)  # with use_peft: the adapter only
    trainer.save_state()  # trainer_state.json (log history) in output_dir, for `countdown-rl report`
    if trainer.accelerator.is_main_process:
        tokenizer.save_pretrained(training_args.output_dir)

    final_size = len(test_ds) if script_args.final_eval_size is None else script_args.final_eval_size
    if final_size > 0:
        final = trainer.evaluate_countdown(test_ds.select(range(min(final_size, len(test_ds)))), final=True)
        logger.info("final held-out accuracy %.2f%% on %d puzzles", 100 * final.accuracy, final.num_puzzles)
    trainer.create_model_card(dataset_name=script_args.dataset_name)
    if training_args.push_to_hub:
        trainer.push_to_hub(dataset_name=script_args.dataset_name)
    # Last: merge_and_unload folds the adapter into the trainer's model in place, after which the model would save
    # (and push) an empty adapter. The merged model stays local (<output_dir>/merged; checkpoints are not pushed).
    if script_args.merge_adapter and trainer.accelerator.is_main_process:
        merged = trainer.accelerator.unwrap_model(trainer.model).merge_and_unload()
        merged.save_pretrained(Path(training_args.output_dir) / "merged")
        tokenizer.save_pretrained(Path(training_args.output_dir) / "merged")
    _end_distributed()
    return 0


if __name__ == "__main__":
    sys.exit(main())
