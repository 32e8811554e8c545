"""One training pipeline for every caller: ``countdown-rl train``, the demo, the benchmarks, sweeps and curricula.

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

What comes after (final evaluation, card, Hub push, adapter merge) stays with the caller, which knows what it
wants of them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from countdown_rl.runs.engine import Engine, describe_engine, same_engine
from countdown_rl.runs.record import RunRecord, write_run_record

if TYPE_CHECKING:
    from countdown_rl.runs.reliability import RunPlan
    from countdown_rl.tasks.base import Task
    from countdown_rl.training.trainer import CountdownGRPOConfig, CountdownGRPOTrainer

__all__ = ["TrainedRun", "TrainerSetupError", "merge_saved_adapter", "progress_callback", "train_grpo"]
logger = logging.getLogger(__name__)


def progress_callback(every: int, prefix: str = " "):
    """A callback printing one short line per ``every`` steps (and per evaluation), ``<prefix> step k/N: ...``,
    instead of the Trainer's full log dicts, which run to dozens of keys per step under GRPO; each training line
    ends with the time left at the pace of the steps this run made so far (evaluations included)."""
    import time

    from transformers import TrainerCallback

    class ShortProgress(TrainerCallback):
        start: tuple[float, int] | None = None

        def on_train_begin(self, args, state, control, **kwargs):
            self.start = (time.monotonic(), state.global_step)  # a resumed run starts counting at its step

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
            elif "loss" in logs and (step % every == 0 or step == total):
                left = self.time_left(step, total)
                if "reward" in logs:
                    print(f"{prefix} step {step}/{total}: reward {logs['reward']:.3f}, sampled correct "
                          f"{100 * logs.get('outcomes/correct', 0.0):.1f}%, mean length "
                          f"{logs.get('completions/mean_length', 0.0):.1f} tokens{left}", flush=True)
                else:
                    print(f"{prefix} step {step}/{total}: loss {logs['loss']:.3f}{left}", flush=True)

    return ShortProgress()


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
        record = replace(
            record,
            engine=engine.to_dict(),
            task=task.name,
            algorithm=args.algorithm,
            max_completion_length=args.max_completion_length,
            budget_schedule=args.budget_schedule,
            reduction=args.reduction,
            std_normalization=args.std_normalization,
            use_peft=peft_config is not None,
            num_processes=trainer.accelerator.num_processes,
            resumed_from=resume_from_checkpoint,
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


def merge_saved_adapter(output_dir: str, base_model: str, **load_kwargs: Any) -> Path:
    """Fold the LoRA adapter saved in ``output_dir`` into a fresh copy of ``base_model`` and save the full model and
    the tokenizer to ``<output_dir>/merged`` (one process; the trainer's own model, sharded or not, is untouched).
    ``load_kwargs`` go to ``from_pretrained`` (dtype, revision, trust_remote_code)."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = AutoModelForCausalLM.from_pretrained(base_model, **load_kwargs)
    merged = PeftModel.from_pretrained(base, output_dir).merge_and_unload()
    target = Path(output_dir) / "merged"
    merged.save_pretrained(target)
    AutoTokenizer.from_pretrained(output_dir).save_pretrained(target)
    return target
