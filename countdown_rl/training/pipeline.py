"""One training pipeline for every caller: ``countdown-rl train``, the demos, the benchmarks, sweeps and curricula.

A recipe (TRL's three argument objects: :class:`~countdown_rl.training.recipe.ScriptArguments`,
:class:`~countdown_rl.training.trainer.CountdownGRPOConfig`, TRL's ``ModelConfig``) runs end to end in
:func:`run_recipe`, after :func:`plan_recipe` checked it:

1. :func:`plan_recipe` (nothing loaded): the recipe's keys (:func:`~countdown_rl.training.recipe.check_recipe`),
   vLLM's mode, the launch's engine, the Hub settings, the output directory (claimed, never reused silently) and
   the checkpoint to resume from (:func:`countdown_rl.runs.reliability.prepare_run`).
2. :func:`run_recipe`: seed; load, validate, dedupe and split the data (:mod:`countdown_rl.data`); check the model
   source; every error so far is a one-line :class:`RecipeError`, before the model loads. Then the GGUF conversion
   (once), the tokenizer and model (:mod:`countdown_rl.models.loading`), :func:`train_grpo`, the final evaluation on
   the held-out rows, the model card, the Hub push, the adapter merge (``merge_adapter``) and the run's status.

``countdown-rl train`` is argv parsing over these two; the demos build the same three objects and call them.

:func:`train_grpo` takes a model, a tokenizer, a :class:`~countdown_rl.training.trainer.CountdownGRPOConfig`,
the task and its prepared datasets, and:

1. builds :class:`~countdown_rl.training.trainer.CountdownGRPOTrainer` with the task's reward functions (by recipe
   name);
2. writes the run record (``run_info.json``) on the main process, before any step, so an interrupted run is
   still described; it names the distributed engine that runs (:mod:`countdown_rl.runs.engine`);
3. trains, resuming from ``resume_from_checkpoint`` when given. With a ``plan`` from
   :func:`countdown_rl.runs.reliability.prepare_run` (``countdown-rl train``), checkpoints are atomic, signals save a
   checkpoint and stop, a non-finite step stops (or is skipped), and the record holds the recipe and the status;
4. saves the model (with ``use_peft``, the adapter), the tokenizer and ``trainer_state.json`` (the log history
   that ``countdown-rl report`` plots), unless training stopped early.

What comes after (final evaluation, card, Hub push, adapter merge) is :func:`run_recipe`'s.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from countdown_rl.runs.device import describe_precision
from countdown_rl.runs.engine import Engine, check_launch, describe_engine, same_engine
from countdown_rl.runs.memory import drop_import_tracebacks
from countdown_rl.runs.record import RunRecord, write_run_record

if TYPE_CHECKING:
    from countdown_rl.runs.reliability import RunPlan
    from countdown_rl.tasks.base import Task
    from countdown_rl.training.recipe import ScriptArguments
    from countdown_rl.training.trainer import CountdownGRPOConfig, CountdownGRPOTrainer

__all__ = ["RecipeError", "RecipePlan", "RecipeRun", "TrainedRun", "TrainerSetupError", "plan_recipe",
           "progress_callback", "run_recipe", "train_grpo"]
logger = logging.getLogger(__name__)


def progress_callback(every: int, prefix: str = " "):
    """A callback printing one short line per ``every`` steps (and per evaluation), ``<prefix> step k/N: ...``,
    instead of the Trainer's full log dicts, which run to dozens of keys per step under GRPO; each training line
    ends with the time left at the pace of the steps this run made so far (evaluations included). The line comes at
    the first logged step at or past each multiple of ``every``: the Trainer logs every ``logging_steps``, which need
    not divide ``every`` (150 SFT steps log every 7: a line only at multiples of 15 would print once, at 105)."""
    import time

    from transformers import TrainerCallback

    class ShortProgress(TrainerCallback):
        start: tuple[float, int] | None = None
        next_line = every  # the step at or past which the next training line prints

        def on_train_begin(self, args, state, control, **kwargs):
            self.start = (time.monotonic(), state.global_step)  # a resumed run starts counting at its step
            self.next_line = (state.global_step // every + 1) * every

        def time_left(self, step: int, total: int) -> str:
            if self.start is None or step <= self.start[1]:
                return ""
            pace = (time.monotonic() - self.start[0]) / (step - self.start[1])
            minutes = pace * (total - step) / 60
            return f", about {minutes:.0f} min left" if minutes >= 1 else ", under a minute left"

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not state.is_world_process_zero or not logs:
                return
            step, total = state.global_step, state.max_steps
            if "eval_accuracy" in logs:
                print(f"{prefix} step {step}/{total}: held-out accuracy {100 * logs['eval_accuracy']:.1f}% "
                      f"(greedy, in-training subset)", flush=True)
            elif "loss" in logs and (step >= self.next_line or step == total):
                self.next_line = (step // every + 1) * every
                left = self.time_left(step, total)
                if "reward" in logs:
                    print(f"{prefix} step {step}/{total}: reward {logs['reward']:.3f}, sampled correct "
                          f"{100 * logs.get('outcomes/correct', 0.0):.1f}%, mean length "
                          f"{logs.get('completions/mean_length', 0.0):.1f} tokens{left}", flush=True)
                else:
                    print(f"{prefix} step {step}/{total}: loss {logs['loss']:.3f}{left}", flush=True)

    return ShortProgress()


def _frees_import_frames(function):
    """``function``, then :func:`countdown_rl.runs.memory.drop_import_tracebacks`, however it ends.

    The trainer's first import (TRL's GRPO trainer, which imports vLLM) usually happens under :func:`train_grpo` and
    :func:`run_recipe`. vLLM keeps the ImportError it caught at import (``torchcodec``) as a module global, and its
    traceback's frames reach, through ``f_back``, every frame that was on the stack then: these two functions'
    frames, which keep their locals (the model, the trainer, hence its optimiser) for as long as that traceback
    lives. Dropping it when they return leaves the run to its caller: ``del run`` and ``gc.collect()`` free it
    (``tests/training/test_pipeline_release.py``)."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        finally:
            drop_import_tracebacks()

    return wrapper


