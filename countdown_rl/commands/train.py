"""``countdown-rl train --config recipe.yaml [--key value ...]``: GRPO or Dr.GRPO on any task, from a recipe.

Also ``accelerate launch --config_file accelerate_configs/<x>.yaml -m countdown_rl.commands.train --config
recipe.yaml``.

1. Parse the recipe strictly (script, training and model arguments) and check everything that can be wrong in it
   (task, task options, template, reward names, batch arithmetic) before any model or dataset is loaded.
2. Seed and logging; load, validate, filter, dedupe and split the task's dataset; render prompts (a bad file or
   row is reported before the model is loaded).
3. Tokenizer and model (dtype, attention implementation, LoRA through ``use_peft``).
4. :func:`countdown_rl.training.pipeline.train_grpo` trains (resuming from the newest checkpoint when asked) and
   saves; then the model is evaluated on the held-out split, described in a model card, pushed to the Hub, and last,
   with ``merge_adapter``, merged into ``<output_dir>/merged``.
5. Around training (:mod:`countdown_rl.runs.reliability`): the output directory is never reused silently (``resume``,
   ``overwrite_output_dir``), checkpoints are atomic, SIGTERM/SIGINT/SIGUSR1 save a checkpoint and exit 75, a
   non-finite step stops the run (or is skipped), and ``run_info.json`` records the recipe and the run's status.
   Under ``countdown-rl sweep`` (which sets ``COUNTDOWN_RL_SWEEP_RUN``) one short progress line per logged step.

The launch is checked first (:mod:`countdown_rl.runs.engine`): the engine it asked for runs, or it is refused;
the log's first line and the run record say what runs. Every error found before loading is one line on stderr,
``countdown-rl train: error: ...``, and exit code 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from countdown_rl.commands.one_line import SnakeCaseHelpFormatter, fail
from countdown_rl.runs.engine import check_launch, launch_rank
from countdown_rl.runs.guard import release_all_output_dirs
from countdown_rl.runs.reliability import prepare_run
from countdown_rl.sweeps.runner import PROGRESS_ENV
from countdown_rl.training.recipe import check_recipe, check_vllm_mode, parse_args, recipe_parser

PROG = "countdown-rl train"
logger = logging.getLogger("countdown_rl.train")


class _HelpFormatter(SnakeCaseHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """TrlParser's help (every key with its default), one spelling per key (TrlParser accepts both already)."""


def build_parser():
    """The recipe parser (:func:`countdown_rl.training.recipe.recipe_parser`) named and with help as a command's."""
    return recipe_parser(
        prog=PROG,
        description="Train with GRPO / Dr.GRPO from a recipe: --config recipe.yaml (TRL's YAML) and --key value "
        "overrides of the keys below.",
        formatter_class=_HelpFormatter,
    )


