"""What ``countdown-rl train`` (and the demo) do around ``trainer.train()`` for long jobs.

1. :func:`prepare_run` (before anything is loaded): the budgets, the Hub settings (:mod:`countdown_rl.runs.hub`),
   then :func:`plan_run` (the demo's entry too): the output directory (:mod:`countdown_rl.runs.guard`: claimed
   by one job, never reused silently; a resume must match the saved recipe) and the checkpoint to resume from
   (the newest complete one, :mod:`countdown_rl.runs.checkpoints`). Errors are ``ValueError`` with one line.
2. :func:`start_record`: the run record with the recipe and the status ``running``, once the model loaded.

The trainer's side (atomic checkpoints and the non-finite guard on the trainer class, training under the signal
handlers) is :mod:`countdown_rl.training.reliability`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from countdown_rl.runs.checkpoints import checkpoint_problem, last_complete_checkpoint
from countdown_rl.runs.engine import launch_rank
from countdown_rl.runs.guard import (
    check_output_dir,
    claim_output_dir,
    clear_previous_run,
    confirm_claim,
    effective_recipe,
    release_output_dir,
)
from countdown_rl.runs.non_finite import NON_FINITE
from countdown_rl.runs.record import RunRecord, write_run_record


@dataclass
class ReliabilityArguments:
    """How a run treats its output directory and non-finite steps (recipe keys; base of the script arguments)."""

    resume: bool = field(
        default=False,
        metadata={"help": "Continue the run in output_dir from its newest complete checkpoint (its recipe must "
                  "match, except keys that may change on resume); with no checkpoint yet, start it. Safe to repeat "
                  "on a requeued job."},
    )
    overwrite_output_dir: bool = field(
        default=False,
        metadata={"help": "Start afresh in an output_dir that holds another run: its checkpoints are removed when "
                  "training starts, its other files are overwritten."},
    )
    non_finite: str = field(
        default="stop",
        metadata={"help": "A NaN or infinite loss or gradient norm: 'stop' the run at that step (the weights are "
                  "not updated, the last good checkpoint is kept) or 'skip' the update and go on (counted in the "
                  "logs as non_finite_skipped).", "choices": list(NON_FINITE)},
    )


@dataclass
class RunPlan:
    """What :func:`prepare_run` decided: the checkpoint to resume from, the recipe to record, whether to clear."""

    checkpoint: str | None
    recipe: dict[str, Any]
    overwrite: bool


def resolve_resume(resume: bool, resume_from_checkpoint: Any, output_dir: str) -> str | None:
    """The checkpoint to start from. ``resume: true``: the newest complete one, or None (start); TRL's
    ``resume_from_checkpoint``: ``true`` -> the newest complete one (an error if none), a path -> that path,
    which must be complete."""
    if resume_from_checkpoint in (None, False, "false", "False", ""):
        if not resume:
            return None
        last = last_complete_checkpoint(output_dir)
        return None if last is None else str(last)
    if resume_from_checkpoint in (True, "true", "True"):
        last = last_complete_checkpoint(output_dir)
        if last is None:
            raise ValueError(f"resume_from_checkpoint: no complete checkpoint-* folder in {output_dir}")
        return str(last)
    if not Path(resume_from_checkpoint).is_dir():
        raise ValueError(f"resume_from_checkpoint: {resume_from_checkpoint} is not a folder")
    problem = checkpoint_problem(resume_from_checkpoint)
    if problem:
        raise ValueError(f"resume_from_checkpoint: {resume_from_checkpoint} is incomplete ({problem})")
    return str(resume_from_checkpoint)


# (key, the least it may be) for counts that zero or a negative number would turn into a crash deep in training
POSITIVE_KEYS = (("per_device_train_batch_size", 1), ("gradient_accumulation_steps", 1), ("num_generations", 1),
                 ("per_device_eval_batch_size", 1), ("eval_subset_size", 0), ("final_eval_size", 0),
                 ("learning_rate", 0))


def check_budgets(script_args, training_args) -> None:
    """Zero or negative budgets and counts, one line each (``max_steps: -1`` is TRL's "use num_train_epochs")."""
    for key, least in POSITIVE_KEYS:
        args = script_args if hasattr(script_args, key) else training_args
        value = getattr(args, key, None)
        if value is not None and value < least:
            raise ValueError(f"{key}: must be {'positive' if least else '>= 0'}, got {value}")
    if training_args.max_steps == 0 or training_args.max_steps < -1:
        raise ValueError(f"max_steps: must be positive (or -1: train num_train_epochs), got {training_args.max_steps}")
    if training_args.max_steps == -1 and training_args.num_train_epochs <= 0:
        raise ValueError(f"num_train_epochs: must be positive with max_steps -1, got {training_args.num_train_epochs}")
    for key, strategy in (("save_steps", "save_strategy"), ("logging_steps", "logging_strategy"),
                          ("eval_steps", "eval_strategy")):
        value = getattr(training_args, key)
        if str(getattr(training_args, strategy)).endswith("steps") and value is not None and value <= 0:
            raise ValueError(f"{key}: must be positive with {strategy}: steps, got {value}")


def prepare_run(script_args, training_args, model_args) -> RunPlan:
    """Checks before loading (module docstring, 1); nothing is written or deleted here."""
    from countdown_rl.runs.hub import check_hub_settings

    check_budgets(script_args, training_args)
    check_hub_settings(push_to_hub=training_args.push_to_hub, hub_model_id=training_args.hub_model_id,
                       output_dir=training_args.output_dir, token=training_args.hub_token, key_style="recipe")
    return plan_run(training_args.output_dir, effective_recipe(script_args, training_args, model_args),
                    resume=script_args.resume, overwrite=script_args.overwrite_output_dir,
                    resume_from_checkpoint=training_args.resume_from_checkpoint)


def plan_run(output_dir: str, recipe: dict[str, Any], *, resume: bool, overwrite: bool,
             resume_from_checkpoint: Any = None) -> RunPlan:
    """The output-directory guard, then the checkpoint to start from (``countdown-rl train`` and the demo alike).

    >>> import tempfile; plan_run(tempfile.mkdtemp(), {"seed": 0}, resume=True, overwrite=False).checkpoint is None
    True
    """
    # The job's main process claims the folder first, so two jobs starting together cannot both pass the checks.
    main = launch_rank() == 0
    if main:
        claim_output_dir(output_dir)
    try:
        check_output_dir(output_dir, recipe, resume=resume, overwrite=overwrite,
                         resume_from_checkpoint=resume_from_checkpoint)
        checkpoint = None if overwrite else resolve_resume(resume, resume_from_checkpoint, output_dir)
    except ValueError:  # refused: the folder is left as it was found
        release_output_dir(output_dir, refused=True)
        raise
    if main:
        confirm_claim(output_dir)
    return RunPlan(checkpoint, recipe, overwrite=overwrite)


def start_record(output_dir: str, plan: RunPlan, record: RunRecord) -> None:
    """Main process, after the model loaded: clear an overwritten run, then write the record with the recipe and
    the status ``running`` (at the step resumed from)."""
    if plan.overwrite:
        clear_previous_run(output_dir)
    step = None
    if plan.checkpoint:
        step = int(Path(plan.checkpoint).name.rsplit("-", 1)[-1]) if "-" in Path(plan.checkpoint).name else None
    write_run_record(output_dir, replace(record, recipe=plan.recipe,
                                         status={"state": "running", "step": step, "message": None}))