class TrainerSetupError(ValueError):
    """The trainer could not be built from these settings (e.g. a LoRA target matching no layer): nothing ran."""


@dataclass
class TrainedRun:
    """What :func:`train_grpo` leaves: the trainer (its model is the trained one) and where training started."""

    trainer: CountdownGRPOTrainer
    resumed_from: str | None
    global_step: int
    stopped: int | None = None  # the exit code when training stopped early (interrupted, non-finite), else None

    @property
    def model(self):
        """The trained model, unwrapped from accelerate."""
        return self.trainer.accelerator.unwrap_model(self.trainer.model)


@_frees_import_frames
def train_grpo(
    model: Any,
    tokenizer: Any,
    args: CountdownGRPOConfig,
    train_dataset: Any,
    *,
    task: Task,
    record: RunRecord,
    reward_funcs: Sequence[str] | None = None,
    eval_dataset: Any = None,
    peft_config: Any = None,
    resume_from_checkpoint: str | None = None,
    callbacks: Sequence[Any] = (),
    quiet: bool = False,
    plan: RunPlan | None = None,
    non_finite: str = "stop",
    planned_engine: Engine | None = None,
) -> TrainedRun:
    """Train with GRPO / Dr.GRPO on ``task`` into ``args.output_dir`` (see the module docstring).

    ``model`` is a model object or a path TRL loads; ``reward_funcs`` are the task's reward names (default: the
    task's defaults); ``record`` is completed here (reduction, std normalisation, processes, resume point).
    ``quiet`` removes the Trainer's printing and progress-bar callbacks (callers that print their own lines).
    ``plan`` and ``non_finite`` switch on the reliability layer (module docstring, 3). ``planned_engine``
    (:func:`countdown_rl.runs.engine.check_launch`): the trainer's engine must be that one, or nothing trains.
    """
    from countdown_rl.runs.reliability import start_record
    from countdown_rl.training.reliability import reliable_trainer_class, run_training
    from countdown_rl.training.trainer import CountdownGRPOTrainer

    names = list(reward_funcs) if reward_funcs else list(task.default_reward_funcs)
    trainer_cls = CountdownGRPOTrainer if plan is None else reliable_trainer_class(CountdownGRPOTrainer)
    try:
        trainer = trainer_cls(
            model=model,
            reward_funcs=task.get_reward_funcs(names),
            args=args,
            train_dataset=train_dataset,
            eval_dataset=eval_dataset,
            processing_class=tokenizer,
            peft_config=peft_config,
            callbacks=list(callbacks) or None,
            task=task,
        )
    except ValueError as err:  # peft: lora_target_modules that match no layer
        raise TrainerSetupError(f"{getattr(model, 'name_or_path', model)}: {err}") from None
    except OSError as err:  # the Hub client, with push_to_hub: the repository cannot be created
        raise TrainerSetupError(f"hub_model_id {args.hub_model_id or args.output_dir}: {err}") from None
    if quiet:
        from transformers.trainer_callback import PrinterCallback, ProgressCallback

        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
    engine = describe_engine(trainer.accelerator)
    if planned_engine is not None and not same_engine(planned_engine, engine):  # a backstop for check_launch
        raise TrainerSetupError(f"the launch asked for {planned_engine.summary()}, but {engine.summary()} was "
                                "built: nothing was trained")
    if trainer.accelerator.is_main_process:
        logger.info("engine: %s", engine.summary())
        vllm_engine = trainer.vllm_engine  # the colocated vLLM engine's settings, None without one
        record = replace(
            record,
            engine=engine.to_dict(),
            task=task.name,
            algorithm=args.algorithm_label,
            max_completion_length=args.max_completion_length,
            budget_schedule=args.budget_schedule,
            reduction=args.reduction,
            loss_type=args.loss_type,
            std_normalization=args.std_normalization,
            use_peft=peft_config is not None,
            num_processes=trainer.accelerator.num_processes,
            resumed_from=resume_from_checkpoint,
            # what runs: the log-prob pass (prompt-once or plain, why), the rollouts (rewritten on a fallback), the
            # precision (device, autocast, weights; bf16 emulated on a CPU without bf16 kernels) and the colocated
            # vLLM engine's (its dtype, prefix caching, binding)
            extra={**record.extra, "log_prob_pass": trainer.log_prob_pass, "rollouts": trainer.rollouts,
                   "precision": describe_precision(trainer.accelerator, trainer.model),
                   **({"vllm_engine": vllm_engine} if vllm_engine else {})},
        )
        if plan is None:
            write_run_record(args.output_dir, record)
        else:  # + the recipe and the status; an overwritten run's files are cleared now that the model loaded
            start_record(args.output_dir, plan, record)
    if plan is None:
        trainer.train(resume_from_checkpoint=resume_from_checkpoint)
    else:
        stopped = run_training(trainer, resume_from_checkpoint, non_finite=non_finite)
        if stopped is not None:
            return TrainedRun(trainer, resume_from_checkpoint, trainer.state.global_step, stopped)
    # with use_peft: the adapter only. _internal_call: no "Model save" Hub commit here; the caller pushes once.
    trainer.save_model(args.output_dir, _internal_call=True)
    trainer.save_state()  # trainer_state.json (log history) in output_dir, for `countdown-rl report`
    if trainer.accelerator.is_main_process:
        tokenizer.save_pretrained(str(Path(args.output_dir)))
    return TrainedRun(trainer, resume_from_checkpoint, trainer.state.global_step)


