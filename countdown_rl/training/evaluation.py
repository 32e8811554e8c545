"""The trainer's held-out evaluation: greedy scoring by the task at the current budget, on every process.

1. Each process takes a contiguous shard of the dataset (:func:`countdown_rl.evaluation.sharding.padded_shard`;
   under sharded weights, FSDP or DeepSpeed ZeRO-3, padded to one length so every rank runs the same batches).
2. It generates with the trainer's backend: the colocated vLLM engine with ``use_vllm`` (colocate mode, one engine
   per process, synced to the current weights first, as TRL's rollouts sync), the rollout generator in training's
   generation context (the same compiled graph) where it runs, else transformers. Under sharded weights every
   forward is a collective: TRL's ``unwrap_model_for_generation`` gathers ZeRO-3's weights and transformers keeps
   finished ranks stepping (``synced_gpus``).
3. The results are gathered once, in row order; with ``final=True`` they go to ``<output_dir>/eval``.

The trainer's ``evaluate`` logs its metrics (``eval_accuracy``, ...); with ``trl_eval_metrics`` it runs TRL's
evaluation too (``eval_loss``, ``eval_reward``, ...) and logs both as one evaluation. It reads TRL's private state
(``_last_loaded_step``), so it lives in :mod:`countdown_rl.training`.
"""

from __future__ import annotations

import contextlib
import os

from countdown_rl.evaluation.sharding import padded_shard
from countdown_rl.runs.record import FINAL_EVAL_DIR
from countdown_rl.training.rollouts import awake_engine, trainer_generation_context

__all__ = ["evaluate_task"]


def evaluate_task(trainer, dataset, final: bool = False):
    """Score ``dataset`` greedily at ``trainer``'s current budget (module docstring); a ``BudgetResult``.

    With ``final=True`` the results also go to ``<output_dir>/eval`` (eval.json, eval.md, samples.jsonl).
    """
    from accelerate.utils import gather_object
    from trl.models import unwrap_model_for_generation

    from countdown_rl.evaluation.eval_files import eval_meta, write_eval_outputs
    from countdown_rl.evaluation.scoring import evaluate_rows, summarise

    if trainer.task is None:
        raise ValueError("evaluate_task needs the trainer's task (CountdownGRPOTrainer(..., task=get_task(name)))")
    args, accelerator = trainer.args, trainer.accelerator
    budget = args.completion_budget(trainer.state.global_step)
    sharded = trainer.is_fsdp_enabled or (trainer.is_deepspeed_enabled
                                          and accelerator.state.deepspeed_plugin.zero_stage == 3)
    rows, padding = padded_shard(dataset, accelerator.num_processes, accelerator.process_index, pad=sharded)
    generator = trainer.rollout_generator
    generator = generator if generator is not None and generator.active and not sharded else None
    vllm = trainer.use_vllm and args.vllm_mode == "colocate" and args.vllm_tensor_parallel_size == 1
    if vllm and trainer.state.global_step != trainer._last_loaded_step:  # TRL's rollouts sync the same way
        trainer.vllm_generation.sync_weights()
        trainer._last_loaded_step = trainer.state.global_step
    backend = "vllm" if vllm else args.generation_backend if generator else "transformers"
    # A rollout generator: generate in training's context (same hooks, so the same compiled graph).
    with (trainer_generation_context(trainer) if generator else contextlib.nullcontext(),
          awake_engine(trainer.vllm_generation) if vllm else contextlib.nullcontext() as engine,
          unwrap_model_for_generation(trainer.model_wrapped, accelerator,
                                      gather_deepspeed3_params=args.ds3_gather_for_generation) as model):
        _, samples = evaluate_rows(
            model if engine is None else engine,
            trainer.processing_class,
            rows,
            max_tokens=budget,
            task=trainer.task,
            batch_size=args.per_device_eval_batch_size,
            chat_template_kwargs=trainer.chat_template_kwargs,
            show_progress=final,
            backend=backend,
            compiled=generator,
        )
    samples = gather_object(samples[:len(samples) - padding])
    result = summarise(samples, max_tokens=budget, num_samples=1)
    if final and accelerator.is_main_process:
        meta = eval_meta(task=trainer.task.name, model=args.output_dir, num_rows=len(dataset),
                         backend=backend, stage="final")
        write_eval_outputs(os.path.join(args.output_dir, FINAL_EVAL_DIR), [result], {budget: samples}, meta)
    return result


def refuse_missing_best_metric(name: str | None, set_names: list[str | None], trl_eval_metrics: bool) -> None:
    """Refuse a ``metric_for_best_model`` that an evaluation by the task (of the sets ``set_names``, ``None`` for a
    lone set) will not compute, unless TRL's evaluation runs beside it. Transformers would otherwise fail at the
    first evaluation, after training steps.

    >>> refuse_missing_best_metric("accuracy", [None], trl_eval_metrics=False)  # eval_accuracy: computed
    >>> refuse_missing_best_metric("eval_reward", [None], trl_eval_metrics=True)  # TRL's evaluation runs too
    """
    if name is None or trl_eval_metrics:
        return
    from countdown_rl.evaluation.scoring import outcome_metrics, summarise

    keys = outcome_metrics(summarise([{"outcome": "failed", "num_tokens": 1, "truncated": False,
                                       "sample_index": 0}], 1))
    computed = [f"eval_{'' if set_name is None else set_name + '_'}{key}" for set_name in set_names for key in keys]
    wanted = name if name.startswith("eval_") else f"eval_{name}"
    if wanted not in computed:
        default = " (load_best_model_at_end's default)" if name == "loss" else ""
        raise ValueError(f"metric_for_best_model={name!r}{default}: the task's evaluation computes "
                         f"{', '.join(computed)}, not {wanted}; name one of those, or set trl_eval_metrics: true to "
                         "run TRL's evaluation (eval_loss, eval_reward, ...) beside it")