def _end_distributed() -> None:
    """Wait for every process, then tear the process group down (a bare exit sometimes aborts a rank)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    try:
        return train(argv)
    finally:  # the output directory's claim (runs.guard) ends with the command, not only with the process
        release_all_output_dirs()


def train(argv: list[str] | None = None) -> int:
    try:
        check_launch(None)  # first: parsing the recipe already acts on the launcher's DeepSpeed variables
        script_args, training_args, model_args = parse_args(argv, build_parser())
        task = check_recipe(script_args, training_args, model_args)
        check_vllm_mode(training_args)  # server mode needs CUDA (NCCL weight sync)
        # The engine the launch asked for, or a refusal (N processes that are not one job, DeepSpeed on a CPU).
        engine = check_launch(training_args.use_cpu)
        # Hub settings, the output directory (claimed by this job, never reused silently), the checkpoint to resume.
        plan = prepare_run(script_args, training_args, model_args)
        checkpoint = plan.checkpoint
    except (ValueError, TypeError) as err:  # every process of a launch finds the same error: the first one says it
        return fail(PROG, err) if launch_rank() == 0 else 2

    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
    from trl import get_peft_config

    from countdown_rl.generation.vllm_sync import check_cpu_engine_model
    from countdown_rl.runs.hub import check_model_source, failed_push_message
    from countdown_rl.runs.model_source import check_model_file_source, resolve_model_source
    from countdown_rl.runs.record import RunRecord, set_status
    from countdown_rl.training.data import prepare_data
    from countdown_rl.training.pipeline import TrainerSetupError, merge_saved_adapter, progress_callback, train_grpo

    set_seed(training_args.seed)
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    transformers.utils.logging.set_verbosity(training_args.get_process_log_level())
    logger.info("engine: %s (as launched; the run record says what ran)", engine.summary())
    logger.info("script %s", script_args)
    logger.info("model %s", model_args)

    try:  # missing columns, a bad row, no such file: one line naming the file (and row), before the model loads
        train_ds, test_ds, info = prepare_data(script_args, task)
        # a GGUF file or packaged model name (runs.model_source), a model path that is no folder, or a Hub id while
        # offline and not cached: one line before loading
        if not check_model_file_source(model_args.model_name_or_path):
            check_model_source(model_args.model_name_or_path, "model_name_or_path")
    except (ValueError, FileNotFoundError, ConnectionError) as err:  # ConnectionError: a Hub id, offline
        return fail(PROG, err)
    logger.info("dataset %s", info)
    source = resolve_model_source(model_args.model_name_or_path)  # a GGUF file: converted once, cached
    model_args.model_name_or_path = source.path
    if training_args.use_vllm and training_args.vllm_mode == "colocate":
        try:
            check_cpu_engine_model(source.path)  # vLLM's CPU kernels: their attention head sizes
        except ValueError as err:
            return fail(PROG, err)

    tokenizer = AutoTokenizer.from_pretrained(
        model_args.model_name_or_path, revision=model_args.model_revision,
        trust_remote_code=training_args.trust_remote_code,
    )
    if training_args.generation_backend == "compiled":  # pad/EOS ids and the static cache, before the weights load
        from transformers import AutoConfig

        from countdown_rl.generation.compiled import check_generation_lengths

        try:
            check_generation_lengths(
                tokenizer,
                AutoConfig.from_pretrained(model_args.model_name_or_path, revision=model_args.model_revision,
                                           trust_remote_code=training_args.trust_remote_code),
                training_args.generation_prompt_buckets,
                training_args.max_completion_length,
            )
        except ValueError as err:
            return fail(PROG, err)
    dtype = model_args.dtype if model_args.dtype in (None, "auto") else getattr(torch, model_args.dtype)
    model = AutoModelForCausalLM.from_pretrained(
        model_args.model_name_or_path,
        revision=model_args.model_revision,
        trust_remote_code=training_args.trust_remote_code,
        attn_implementation=model_args.attn_implementation,
        dtype=dtype,
    )
    eval_subset = test_ds.select(range(min(script_args.eval_subset_size, len(test_ds))))
    dataset = script_args.dataset_name or task.default_dataset
    record = RunRecord(model=source.given, dataset=dataset, data=info.as_dict(), extra=source.record)
    # Under `countdown-rl sweep`: one short line per logged step, "[sweep i/n name] step k/N: ..."
    sweep_progress = [progress_callback(1, f"[sweep {os.environ[PROGRESS_ENV]}]")] if PROGRESS_ENV in os.environ else []
    try:
        run = train_grpo(
            model,
            tokenizer,
            training_args,
            train_ds,
            task=task,
            record=record,
            reward_funcs=script_args.reward_funcs,
            eval_dataset=eval_subset if len(eval_subset) else None,
            peft_config=get_peft_config(model_args),
            resume_from_checkpoint=checkpoint,
            plan=plan,
            non_finite=script_args.non_finite,
            callbacks=sweep_progress,
            planned_engine=engine,
        )
    except TrainerSetupError as err:  # e.g. lora_target_modules that match no layer: one line, nothing written
        return fail(PROG, err)
    trainer = run.trainer
    logger.info("process %d of %d", trainer.accelerator.process_index, trainer.accelerator.num_processes)
    if run.stopped is not None:  # interrupted (checkpoint saved) or non-finite: one line said so
        _end_distributed()
        return run.stopped

    final_size = len(test_ds) if script_args.final_eval_size is None else script_args.final_eval_size
    if final_size > 0:
        final = trainer.evaluate_task(test_ds.select(range(min(final_size, len(test_ds)))), final=True)
        logger.info("final held-out accuracy %.2f%% on %d rows", 100 * final.accuracy, final.num_puzzles)
    trainer.create_model_card(dataset_name=dataset)
    push_error = None
    if training_args.push_to_hub:
        try:
            trainer.push_to_hub(dataset_name=dataset)
        except Exception as err:  # noqa: BLE001  (network, auth, quota): the run is on disk; say so, push later
            push_error = failed_push_message(training_args.output_dir, training_args.hub_model_id, err)
    # Last, from the saved adapter (under FSDP the trainer's weights are shards only a collective could gather).
    # The merged model stays local (<output_dir>/merged; checkpoints are not pushed).
    if script_args.merge_adapter and trainer.accelerator.is_main_process:
        merge_saved_adapter(training_args.output_dir, model_args.model_name_or_path, dtype=dtype,
                            revision=model_args.model_revision, trust_remote_code=training_args.trust_remote_code)
    if trainer.accelerator.is_main_process:
        set_status(training_args.output_dir, "finished", step=trainer.state.global_step, message=push_error)
    _end_distributed()
    if push_error:
        fail(PROG, push_error)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