class RecipeError(ValueError):
    """A recipe that cannot run as it is, found before the model loads or while the trainer is built (a bad data
    file or row, a model that cannot be found, a LoRA target matching no layer): one line, nothing trained."""


@dataclass
class RecipePlan:
    """What :func:`plan_recipe` settled before anything loads."""

    task: Task
    engine: Engine  # the distributed engine the launch asked for (countdown_rl.runs.engine)
    run: RunPlan  # the output directory claimed and the checkpoint to resume from


@dataclass
class RecipeRun:
    """What :func:`run_recipe` leaves: the trained run, the final evaluation (or None) and a failed push's line."""

    trained: TrainedRun
    final: Any = None
    push_error: str | None = None

    @property
    def trainer(self) -> CountdownGRPOTrainer:
        return self.trained.trainer

    @property
    def stopped(self) -> int | None:
        """The exit code when training stopped early (interrupted, non-finite), else None."""
        return self.trained.stopped


def plan_recipe(script_args: ScriptArguments, training_args: CountdownGRPOConfig, model_args: Any) -> RecipePlan:
    """Everything checked before anything loads (module docstring, 1); one-line ValueErrors."""
    from countdown_rl.runs.reliability import prepare_run
    from countdown_rl.training.recipe import check_recipe, check_vllm_mode

    task = check_recipe(script_args, training_args, model_args)
    check_vllm_mode(training_args)  # server mode needs CUDA (NCCL weight sync)
    # The engine the launch asked for, or a refusal (N processes that are not one job, DeepSpeed on a CPU).
    engine = check_launch(training_args.use_cpu)
    # Hub settings, the output directory (claimed by this job, never reused silently), the checkpoint to resume.
    return RecipePlan(task, engine, prepare_run(script_args, training_args, model_args))


