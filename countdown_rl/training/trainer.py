"""``CountdownGRPOTrainer``: TRL's GRPOTrainer with our advantage and loss-reduction maths.

TRL runs the loop (generation, vLLM, reference model, accumulation, logging, checkpoints). We replace two pieces:

1. Advantages: ``_calculate_rewards`` (TRL's, gathered across processes) is captured; after TRL's
   ``_generate_and_score_completions`` we recompute the advantages with ``grpo.group_advantages`` and keep this
   process's slice. The task's outcome metrics (``outcomes/correct`` ...) and advantage metrics are logged.
2. Loss: ``_compute_loss`` is re-implemented compactly on ``grpo.compute_loss`` + ``grpo.reduce_loss``, keeping
   TRL's k3 KL (with its bias-correction factor), the vLLM importance-sampling ratio, tool masks, MoE aux loss,
   division by the accumulation steps, and the entropy / KL / clip-ratio logs. With ``skip_zero_advantage`` only
   the completions with a non-zero advantage go through the model; zeros stand in for the others' loss in the
   reduction, so the update is the whole batch's.

3. Generation (``generation_backend: compiled`` only): ``_generate_single_turn`` generates through
   ``countdown_rl.generation.compiled`` (static cache, compiled decoding, bucketed prompts); a callback warms the
   compiled graph up at ``on_train_begin``, so its compile time is logged once and kept out of step 1.
4. Budget (``budget_schedule``, :mod:`countdown_rl.algorithms.curriculum`): before each rollout the budget of the
   current optimizer step is set where TRL reads it (its generation config, the vLLM client's ``max_completion_length``,
   ``self.max_completion_length``); the rollout carries its budget (a reward keyword argument and a per-row list
   in the buffered batch), so a reused rollout keeps its budget for the Dr.GRPO normaliser and the
   ``completion_budget`` metric. The in-training evaluation uses the budget of the current step.

These hooks are private in TRL, so trl is pinned exactly and ``tests/test_trl_pin.py`` plus the parity tests
against stock TRL trip on any change. The task (``task=``, any :class:`countdown_rl.tasks.base.Task`) only judges
completions for metrics and the held-out evaluation; the rewards are TRL's reward functions as usual.
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass, field

import torch
from trl import GRPOConfig, GRPOTrainer

from countdown_rl.algorithms import grpo as grpo
from countdown_rl.algorithms.curriculum import BUDGET_COLUMN, budget_at, parse_budget_schedule, shuffle_for_order
from countdown_rl.algorithms.presets import ALGORITHMS
from countdown_rl.generation.compiled import (
    WarmUpCallback,
    build_for_trainer,
    generate_for_trainer,
    reconcile_backend_keys,
    trainer_generation_context,
)
from countdown_rl.generation.sampling import BACKENDS
from countdown_rl.generation.vllm_sync import awake_engine, use_cpu_weight_sync
from countdown_rl.runs.engine import enable_fsdp2_on_cpu
from countdown_rl.runs.record import FINAL_EVAL_DIR, RunRecord
from countdown_rl.tasks import Outcome

logger = logging.getLogger(__name__)

# the rows of a rollout batch that skip_zero_advantage selects from (the ones _compute_loss reads)
PER_COMPLETION_KEYS = frozenset({"prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "tool_mask",
                                 "advantages", "old_per_token_logps", "ref_per_token_logps",
                                 "importance_sampling_ratio"})

# our reduction -> the TRL loss_type that reduces the same way (hybrid has none; TRL's value is then unused)
REDUCTION_TO_LOSS_TYPE = {
    "masked_mean": "grpo",
    "masked_mean_drgrpo": "dr_grpo",
    "token_mean": "bnpo",
    "hybrid": "grpo",
}
# TRL options whose code paths our _compute_loss does not reproduce: (key, value that is supported)
UNSUPPORTED_TRL_OPTIONS = {
    "importance_sampling_level": "token",
    "delta": None,
    "top_entropy_quantile": 1.0,
    "off_policy_mask_threshold": None,
    "entropy_coef": 0.0,
    "use_adaptive_entropy": False,
    "multi_objective_aggregation": "sum_then_normalize",
}


@dataclass
class CountdownGRPOConfig(GRPOConfig):
    """GRPOConfig plus the GRPO / Dr.GRPO knobs of countdown-rl.

    ``algorithm`` is a preset; ``reduction`` and ``std_normalization`` override it. TRL's ``loss_type`` and
    ``scale_rewards`` are derived from them; set explicitly they must agree, or ``__post_init__`` says which keys
    clash.

    >>> cfg = CountdownGRPOConfig(output_dir="/tmp/x", algorithm="dr_grpo", use_cpu=True, report_to="none")
    >>> cfg.reduction, cfg.std_normalization, cfg.loss_type, cfg.scale_rewards
    ('masked_mean_drgrpo', 'none', 'dr_grpo', 'none')
    """

    algorithm: str = field(
        default="grpo",
        metadata={
            "help": "Preset: 'grpo' (std-normalised advantages, per-sequence masked_mean) or 'dr_grpo' "
            "(mean-only advantages, constant-normalised sum).",
            "choices": list(ALGORITHMS),
        },
    )
    reduction: str | None = field(
        default=None,
        metadata={
            "help": "Loss reduction: 'masked_mean', 'masked_mean_drgrpo', 'token_mean' or 'hybrid'. "
            "Default: the algorithm's.",
            "choices": [*grpo.REDUCTIONS, None],
        },
    )
    drgrpo_num_tokens: int | None = field(
        default=None,
        metadata={"help": "Dr.GRPO's constant normaliser (tokens per sequence). Default: the rollout's completion "
                  "budget, i.e. max_completion_length, or with budget_schedule the budget the rollout was generated "
                  "with (a full-budget sequence then weighs as much at every stage); set it to keep one constant "
                  "for the whole run."},
    )
    hybrid_alpha: float | None = field(
        default=None,
        metadata={
            "help": "Weight of the Dr.GRPO term in the 'hybrid' reduction: alpha * drgrpo + (1 - alpha) * "
            "masked_mean. Required with reduction='hybrid'."
        },
    )
    baseline: str = field(
        default="group_mean",
        metadata={
            "help": "Advantage baseline: 'group_mean' (GRPO) or 'none' (plain REINFORCE on raw rewards).",
            "choices": list(grpo.BASELINES),
        },
    )
    std_normalization: str | None = field(
        default=None,
        metadata={
            "help": "Divide advantages by the reward std of the 'group', of the whole 'batch', or 'none'. "
            "Default: the algorithm's.",
            "choices": [*grpo.STD_NORMALIZATIONS, None],
        },
    )
    advantage_eps: float = field(
        default=1e-4,
        metadata={"help": "Added to the std before dividing (1e-4 is the value TRL hard-codes)."},
    )
    skip_zero_advantage: bool = field(
        default=False,
        metadata={"help": "Leave the completions whose advantage is exactly 0 (every sample of their group scored "
                  "alike) out of the loss's forward and backward. With beta 0 they add nothing to the gradient, so "
                  "the update is the same (they still count in the reduction's denominators) and the training "
                  "step is cheaper by their share. The entropy and clip-ratio logs (and a MoE router's auxiliary "
                  "loss) then cover the trained completions only; `skipped_completions` logs the share skipped. "
                  "Needs beta 0: the KL term gives every completion a gradient."},
    )
    loss_type: str | None = field(
        default=None,
        metadata={"help": "TRL's loss type. Leave unset: it is derived from `reduction`; a clash is an error."},
    )
    scale_rewards: str | None = field(
        default=None,
        metadata={
            "help": "TRL's reward scaling. Leave unset: it is derived from `std_normalization`; a clash is an "
            "error."
        },
    )

    generation_backend: str | None = field(
        default=None,
        metadata={
            "help": "'transformers' (TRL's plain generate), 'compiled' (static cache sized once + torch.compile'd "
            "decoding, prompts padded to buckets; falls back to plain generate where torch.compile cannot run) or "
            "'vllm' (the same as use_vllm: true). Default: 'vllm' when use_vllm is set, else 'transformers'. "
            "Setting both keys is fine when they agree; a clash is an error.",
            "choices": [*BACKENDS, None],
        },
    )
    generation_prompt_buckets: list[int] | None = field(
        default=None,
        metadata={
            "help": "generation_backend 'compiled': prompt lengths (tokens) prompts are left-padded up to; the "
            "static cache holds the largest + max_completion_length. Default: the longest of a sample of the "
            "training and evaluation prompts, rounded up to a multiple of 64."
        },
    )

    budget_schedule: list[list[int]] | None = field(
        default=None,
        metadata={"help": "Completion-budget curriculum: [[start_step, budget], ...] (YAML [[0, 256], [40, 512], "
                  "[60, 1024]]; command line 0:256 40:512 60:1024, or the YAML list quoted): from optimizer step "
                  "start_step on, rollouts are generated with that budget (every backend), length-aware rewards, "
                  "the Dr.GRPO normaliser and the in-training evaluation follow it. Starts at step 0, steps strictly "
                  "increase, the largest budget equals max_completion_length. Default: max_completion_length "
                  "throughout."},
    )
    shuffle_dataset: bool | None = field(
        default=None,
        metadata={"help": "TRL's per-epoch shuffle of the training rows. Default: true, or false when the recipe's "
                  "data_order is not 'random' (true with such an order is an error)."},
    )

    def __post_init__(self):
        reconcile_backend_keys(self)  # generation_backend vs use_vllm / continuous batching / buckets
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {sorted(ALGORITHMS)}, got {self.algorithm!r}")
        preset = ALGORITHMS[self.algorithm]
        preset_reduction, preset_std = preset.reduction, preset.std_normalization
        self.reduction = self.reduction or preset_reduction
        self.std_normalization = self.std_normalization or preset_std
        if self.reduction not in grpo.REDUCTIONS:
            raise ValueError(f"reduction must be one of {list(grpo.REDUCTIONS)}, got {self.reduction!r}")
        if self.std_normalization not in grpo.STD_NORMALIZATIONS:
            raise ValueError(
                f"std_normalization must be one of {list(grpo.STD_NORMALIZATIONS)}, got {self.std_normalization!r}"
            )
        if self.baseline not in grpo.BASELINES:
            raise ValueError(f"baseline must be one of {list(grpo.BASELINES)}, got {self.baseline!r}")
        if self.reduction == "hybrid":
            if self.hybrid_alpha is None or not 0.0 <= self.hybrid_alpha <= 1.0:
                raise ValueError(f"reduction 'hybrid' needs hybrid_alpha in [0, 1], got {self.hybrid_alpha}")
        elif self.hybrid_alpha is not None:
            raise ValueError(f"hybrid_alpha is set but reduction is {self.reduction!r}, not 'hybrid'")
        if self.drgrpo_num_tokens is not None and self.drgrpo_num_tokens <= 0:
            raise ValueError(f"drgrpo_num_tokens must be positive, got {self.drgrpo_num_tokens}")
        if self.advantage_eps < 0:
            raise ValueError(f"advantage_eps must be >= 0, got {self.advantage_eps}")
        if self.skip_zero_advantage and self.beta != 0.0:
            raise ValueError(f"skip_zero_advantage needs beta 0 (got beta={self.beta}): the KL term gives the "
                             "zero-advantage completions a gradient too")
        if self.budget_schedule is not None:
            self.budget_schedule = parse_budget_schedule(self.budget_schedule, self.max_completion_length)
            fixed = sorted({"max_new_tokens", "max_tokens"} & set(self.generation_kwargs or {}))
            if fixed:
                raise ValueError(f"budget_schedule: generation_kwargs sets {fixed[0]}, which would fix the budget; "
                                 "remove it")
        self._shuffle_dataset_given = self.shuffle_dataset is not None
        if self.shuffle_dataset is None:
            self.shuffle_dataset = True

        derived_loss_type = REDUCTION_TO_LOSS_TYPE[self.reduction]
        if self.loss_type is not None and self.loss_type != derived_loss_type:
            raise ValueError(
                f"loss_type={self.loss_type!r} clashes with reduction={self.reduction!r} "
                f"(algorithm={self.algorithm!r}), which TRL calls loss_type={derived_loss_type!r}; "
                "leave loss_type unset, or set algorithm/reduction instead"
            )
        self.loss_type = derived_loss_type
        scale = {True: "group", False: "none"}.get(self.scale_rewards, self.scale_rewards)
        if scale is not None and scale != self.std_normalization:
            raise ValueError(
                f"scale_rewards={self.scale_rewards!r} clashes with std_normalization={self.std_normalization!r} "
                f"(algorithm={self.algorithm!r}); leave scale_rewards unset, or set std_normalization instead"
            )
        self.scale_rewards = self.std_normalization
        for key, supported in UNSUPPORTED_TRL_OPTIONS.items():
            if getattr(self, key) != supported:
                raise ValueError(
                    f"{key}={getattr(self, key)!r} is not supported by CountdownGRPOTrainer (only {supported!r}); "
                    "use trl.GRPOTrainer for that feature"
                )
        super().__post_init__()

    def apply_data_order(self, data_order: str) -> None:
        """Set ``shuffle_dataset`` for the recipe's ``data_order`` (an explicit ``true`` with a fixed order raises).

        >>> cfg = CountdownGRPOConfig(output_dir="/tmp/x", use_cpu=True, report_to="none")
        >>> cfg.apply_data_order("easy_to_hard"); cfg.shuffle_dataset
        False
        """
        given = self.shuffle_dataset if getattr(self, "_shuffle_dataset_given", True) else None
        self.shuffle_dataset = shuffle_for_order(data_order, given)

    def completion_budget(self, step: int) -> int:
        """The completion budget at optimizer step ``step``: the schedule's, else ``max_completion_length``.

        >>> CountdownGRPOConfig(output_dir="/tmp/x", use_cpu=True, report_to="none", max_completion_length=64,
        ...                     budget_schedule=[[0, 32], [10, 64]]).completion_budget(9)
        32
        """
        return self.max_completion_length if self.budget_schedule is None else budget_at(self.budget_schedule, step)


def padded_shard(dataset, num_shards: int, index: int, *, pad: bool) -> tuple[list, int]:
    """Shard ``index`` of ``num_shards`` contiguous shards of ``dataset`` (rows in order, every row in one shard),
    and how many copies of the first row were added to make it as long as the longest shard (``pad``: for
    sharded weights, where every rank must run the same generation steps). Drop that many results after.

    >>> padded_shard(list(range(5)), 2, 1, pad=True)
    ([3, 4, 0], 1)
    >>> padded_shard(list(range(5)), 2, 1, pad=False)
    ([3, 4], 0)
    """
    size, extra = divmod(len(dataset), num_shards)
    start = index * size + min(index, extra)
    rows = [dataset[i] for i in range(start, start + size + (index < extra))]
    padding = size + (extra > 0) - len(rows) if pad else 0
    return rows + [dataset[0]] * padding if padding else rows, padding


class CountdownGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose advantages and loss reduction come from ``countdown_rl.algorithms.grpo`` (see module docstring).

    ``task`` (optional) judges completions: outcome metrics during training and the greedy held-out evaluation.
    """

    def __init__(self, *args, task=None, **kwargs):
        super().__init__(*args, **kwargs)
        if not isinstance(self.args, CountdownGRPOConfig):
            raise TypeError(f"CountdownGRPOTrainer needs a CountdownGRPOConfig, got {type(self.args).__name__}")
        self.task = task
        self._gathered_rewards_per_func: torch.Tensor | None = None
        self._compiled_generation = None
        if self.args.generation_backend == "compiled":
            self._compiled_generation = build_for_trainer(self)
            self.add_callback(WarmUpCallback(self))
        if self.use_vllm:  # vLLM's CPU backend needs its own weight sync (generation.vllm_sync); said once
            logger.info("vLLM weight sync: %s", use_cpu_weight_sync(self.vllm_generation))

    def create_accelerator_and_postprocess(self):
        # accelerate builds DDP for a multi-process CPU launch whatever it asked for; FSDP2 runs there (runs.engine)
        _ = self.args.device  # set up once here: transformers resets accelerate's state then, so not after the mark
        super().create_accelerator_and_postprocess()
        if enable_fsdp2_on_cpu(self.accelerator, self.args.use_cpu):
            self.is_fsdp_enabled = True  # what transformers derives from the state's plugin, before any prepare()
            if self.accelerator.state.fsdp_plugin.activation_checkpointing and self.args.gradient_checkpointing:
                raise ValueError("fsdp_activation_checkpointing and gradient_checkpointing: choose one")

    def _load_optimizer_and_scheduler(self, checkpoint):
        # transformers 5.17 loads optimizer.pt with map_location=args.device when world_size > 1: "cpu:N" in a
        # multi-process CPU job, a location torch.load cannot restore to. Plain "cpu" is the same memory.
        device = self.args.device
        if checkpoint is None or device.type != "cpu" or device.index is None:
            return super()._load_optimizer_and_scheduler(checkpoint)
        self.args.__dict__["_setup_devices"] = torch.device("cpu")  # the cached_property behind args.device
        try:
            return super()._load_optimizer_and_scheduler(checkpoint)
        finally:
            self.args.__dict__["_setup_devices"] = device

    # -- generation (generation_backend: compiled) ----------------------------------------------------------
    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        gen = self._compiled_generation
        if gen is None or not gen.active or images is not None or multimodal_fields:
            return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                                 has_tool_images)
        completion_ids = generate_for_trainer(self, prompt_ids)
        if completion_ids is None:  # torch.compile could not run here: warned once, plain generate from now on
            return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                                 has_tool_images)
        return completion_ids, None

    # -- advantages -------------------------------------------------------------------------------------------
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._gathered_rewards_per_func = rewards_per_func
        self._log_outcomes(inputs, completions, completion_ids_list)
        return rewards_per_func

    # -- budget ---------------------------------------------------------------------------------------------
    def _set_completion_budget(self, budget: int) -> None:
        """Generate the next rollouts with ``budget`` tokens at most, on every backend (where TRL reads it)."""
        self.max_completion_length = budget  # TRL's tool loop; our evaluation reads the args' schedule
        if getattr(self, "generation_config", None) is not None:  # transformers (plain, paged) and compiled
            self.generation_config.max_new_tokens = budget
            self.generation_kwargs["max_new_tokens"] = budget
        if self.use_vllm:  # read per call into SamplingParams(max_tokens=...); the context is sized at start-up
            self.vllm_generation.max_completion_length = budget

    def _generate_and_score_completions(self, inputs):
        budget = self.args.completion_budget(self.state.global_step)
        self._set_completion_budget(budget)
        if self.environment_factories is None:  # an environment's reset() gets the rows: leave them as they are
            inputs = [{**example, BUDGET_COLUMN: budget} for example in inputs]  # reward functions see the budget
        output = super()._generate_and_score_completions(inputs)
        output[BUDGET_COLUMN] = [budget] * len(inputs)  # a per-row list: split and shuffled with the rollout
        mode = "train" if self.model.training else "eval"
        rewards_per_func = self._gathered_rewards_per_func
        weights = self.reward_weights.to(rewards_per_func.device).unsqueeze(0)
        rewards = (rewards_per_func * weights).nansum(dim=1)
        rewards[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan  # unscorable: out of the baseline
        args = self.args
        advantages, stats = grpo.group_advantages(
            rewards,
            self.num_generations if mode == "train" else self.num_generations_eval,
            baseline=args.baseline,
            std_normalization=args.std_normalization,
            advantage_eps=args.advantage_eps,
        )
        local = len(inputs)
        rank = self.accelerator.process_index
        output["advantages"] = advantages[rank * local : (rank + 1) * local].to(output["advantages"].device)

        # TRL logged its own advantages for the completions table: show ours instead.
        for _ in range(min(advantages.numel(), len(self._logs["advantages"]))):
            self._logs["advantages"].pop()
        self._logs["advantages"].extend(advantages.tolist())
        for name, value in stats.items():
            self._metrics[mode][f"advantages/{name}"].append(value)
        return output

    def _has_task_columns(self, columns) -> bool:
        return self.task is not None and set(self.task.columns) <= set(columns)

    def _log_outcomes(self, inputs, completions, completion_ids_list) -> None:
        """Correct / partial / failed fractions and the mean length of correct vs incorrect completions."""
        if not inputs or not self._has_task_columns(inputs[0]):
            return
        from countdown_rl.tasks.base import completion_text

        # correct, partial, failed, tokens of correct, tokens of incorrect: counted in Python, one tensor to gather
        counts = [0, 0, 0, 0, 0]
        for example, completion, ids in zip(inputs, completions, completion_ids_list, strict=True):
            outcome = self.task.judge(completion_text(completion), example).outcome
            counts[{Outcome.CORRECT: 0, Outcome.PARTIAL: 1, Outcome.FAILED: 2}[outcome]] += 1
            counts[3 if outcome == Outcome.CORRECT else 4] += len(ids)
        counts = torch.tensor([counts], dtype=torch.float64, device=self.accelerator.device)
        totals = self.accelerator.gather(counts).sum(dim=0).tolist()
        correct, partial, failed, len_correct, len_incorrect = totals
        mode = "train" if self.model.training else "eval"
        n = correct + partial + failed
        metrics = self._metrics[mode]
        metrics["outcomes/correct"].append(correct / n)
        metrics["outcomes/partial"].append(partial / n)
        metrics["outcomes/failed"].append(failed / n)
        if correct:
            metrics["outcomes/mean_length_correct"].append(len_correct / correct)
        if partial + failed:
            metrics["outcomes/mean_length_incorrect"].append(len_incorrect / (partial + failed))

    # -- evaluation and model card ---------------------------------------------------------------------------
    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval"):
        """Greedy scoring of the held-out subset by the task (``eval_accuracy``, ``eval_partial``, ...).

        Without a task, or a dataset without the task's columns, TRL's own evaluation runs (loss on generated
        batches).
        """
        dataset = self.eval_dataset if eval_dataset is None else eval_dataset
        if dataset is None or not self._has_task_columns(dataset.column_names):
            return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)
        from countdown_rl.evaluation.scoring import outcome_metrics

        result = self.evaluate_task(dataset)
        metrics = {f"{metric_key_prefix}_{key}": value for key, value in outcome_metrics(result).items()}
        was_training = self.model.training
        self.model.eval()  # GRPOTrainer.log flushes the metrics of the current mode: keep the train ones
        self.log(dict(metrics))
        self.model.train(was_training)
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        return metrics

    def evaluate_task(self, dataset, final: bool = False):
        """Score ``dataset`` greedily at the current budget (``max_completion_length``, or the schedule's budget at
        this step); each process takes a contiguous shard, results are gathered once, in row order.

        With ``final=True`` the results also go to ``<output_dir>/eval`` (eval.json, eval.md, samples.jsonl).
        Generation uses the colocated vLLM engine with ``use_vllm`` (colocate mode, one engine per process; synced
        to the current weights first), else transformers (or the compiled backend). Under
        sharded weights (FSDP, DeepSpeed ZeRO-3) every forward is a collective: TRL's ``unwrap_model_for_generation``
        gathers ZeRO-3's weights, transformers keeps finished ranks stepping (``synced_gpus``), and the shards are
        padded to one length so every rank runs the same batches (:func:`padded_shard`).
        """
        from accelerate.utils import gather_object
        from trl.models import unwrap_model_for_generation

        from countdown_rl.evaluation.eval_files import eval_meta, write_eval_outputs
        from countdown_rl.evaluation.scoring import evaluate_puzzles, summarise

        if self.task is None:
            raise ValueError("evaluate_task needs the trainer's task (CountdownGRPOTrainer(..., task=get_task(name)))")
        budget = self.args.completion_budget(self.state.global_step)
        sharded = self.is_fsdp_enabled or (self.is_deepspeed_enabled
                                           and self.accelerator.state.deepspeed_plugin.zero_stage == 3)
        rows, padding = padded_shard(dataset, self.accelerator.num_processes, self.accelerator.process_index,
                                     pad=sharded)
        compiled = self._compiled_generation
        compiled = compiled if compiled is not None and compiled.active and not sharded else None
        vllm = self.use_vllm and self.args.vllm_mode == "colocate" and self.args.vllm_tensor_parallel_size == 1
        if vllm and self.state.global_step != self._last_loaded_step:  # TRL's rollouts sync the same way
            self.vllm_generation.sync_weights()
            self._last_loaded_step = self.state.global_step
        backend = "vllm" if vllm else "compiled" if compiled else "transformers"
        # Compiled: generate in training's context (same hooks, so the same compiled graph).
        with (trainer_generation_context(self) if compiled else contextlib.nullcontext(),
              awake_engine(self.vllm_generation) if vllm else contextlib.nullcontext() as engine,
              unwrap_model_for_generation(self.model_wrapped, self.accelerator,
                                          gather_deepspeed3_params=self.args.ds3_gather_for_generation) as model):
            _, samples = evaluate_puzzles(
                model if engine is None else engine,
                self.processing_class,
                rows,
                max_tokens=budget,
                task=self.task,
                batch_size=self.args.per_device_eval_batch_size,
                chat_template_kwargs=self.chat_template_kwargs,
                show_progress=final,
                backend=backend,
                compiled=compiled,
            )
        samples = gather_object(samples[:len(samples) - padding])
        result = summarise(samples, max_tokens=budget, num_samples=1)
        if final and self.accelerator.is_main_process:
            meta = eval_meta(task=self.task.name, model=self.args.output_dir, num_puzzles=len(dataset),
                             backend=backend, stage="final")
            write_eval_outputs(os.path.join(self.args.output_dir, FINAL_EVAL_DIR), [result],
                               {budget: samples}, meta)
        return result

    def create_model_card(self, model_name=None, dataset_name=None, tags=None):
        """Our card (task, base model, dataset, algorithm, budget, final evaluation) instead of TRL's generic one."""
        if not self.is_world_process_zero():
            return
        from countdown_rl.evaluation.model_card import write_model_card

        # Used when the trainer runs outside our pipeline, which writes run_info.json before training.
        fallback = RunRecord(
            task=self.task.name if self.task is not None else "unknown",
            algorithm=self.args.algorithm,
            model=getattr(self.accelerator.unwrap_model(self.model).config, "_name_or_path", "unknown"),
            dataset=dataset_name or "unknown",
            max_completion_length=self.args.max_completion_length,
        )
        write_model_card(self.args.output_dir, fallback=fallback)

    # -- loss -------------------------------------------------------------------------------------------------
    def _compute_loss(self, model, inputs):
        full_mask = inputs["completion_mask"]
        if "tool_mask" in inputs:
            full_mask = full_mask * inputs["tool_mask"]
        mode = "train" if self.model.training else "eval"
        rows = None
        if self.args.skip_zero_advantage:  # only the rows that move the policy go through the model
            rows = grpo.learning_rows(inputs["advantages"])
            skipped = 1.0 - rows.numel() / full_mask.size(0)  # the share of completions not forwarded
            self._metrics[mode]["skipped_completions"].append(skipped)
            inputs = {key: value[rows] if key in PER_COMPLETION_KEYS else value for key, value in inputs.items()}
        prompt_ids, prompt_mask = inputs["prompt_ids"], inputs["prompt_mask"]
        completion_ids, completion_mask = inputs["completion_ids"], inputs["completion_mask"]
        mask = full_mask if rows is None else full_mask[rows]
        per_token_logps, entropies, aux_loss = self._get_per_token_logps_and_entropies(
            model,
            torch.cat([prompt_ids, completion_ids], dim=1),
            torch.cat([prompt_mask, completion_mask], dim=1),
            completion_ids.size(1),
            compute_entropy=True,
            compute_aux_loss=self.aux_loss_enabled,
        )
        # On-policy single pass: TRL skips the old log-probs, they equal the current ones (ratio 1).
        old_per_token_logps = inputs.get("old_per_token_logps")
        if old_per_token_logps is None:
            old_per_token_logps = per_token_logps.detach()
        per_token_loss, clip = grpo.compute_loss(
            inputs["advantages"], per_token_logps, old_per_token_logps, self.epsilon_low, self.epsilon_high
        )
        if self.use_vllm and self.vllm_importance_sampling_correction:
            per_token_loss = per_token_loss * inputs["importance_sampling_ratio"]
        if self.beta != 0.0:
            per_token_kl = grpo.k3_kl(per_token_logps, inputs["ref_per_token_logps"])
            if self.args.use_bias_correction_kl:
                per_token_kl = per_token_kl * clip["ratio"]
            per_token_loss = per_token_loss + self.beta * per_token_kl

        if rows is not None:  # the skipped rows' loss is exactly 0; they keep their place in the reduction
            per_token_loss = per_token_loss.new_zeros(full_mask.shape).index_copy(0, rows, per_token_loss)
        args = self.args
        # The rollout's own budget (a reused rollout keeps the one it was generated with).
        budget = inputs[BUDGET_COLUMN][0] if BUDGET_COLUMN in inputs else args.max_completion_length
        loss = grpo.reduce_loss(
            per_token_loss,
            full_mask,
            args.reduction,
            num_tokens=args.drgrpo_num_tokens or budget,
            alpha=args.hybrid_alpha,
        )
        self._metrics[mode]["completion_budget"].append(float(budget))
        accumulation = self.current_gradient_accumulation_steps if mode == "train" else 1.0
        loss = loss / accumulation
        if self.aux_loss_enabled:
            loss = loss + self.router_aux_loss_coef * aux_loss / accumulation

        def global_masked_mean(x: torch.Tensor) -> float:
            totals = self.accelerator.reduce(torch.stack([(x * mask).sum(), mask.sum().float()]), reduction="sum")
            return (totals[0] / totals[1].clamp(min=1.0)).item()

        metrics = self._metrics[mode]
        if self.beta != 0.0:
            metrics["kl"].append(global_masked_mean(per_token_kl))
        metrics["entropy"].append(global_masked_mean(entropies))
        low, high = clip["is_low_clipped"].float(), clip["is_high_clipped"].float()
        metrics["clip_ratio/low_mean"].append(global_masked_mean(low))
        metrics["clip_ratio/high_mean"].append(global_masked_mean(high))
        metrics["clip_ratio/region_mean"].append(global_masked_mean(torch.maximum(low, high)))
        return loss
