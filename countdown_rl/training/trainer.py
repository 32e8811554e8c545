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

3. Generation (a backend with its own rollout generator, e.g. ``generation_backend: compiled``):
   ``_generate_single_turn`` generates through it (:mod:`countdown_rl.training.rollouts` adapts it; a callback
   warms it up at ``on_train_begin``, so its compile time is logged once and kept out of step 1).
4. Budget (``budget_schedule``, :mod:`countdown_rl.algorithms.curriculum`): before each rollout the budget of the
   current optimizer step is set where TRL reads it (its generation config, the vLLM client's ``max_completion_length``,
   ``self.max_completion_length``); the rollout carries its budget (a reward keyword argument and a per-row list
   in the buffered batch), so a reused rollout keeps its budget for the Dr.GRPO normaliser and the
   ``completion_budget`` metric. The in-training evaluation uses the budget of the current step.

These hooks are private in TRL, so trl is pinned exactly and ``tests/training/test_trl_pin.py`` (every private
TRL / transformers name the package touches, all of them under :mod:`countdown_rl.training`) plus the parity tests
against stock TRL trip on any change. The config is :mod:`countdown_rl.training.config`; the held-out evaluation
:mod:`countdown_rl.training.evaluation`. The task (``task=``, any :class:`countdown_rl.tasks.base.Task`) only judges
completions for metrics and the held-out evaluation; the rewards are TRL's reward functions as usual.
"""

from __future__ import annotations

import logging

import torch
from trl import GRPOTrainer

from countdown_rl.algorithms import grpo as grpo
from countdown_rl.algorithms.curriculum import BUDGET_COLUMN
from countdown_rl.evaluation.sharding import padded_shard  # noqa: F401  (its import path before this module split)
from countdown_rl.runs.engine import enable_fsdp2_on_cpu
from countdown_rl.runs.record import RunRecord
from countdown_rl.tasks import Outcome
from countdown_rl.training import evaluation, rollouts
from countdown_rl.training.config import CountdownGRPOConfig

__all__ = ["PER_COMPLETION_KEYS", "CountdownGRPOConfig", "CountdownGRPOTrainer"]

logger = logging.getLogger(__name__)

# the rows of a rollout batch that skip_zero_advantage selects from (the ones _compute_loss reads)
PER_COMPLETION_KEYS = frozenset({"prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "tool_mask",
                                 "advantages", "old_per_token_logps", "ref_per_token_logps",
                                 "importance_sampling_ratio"})


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
        # The backend's own rollout generator (generation.backends), or None: TRL generates the rollouts.
        self.rollout_generator = rollouts.build_rollout_generator(self)
        if self.rollout_generator is not None:
            self.add_callback(rollouts.WarmUpCallback(self))
        if self.use_vllm:  # vLLM's CPU backend needs its own weight sync (generation.vllm_sync); said once
            logger.info("vLLM weight sync: %s", rollouts.use_cpu_weight_sync(self.vllm_generation))

    @property
    def _compiled_generation(self):
        """The rollout generator under its first name (benchmarks/gpu_profile.py reads it)."""
        return self.rollout_generator

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

    # -- generation (a backend with its own rollout generator, e.g. generation_backend: compiled) ------------
    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        gen = self.rollout_generator
        if gen is None or not gen.active or images is not None or multimodal_fields:
            return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                                 has_tool_images)
        completion_ids = rollouts.generate_rollouts(self, prompt_ids)
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
        """Score ``dataset`` greedily at the current budget, on every process, gathered in row order; with
        ``final=True`` also written to ``<output_dir>/eval`` (:func:`countdown_rl.training.evaluation.evaluate_task`).
        """
        return evaluation.evaluate_task(self, dataset, final=final)

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