@_frees_import_frames
def run_recipe(
    script_args: ScriptArguments,
    training_args: CountdownGRPOConfig,
    model_args: Any,
    planned: RecipePlan | None = None,
    *,
    record: RunRecord | None = None,
    final_evaluation: Callable[[TrainedRun, Any], Any] | None = None,
    callbacks: Sequence[Any] = (),
    quiet: bool = False,
) -> RecipeRun:
    """Run a recipe end to end (module docstring, 2) into ``training_args.output_dir``.

    ``planned``: :func:`plan_recipe`'s result (default: planned here). ``record``: the run record's description
    (default: the model as given, the dataset and its row counts). ``final_evaluation(trained, rows)`` replaces the
    trainer's greedy evaluation of the first ``final_eval_size`` held-out rows (``rows``; it runs before the model
    card, which shows what it wrote to ``<output_dir>/eval``). ``callbacks`` and ``quiet`` go to
    :func:`train_grpo`. Raises :class:`RecipeError` (one line) for what is found before training starts; the
    caller ends the process group and turns :attr:`RecipeRun.stopped` / ``push_error`` into exit codes.
    """
    from transformers import set_seed
    from trl import get_peft_config

    from countdown_rl.data.prepare import prepare_data
    from countdown_rl.models.loading import load_recipe_model, merge_saved_adapter
    from countdown_rl.models.source import check_model, resolve_model_source
    from countdown_rl.runs.hub import failed_push_message
    from countdown_rl.runs.record import set_status

    planned = planned or plan_recipe(script_args, training_args, model_args)
    task = planned.task
    set_seed(training_args.seed)
    logger.info("script %s", script_args)
    logger.info("model %s", model_args)
    try:  # missing columns, a bad row, no such file: one line naming the file (and row), before the model loads
        train_ds, test_ds, info = prepare_data(script_args, task)
        # a GGUF file or packaged model name, a model path that is no folder, or a Hub id while offline and not
        # cached (models.source): one line before loading
        check_model(model_args.model_name_or_path, "model_name_or_path")
    except (ValueError, FileNotFoundError, ConnectionError) as err:  # ConnectionError: a Hub id, offline
        raise RecipeError(str(err)) from None
    logger.info("dataset %s", info)
    source = resolve_model_source(model_args.model_name_or_path)  # a GGUF file: converted once, cached
    model_args.model_name_or_path = source.path
    if training_args.use_vllm and training_args.vllm_mode == "colocate":
        from countdown_rl.generation.vllm_sync import check_cpu_engine_model

        try:
            check_cpu_engine_model(source.path)  # vLLM's CPU kernels: their attention head sizes
        except ValueError as err:
            raise RecipeError(str(err)) from None
    check_config = None
    if training_args.generation_backend == "compiled":  # pad/EOS ids and the static cache, before the weights load
        from countdown_rl.generation.compiled import check_generation_lengths

        def check_config(tokenizer, config):
            try:
                check_generation_lengths(tokenizer, config, training_args.generation_prompt_buckets,
                                         training_args.max_completion_length)
            except ValueError as err:
                raise RecipeError(str(err)) from None
    model, tokenizer = load_recipe_model(model_args, trust_remote_code=training_args.trust_remote_code,
                                         check_config=check_config)
    eval_subset = test_ds.select(range(min(script_args.eval_subset_size, len(test_ds))))
    dataset = script_args.dataset_name or task.default_dataset
    if record is None:
        record = RunRecord(model=source.given, dataset=dataset, data=info.as_dict(), extra=source.record)
    try:
        trained = train_grpo(
            model,
            tokenizer,
            training_args,
            train_ds,
            task=task,
            record=record,
            reward_funcs=script_args.reward_funcs,
            eval_dataset=eval_subset if len(eval_subset) else None,
            peft_config=get_peft_config(model_args),
            resume_from_checkpoint=planned.run.checkpoint,
            callbacks=callbacks,
            quiet=quiet,
            plan=planned.run,
            non_finite=script_args.non_finite,
            planned_engine=planned.engine,
        )
    except TrainerSetupError as err:  # e.g. lora_target_modules that match no layer: one line, nothing written
        raise RecipeError(str(err)) from None
    trainer = trained.trainer
    if trained.stopped is not None:  # interrupted (checkpoint saved) or non-finite: one line said so
        return RecipeRun(trained)

    final = None
    final_size = len(test_ds) if script_args.final_eval_size is None else script_args.final_eval_size
    if final_size > 0:
        rows = test_ds.select(range(min(final_size, len(test_ds))))
        if final_evaluation is not None:
            final = final_evaluation(trained, rows)
        else:
            final = trainer.evaluate_task(rows, final=True)
            logger.info("final held-out accuracy %.2f%% on %d rows", 100 * final.accuracy, final.num_rows)
    trainer.create_model_card(dataset_name=record.dataset)
    push_error = None
    if training_args.push_to_hub:
        try:
            trainer.push_to_hub(dataset_name=record.dataset)
        except Exception as err:  # noqa: BLE001  (network, auth, quota): the run is on disk; say so, push later
            push_error = failed_push_message(training_args.output_dir, training_args.hub_model_id, err)
    # Last, from the saved adapter (under FSDP the trainer's weights are shards only a collective could gather).
    # The merged model stays local (<output_dir>/merged; checkpoints are not pushed).
    if script_args.merge_adapter and trainer.accelerator.is_main_process:
        merge_saved_adapter(training_args.output_dir, model_args.model_name_or_path, dtype=model_args.dtype,
                            revision=model_args.model_revision, trust_remote_code=training_args.trust_remote_code)
    if trainer.accelerator.is_main_process:
        set_status(training_args.output_dir, "finished", step=trainer.state.global_step, message=push_error)
    return RecipeRun(trained, final, push_error)
