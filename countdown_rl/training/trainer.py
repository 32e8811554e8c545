"""``CountdownGRPOTrainer``: TRL's GRPOTrainer, a superset: every TRL option works, ours are added on top.

TRL runs the loop (generation, vLLM, reference model, accumulation, logging, checkpoints) and the loss (every loss
type, importance-sampling level, entropy filter and bonus, masks); with none of our keys set a step is stock TRL's.
Our hooks call TRL for everything they do not change:

1. Advantages: ``_calculate_rewards`` (TRL's, gathered across processes) is captured; after TRL's
   ``_generate_and_score_completions`` our ``grpo.group_advantages`` replace TRL's where our keys ask for them
   (:mod:`countdown_rl.training.config`, rule 3), this process's slice kept. The task's outcome metrics
   (``outcomes/correct`` ...) and advantage metrics are logged.
2. Loss: TRL's ``_compute_loss``, around which (a) the Dr.GRPO constant is the rollout's budget or
   ``drgrpo_num_tokens``; (b) ``hybrid`` is alpha * TRL's dr_grpo loss + (1 - alpha) * its grpo loss from one
   forward pass (the second pass reuses the first's log-probs; its side effects on the trainer are undone and its
   metrics mixed alike); (c) ``skip_zero_advantage`` forwards only the rows with a non-zero advantage and rescales
   TRL's reduction to the whole batch's (:func:`full_batch_scale`), so the update is the whole batch's.
3. Generation (a backend with its own rollout generator, e.g. ``generation_backend: compiled``):
   ``_generate_single_turn`` generates through it (:mod:`countdown_rl.training.rollouts` adapts it; a callback
   warms it up at ``on_train_begin``, so its compile time is logged once and kept out of step 1).
4. Budget (``budget_schedule``, :mod:`countdown_rl.algorithms.curriculum`): before each rollout the budget of the
   current optimizer step is set where TRL reads it (its generation config, the vLLM client's ``max_completion_length``,
   ``self.max_completion_length``); the rollout carries its budget (a reward keyword argument and a per-row list
   in the buffered batch), so a reused rollout keeps its budget for the Dr.GRPO normaliser and the
   ``completion_budget`` metric. The in-training evaluation uses the budget of the current step.
5. Data order: ``_get_train_sampler`` wraps TRL's sampler (:mod:`countdown_rl.training.sampling`) so that a run
   resumed in epoch 1 or later trains on that epoch's order, as the uninterrupted run does (stock TRL's order).
   With ``group_micro_batches``, ``_prepare_inputs`` re-splits each buffered generation batch so that a prompt's
   rows share a micro-batch (:func:`countdown_rl.training.sampling.whole_group_micro_batches`).
6. Log-prob passes: ``_get_per_token_logps_and_entropies`` runs each of TRL's row chunks prompt-once
   (:mod:`countdown_rl.training.shared_prompt`) where the run is set to (``shared_prompt_forward``; unset,
   :func:`prompt_once_default` decides by the measured rows) and it is exact (no active dropout, no router loss, no
   images); a chunk that shares no prompt runs TRL's plain pass on its own. Each chunk is counted (rows, distinct
   prompts, why plain) for the run record (:class:`LogProbPassRecord`).
7. Dynamic sampling (``dynamic_sampling``, :mod:`countdown_rl.training.dynamic_sampling`): in training,
   ``_generate_and_score_completions`` scores TRL's batch, then (while too few groups differ and the round cap allows)
   batches of new prompts through the same call; each process keeps whole groups, differing ones first, joined and
   re-padded, ``num_items_in_batch`` recounted over the kept rows. The decision is taken from gathered flags, so every
   process runs the same rounds. Counts are logged per generation batch and kept in the run record.

These hooks are private in TRL, so trl is pinned exactly and ``tests/training/test_trl_pin.py`` (every private
TRL / transformers name the package touches, all of them under :mod:`countdown_rl.training`) plus the parity tests
against stock TRL trip on any change. The config is :mod:`countdown_rl.training.config`; the held-out evaluation
:mod:`countdown_rl.training.evaluation`. The task (``task=``, any :class:`countdown_rl.tasks.base.Task`) only judges
completions for metrics and the held-out evaluation; the rewards are TRL's reward functions as usual.
"""

from __future__ import annotations

import logging

import torch
from transformers import TrainerCallback
from trl import GRPOTrainer

from countdown_rl.algorithms import grpo as grpo
from countdown_rl.algorithms.curriculum import BUDGET_COLUMN
from countdown_rl.evaluation.sharding import padded_shard  # noqa: F401  (its import path before this module split)
from countdown_rl.generation.vllm_settings import engine_settings
from countdown_rl.runs.engine import enable_fsdp2_on_cpu
from countdown_rl.runs.record import RunRecord, update_extra
from countdown_rl.tasks import Outcome
from countdown_rl.training import dynamic_sampling, evaluation, rollouts, sampling, shared_prompt
from countdown_rl.training.config import HYBRID_LOSS_TYPES, CountdownGRPOConfig

__all__ = ["PER_COMPLETION_KEYS", "PROMPT_ONCE_MEASURED", "CountdownGRPOConfig", "CountdownGRPOTrainer",
           "LogProbPassRecord", "full_batch_scale", "prompt_once_default"]

logger = logging.getLogger(__name__)

# the rows of a rollout batch that skip_zero_advantage selects from (the ones _compute_loss reads)
PER_COMPLETION_KEYS = frozenset({"prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "tool_mask",
                                 "advantages", "old_per_token_logps", "ref_per_token_logps",
                                 "sampling_per_token_logps", "importance_sampling_ratio", BUDGET_COLUMN})
# inputs that are not one row per completion (images): with them no row is skipped
MULTIMODAL_KEYS = frozenset({"pixel_values", "image_grid_thw", "num_images", "pixel_attention_mask", "spatial_shapes",
                             "num_tiles", "image_sizes", "token_type_ids", "mm_token_type_ids", "image_position_ids"})
# TRL's loss types by what their reduction divides by: the rows (a mean over sequences, or B * a constant), the
# local tokens, or the generation batch's token count (carried in the inputs, unchanged by a row subset)
_PER_ROW = frozenset({"grpo", "sapo", "luspo", "dr_grpo"})
_PER_LOCAL_TOKEN = frozenset({"bnpo"})


# The measured rows that decide shared_prompt_forward's default (benchmarks/results/speed.md, "Prompt-once training
# passes"): the training part's time, plain / prompt-once, over the same rollouts. On where every row gained.
PROMPT_ONCE_MEASURED = {
    "cpu": "1.34-3.61x (SmolLM2-135M, the tiny and a 1.7B-shaped Qwen3)",
    "gpu, gradient checkpointing": "1.05-1.12x (H200, Qwen3-1.7B, 256 and 1024-token completions)",
    "gpu, no gradient checkpointing": "0.94-0.98x (H200, Qwen3-1.7B, 256-token completions)",
    "gpu, lora": "0.82-0.92x (H200, Qwen3-1.7B, LoRA r16, with gradient checkpointing)",
}


def prompt_once_default(device_type: str, *, lora: bool, gradient_checkpointing: bool) -> tuple[bool, str]:
    """``shared_prompt_forward`` unset: on only where a measured row shows a gain (:data:`PROMPT_ONCE_MEASURED`),
    and why.

    >>> prompt_once_default("cpu", lora=True, gradient_checkpointing=False)[0]
    True
    >>> on, why = prompt_once_default("cuda", lora=False, gradient_checkpointing=False); on, why[:55]
    (False, 'default off on a GPU without gradient checkpointing: pr')
    """
    if device_type == "cpu":
        row, on, where = "cpu", True, "on the CPU"
    elif device_type != "cuda":
        return False, f"default off on {device_type}: prompt-once is not measured there"
    elif lora:
        row, on, where = "gpu, lora", False, "on a GPU with LoRA"
    elif not gradient_checkpointing:
        row, on, where = "gpu, no gradient checkpointing", False, "on a GPU without gradient checkpointing"
    else:
        row, on, where = "gpu, gradient checkpointing", True, "on a GPU with gradient checkpointing"
    figure, setting = PROMPT_ONCE_MEASURED[row].split(" ", 1)
    return on, f"default {'on' if on else 'off'} {where}: prompt-once measured {figure} the plain pass {setting}"


class LogProbPassRecord(TrainerCallback):
    """Keeps the run record's ``extra.log_prob_pass`` / ``log_prob_passes`` to what the log-prob passes ran (at each
    checkpoint and at the end; the record is written before training, when nothing has run yet)."""

    def __init__(self, trainer):
        self.trainer = trainer

    def _update(self, args) -> None:
        trainer = self.trainer
        if trainer.accelerator.is_main_process and trainer._log_prob_counts:
            update_extra(args.output_dir, log_prob_pass=trainer.log_prob_pass_ran,
                         log_prob_passes=trainer.log_prob_passes)

    def on_save(self, args, state, control, **kwargs):
        self._update(args)

    def on_train_end(self, args, state, control, **kwargs):
        self._update(args)


def full_batch_scale(loss_type: str, kept_mask: torch.Tensor, full_mask: torch.Tensor) -> torch.Tensor | float:
    """The factor that turns TRL's ``loss_type`` reduction over the kept rows into the one over the whole batch,
    given that the left-out rows' per-token loss is exactly 0 (``skip_zero_advantage``).

    >>> full = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 1, 1]])
    >>> full_batch_scale("grpo", full[:2], full), round(full_batch_scale("bnpo", full[:2], full).item(), 3)
    (0.5, 0.333)
    >>> full_batch_scale("dapo", full[:2], full)
    1.0
    """
    if loss_type in _PER_ROW:
        return kept_mask.size(0) / full_mask.size(0)
    if loss_type in _PER_LOCAL_TOKEN:
        return kept_mask.sum().clamp(min=1.0) / full_mask.sum().clamp(min=1.0)
    return 1.0


class CountdownGRPOTrainer(GRPOTrainer):
    """TRL's GRPOTrainer with our advantages, reductions, skip, budgets and backends on top (module docstring).

    ``task`` (optional) judges completions: outcome metrics during training and the greedy held-out evaluation.
    """

    def __init__(self, *args, task=None, **kwargs):
        # GRPOTrainer(model, reward_funcs, args, ...): the colocated vLLM engine it builds gets the run's dtype
        with rollouts.colocated_engine_dtype(kwargs.get("args", args[2] if len(args) > 2 else None)):
            super().__init__(*args, **kwargs)
        # None or a plain GRPOConfig: TRL's run, our hooks idle (but for the prompt-once log-probs, our default: the
        # same pass up to float rounding)
        if not isinstance(self.args, CountdownGRPOConfig):
            self.args = CountdownGRPOConfig.from_trl(self.args)
        self._log_prob_counts: dict = {}  # what each log-prob pass ran (log_prob_passes)
        self._log_prob_said: set[str] = set()  # the reasons for a plain pass already logged
        self._grouped = None  # the buffered generation batch group_micro_batches last re-split
        self._task_eval_metrics: dict | None = None  # trl_eval_metrics: the task's, for TRL's evaluation to log
        if self.args.shared_prompt_forward is True:
            reason = self._plain_pass_reason() or self._dropout_reason(self.model, training=True)
            if reason is not None:  # asked for explicitly: a run that cannot do it refuses
                raise ValueError(f"shared_prompt_forward: true cannot run here: {reason}; leave it unset (the plain "
                                 "pass then runs and the run record says why) or set it false")
        self.task = task
        self._refuse_missing_best_metric()
        self._gathered_rewards_per_func: torch.Tensor | None = None
        self._loss_forward: list | None = None  # the policy forward of the _compute_loss under way (hybrid reuses it)
        # The backend's own rollout generator (generation.backends), or None: TRL generates the rollouts.
        self.rollout_generator = rollouts.build_rollout_generator(self)
        if self.rollout_generator is not None:
            self.add_callback(rollouts.WarmUpCallback(self))
        if self.use_vllm:  # vLLM's CPU backend needs its own weight sync (generation.vllm_sync); said once
            logger.info("vLLM weight sync: %s", rollouts.use_cpu_weight_sync(self.vllm_generation))
            engine = self.vllm_engine
            if engine:
                logger.info("vLLM colocated engine: %s", engine)
        self.add_callback(LogProbPassRecord(self))
        self._round_correct: list[bool] | None = None  # the task's outcome per row of the last rollout (local)
        if self.args.dynamic_sampling:
            self._init_dynamic_sampling()

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

    def _prepare_inputs(self, generation_batch):
        inputs = super()._prepare_inputs(generation_batch)
        # group_micro_batches: TRL has just buffered a new generation batch (shuffled, split): re-split it with each
        # prompt's rows together (training.sampling), once per generation batch
        if self.args.group_micro_batches and self.model.training and self._buffered_inputs is not self._grouped:
            given = sorted(MULTIMODAL_KEYS & self._buffered_inputs[0].keys())
            if given:
                raise ValueError(f"group_micro_batches takes text-only rollouts, these carry {given[0]}; unset it")
            self._buffered_inputs = self._grouped = sampling.whole_group_micro_batches(self._buffered_inputs)
            inputs = self._buffered_inputs[self._step % self.args.steps_per_generation]
        return inputs

    def _get_train_sampler(self, dataset=None):
        # TRL's sampler draws epoch e's order as its (e+1)-th permutation: a run resumed in epoch e >= 1 would train
        # on epoch 0's order again (training.sampling); the wrapper keeps an uninterrupted run's order, stock TRL's.
        return sampling.ResumableSampler(super()._get_train_sampler(dataset), epoch=lambda: self.state.epoch)

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
        if self.args.dynamic_sampling and self.model.training:  # training only: the evaluation is TRL's
            return self._dynamic_sampling_batch(inputs)
        return self._score_rollouts(inputs)

    def _score_rollouts(self, inputs):
        """TRL's ``_generate_and_score_completions`` with our budget and advantages (module docstring, 1 and 4)."""
        budget = self.args.completion_budget(self.state.global_step)
        self._set_completion_budget(budget)
        if self.environment_factories is None:  # an environment's reset() gets the rows: leave them as they are
            inputs = [{**example, BUDGET_COLUMN: budget} for example in inputs]  # reward functions see the budget
        output = super()._generate_and_score_completions(inputs)
        output[BUDGET_COLUMN] = [budget] * len(inputs)  # a per-row list: split and shuffled with the rollout
        mode = "train" if self.model.training else "eval"
        group_size = self.num_generations if mode == "train" else self.num_generations_eval
        rewards = self._summed_rewards()
        if not self.args._own_advantages:  # TRL's advantages stand (config rule 3): logged as TRL gathered them
            advantages = torch.tensor(list(self._logs["advantages"])[-rewards.numel():])
            stats = grpo.advantage_stats(advantages, rewards.cpu(), group_size)
        else:
            args = self.args
            advantages, stats = grpo.group_advantages(rewards, group_size, baseline=args.baseline,
                                                      std_normalization=args.std_normalization,
                                                      advantage_eps=args.advantage_eps)
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

    def _summed_rewards(self) -> torch.Tensor:
        """The weighted sum of the last rollout's gathered rewards per completion (NaN: unscorable)."""
        rewards_per_func = self._gathered_rewards_per_func
        weights = self.reward_weights.to(rewards_per_func.device).unsqueeze(0)
        rewards = (rewards_per_func * weights).nansum(dim=1)
        rewards[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan  # unscorable: out of the baseline
        return rewards

    # -- dynamic sampling (DAPO's group filter, training.dynamic_sampling) --------------------------------------
    def _init_dynamic_sampling(self) -> None:
        dataset = self.train_dataset
        if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
            raise ValueError("dynamic_sampling draws extra prompts by index and needs a map-style train_dataset, "
                             f"not {type(dataset).__name__}; load the dataset without streaming or unset it")
        # the extra rounds' own order: seed + 1, so round 2 does not repeat TRL's first batch (seeded with seed)
        self._prompt_draws = dynamic_sampling.PromptDraws(dataset, self.args.seed + 1,
                                                          self.accelerator.num_processes,
                                                          self.accelerator.process_index)
        self._dynamic_totals = dict.fromkeys(("generation_batches", "rounds", "prompts_drawn", "groups_kept",
                                              "short_batches"), 0)
        self._dynamic_rule: str | None = None
        self._dynamic_short_said = False
        self.add_callback(dynamic_sampling.DynamicSamplingRecord(self))

    @property
    def dynamic_sampling_ran(self) -> dict:
        """Dynamic sampling's settings and totals since the trainer was built, for the run record
        (``extra["dynamic_sampling"]``): which rule judged the groups, the generation batches, rounds, prompts
        drawn, differing groups kept and batches short of the target."""
        args = self.args
        rule = self._dynamic_rule or "not run yet"
        return {"max_rounds": args.dynamic_sampling_max_rounds, "min_groups": args.dynamic_sampling_min_groups
                or "all", "rule": rule, **self._dynamic_totals}

    def _groups_differ(self, group_size: int) -> torch.Tensor:
        """Per group of the last rollout (all processes, in order): the task's outcome differs (some but not all
        correct) where the rows carry the task's columns, else the summed reward differs."""
        if self._round_correct is not None:
            self._dynamic_rule = "task outcome"
            local = dynamic_sampling.outcome_groups_differ(self._round_correct, group_size)
            return self.accelerator.gather(local.long().to(self.accelerator.device)).bool().cpu()
        self._dynamic_rule = "summed reward"
        return dynamic_sampling.reward_groups_differ(self._summed_rewards().cpu(), group_size)

    def _dynamic_sampling_batch(self, inputs):
        """Round 1 is TRL's generation batch; more rounds of new prompts are scored while too few groups differ and
        the cap allows; each process keeps whole groups of its own, differing ones first (module
        :mod:`countdown_rl.training.dynamic_sampling`)."""
        args, size = self.args, self.num_generations
        processes, rank = self.accelerator.num_processes, self.accelerator.process_index
        groups, columns = len(inputs) // size, list(inputs[0])
        target = args.dynamic_sampling_min_groups or groups * processes
        outputs, differ, batch = [], [], inputs
        while True:
            self._round_correct = None
            output = self._score_rollouts(batch)
            given = sorted(MULTIMODAL_KEYS & output.keys())
            if given:
                raise ValueError(f"dynamic_sampling takes text-only rollouts, these carry {given[0]}; unset it")
            outputs.append(output)
            differ.append(self._groups_differ(size))
            plan = dynamic_sampling.plan_groups(torch.stack(differ), processes, target)
            if plan.full or len(outputs) >= args.dynamic_sampling_max_rounds:
                break
            batch = self._prompt_draws.next_round(groups, size, columns)
        if len(outputs) > 1:  # the same on every process (gathered flags): the gather below runs on all
            rows = [[] for _ in outputs]
            for r, g in plan.kept[rank]:
                rows[r] += range(g * size, (g + 1) * size)
            processor = self.processing_class
            pad_id = getattr(processor, "tokenizer", processor).pad_token_id
            output = dynamic_sampling.join_rounds(outputs, rows, pad_id, self.pad_to_multiple_of)
            mask = self._loss_mask(output)  # TRL's count: completion tokens (tool tokens out) of every process
            output["num_items_in_batch"] = self.accelerator.gather(mask.sum()).sum()
        self._log_dynamic_sampling(len(outputs), groups * processes, plan, target)
        return output

    def _log_dynamic_sampling(self, rounds: int, batch_groups: int, plan, target: int) -> None:
        short = not plan.full
        self._metrics["train"]["dynamic_sampling/prompts_drawn"].append(float(rounds * batch_groups))
        self._metrics["train"]["dynamic_sampling/groups_kept"].append(float(plan.differing))
        self._metrics["train"]["dynamic_sampling/rounds"].append(float(rounds))
        self._metrics["train"]["dynamic_sampling/short"].append(float(short))
        totals = self._dynamic_totals
        for key, value in (("generation_batches", 1), ("rounds", rounds), ("prompts_drawn", rounds * batch_groups),
                           ("groups_kept", plan.differing), ("short_batches", int(short))):
            totals[key] += value
        if short and not self._dynamic_short_said:
            self._dynamic_short_said = True
            logger.warning("dynamic_sampling: %d generation rounds (dynamic_sampling_max_rounds) found %d of the %d "
                           "groups whose rewards differ that the batch should hold; the rest of the batch is groups "
                           "scored all alike (advantage 0); raise dynamic_sampling_max_rounds or lower "
                           "dynamic_sampling_min_groups (said once; dynamic_sampling/short logs each batch)",
                           rounds, plan.differing, target)

    def _has_task_columns(self, columns) -> bool:
        return self.task is not None and set(self.task.columns) <= set(columns)

    def _log_outcomes(self, inputs, completions, completion_ids_list) -> None:
        """Correct / partial / failed fractions and the mean length of correct vs incorrect completions."""
        if not inputs or not self._has_task_columns(inputs[0]):
            return
        from countdown_rl.tasks.base import completion_text

        # correct, partial, failed, tokens of correct, tokens of incorrect: counted in Python, one tensor to gather
        counts = [0, 0, 0, 0, 0]
        self._round_correct = []
        for example, completion, ids in zip(inputs, completions, completion_ids_list, strict=True):
            outcome = self.task.judge(completion_text(completion), example).outcome
            self._round_correct.append(outcome == Outcome.CORRECT)
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
        """Greedy scoring of the held-out subset by the task (``eval_accuracy``, ``eval_partial``, ...); with
        ``trl_eval_metrics`` TRL's evaluation too (``eval_loss``, ``eval_reward``, ...), in one set of metrics.

        Without a task, or a dataset without the task's columns, TRL's own evaluation runs (loss on generated
        batches).
        """
        dataset = self._eval_set(eval_dataset)
        if not self._has_task_columns(self._columns(dataset)):  # no task, a dict (TRL loops, calling back here)
            return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)
        from countdown_rl.evaluation.scoring import outcome_metrics

        result = self.evaluate_task(dataset)
        metrics = {f"{metric_key_prefix}_{key}": value for key, value in outcome_metrics(result).items()}
        if self.args.trl_eval_metrics:  # TRL's evaluation; log() adds ours to its metrics (one line, one event)
            self._task_eval_metrics = metrics
            try:
                return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)
            finally:
                self._task_eval_metrics = None
        was_training = self.model.training
        self.model.eval()  # GRPOTrainer.log flushes the metrics of the current mode: keep the train ones
        self.log(dict(metrics))
        self.model.train(was_training)
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        return metrics

    def log(self, logs, *args, **kwargs):
        if getattr(self, "_task_eval_metrics", None) is not None and not self.model.training:
            # TRL's evaluate logs its metrics dict, then passes that same dict to on_evaluate and returns it
            logs.update(self._task_eval_metrics)
            self._task_eval_metrics = None
        return super().log(logs, *args, **kwargs)

    def _eval_set(self, eval_dataset=None):
        dataset = self.eval_dataset if eval_dataset is None else eval_dataset
        if isinstance(dataset, str):  # one of a dict of eval datasets, by name (transformers' loop over the dict)
            dataset = self.eval_dataset[dataset]
        return dataset

    @staticmethod
    def _columns(dataset) -> tuple:
        return () if isinstance(dataset, dict) else tuple(getattr(dataset, "column_names", None) or ())

    def _refuse_missing_best_metric(self) -> None:
        """A ``metric_for_best_model`` the evaluation will not compute: refused now (transformers would fail at the
        first evaluation, after training steps). Checked where every evaluation set is the task's and TRL's
        evaluation does not run (``trl_eval_metrics`` false)."""
        if self.eval_dataset is None:
            return
        sets = self.eval_dataset if isinstance(self.eval_dataset, dict) else {None: self.eval_dataset}
        if not all(self._has_task_columns(self._columns(dataset)) for dataset in sets.values()):
            return  # TRL's evaluation runs on some set: its metrics exist
        evaluation.refuse_missing_best_metric(self.args.metric_for_best_model, list(sets),
                                              self.args.trl_eval_metrics)

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
            algorithm=self.args.algorithm_label,
            model=getattr(self.accelerator.unwrap_model(self.model).config, "_name_or_path", "unknown"),
            dataset=dataset_name or "unknown",
            max_completion_length=self.args.max_completion_length,
        )
        write_model_card(self.args.output_dir, fallback=fallback)

    # -- loss -------------------------------------------------------------------------------------------------
    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
                                           compute_entropy=False, compute_aux_loss=False, **multimodal):
        memo = self._loss_forward
        if memo:  # hybrid's second TRL pass: the first's forward
            return memo[0]
        reason = self._pass_plain_reason(model, compute_aux_loss, multimodal)
        if reason is None:
            result = self._shared_prompt_pass(model, input_ids, attention_mask, logits_to_keep, batch_size,
                                              compute_entropy)
        else:
            result = super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, compute_aux_loss,
                **multimodal)
            for start in range(0, input_ids.size(0), batch_size or input_ids.size(0)):
                rows = slice(start, start + (batch_size or input_ids.size(0)))
                self._count_pass(input_ids[rows], attention_mask[rows], logits_to_keep, None, reason)
        if memo is not None:  # the loss's own forward (None: the old and reference log-probs)
            memo.append(result)
        return result

    def _log_prob_choice(self) -> tuple[bool, str]:
        """Whether the log-prob passes are set to run prompt-once, and why: the key, or the measured default
        (:func:`prompt_once_default`)."""
        flag = self.args.shared_prompt_forward
        if flag is not None:
            return flag, f"shared_prompt_forward: {str(flag).lower()}"
        unwrapped = self.accelerator.unwrap_model(self.model)
        return prompt_once_default(self.accelerator.device.type, lora=getattr(unwrapped, "peft_config", None)
                                   is not None, gradient_checkpointing=bool(self.args.gradient_checkpointing))

    def _plain_pass_reason(self) -> str | None:
        """Why no log-prob pass of this run can be prompt-once (None: they can)."""
        if self.args.gradient_checkpointing and (self.args.gradient_checkpointing_kwargs or {}).get("use_reentrant"):
            return "reentrant gradient checkpointing passes no gradient to the cached prompt"
        if self.is_fsdp_enabled or self.is_deepspeed_enabled:
            return ("sharded parameters are freed after each forward, and the prompt pass's backward would find them "
                    "gone (measured with FSDP2)")
        if not hasattr(self, "_other_cache_layers"):  # the model's class does not change: look once
            config = self.accelerator.unwrap_model(self.model).config
            self._other_cache_layers = shared_prompt.other_cache_layers(config)
        if self._other_cache_layers:
            return f"the model's cache holds {', '.join(self._other_cache_layers)}, not only attention layers"
        return None

    @staticmethod
    def _dropout_reason(model, training: bool | None = None) -> str | None:
        dropout = shared_prompt.active_dropout(model, training)
        if dropout is None:
            return None
        return (f"dropout is active ({dropout}): the rows of a group would share one mask over the prompt, where the "
                "plain pass draws one per row")

    @property
    def rollouts(self) -> str:
        """What generates the rollouts, for the run record (``extra["rollouts"]``): ``"vllm (colocate)"`` /
        ``"vllm (server)"``, ``"transformers"`` (TRL's plain generate), ``"compiled"``, or
        ``"transformers (compiled fell back: why)"`` once the compiled backend's warm-up failed."""
        if self.use_vllm:
            return f"vllm ({self.args.vllm_mode})"
        gen = self.rollout_generator
        if gen is None:
            return "transformers"
        if not gen.active:
            return f"transformers ({self.args.generation_backend} fell back: {gen.fallback_reason})"
        return self.args.generation_backend

    @property
    def vllm_engine(self) -> dict | None:
        """The colocated vLLM engine's dtype, prefix caching and CPU binding, for the run record
        (``extra["vllm_engine"]``); None without one."""
        llm = getattr(getattr(self, "vllm_generation", None), "llm", None)
        return None if llm is None else engine_settings(llm, in_process=self.args.vllm_mode == "colocate")

    @property
    def log_prob_pass(self) -> str:
        """What the log-prob passes are set to run, for the run record (``extra["log_prob_pass"]``, written before
        training): ``"prompt-once"``, ``"plain"`` (the key false) or ``"plain (why)"``. What they ran:
        :attr:`log_prob_pass_ran`."""
        on, why = self._log_prob_choice()
        if not on:
            return "plain" if self.args.shared_prompt_forward is False else f"plain ({why})"
        reason = self._plain_pass_reason() or self._dropout_reason(self.model, training=True)
        if reason is not None:
            return f"plain ({reason})"
        if self.aux_loss_enabled:
            return "prompt-once (the loss's own forward plain: a MoE router loss is computed over the whole rows)"
        return "prompt-once"

    @property
    def log_prob_pass_ran(self) -> str:
        """What the log-prob passes ran (the record's ``log_prob_pass`` once they have run): ``"prompt-once"`` where
        every micro-batch shared, ``"prompt-once (plain in N of M micro-batches: why)"``, ``"plain (why)"`` where none
        did; :attr:`log_prob_pass` before any pass (counts: :attr:`log_prob_passes`)."""
        ways = [(way, c) for kind in self._log_prob_counts.values() for way, c in kind.items()]
        total = sum(c["micro_batches"] for _, c in ways)
        plain = sum(c["micro_batches"] for way, c in ways if way == "plain")
        why = "; ".join(sorted({reason for way, c in ways for reason in c.get("why", {})}))
        if not total:
            return self.log_prob_pass
        if not plain:
            return "prompt-once"
        if plain < total:
            return f"prompt-once (plain in {plain} of {total} micro-batches: {why})"
        return "plain" if self.args.shared_prompt_forward is False else f"plain ({why})"

    @property
    def log_prob_passes(self) -> dict:
        """What the log-prob passes of this process ran since the trainer was built, for the run record
        (``extra["log_prob_passes"]``): per pass kind (``loss``: the loss's forward, with gradients; ``no_grad``: the
        old policy's and reference model's log-probs, the evaluation loss), per way (``prompt-once``, ``plain``), the
        micro-batches, rows and distinct prompts, and for ``plain`` how many micro-batches ran it for each reason."""
        return {kind: {way: {key: dict(value) if isinstance(value, dict) else value for key, value in c.items()}
                       for way, c in ways.items()} for kind, ways in self._log_prob_counts.items()}

    def _count_pass(self, input_ids, attention_mask, logits_to_keep, prompts, why: str | None) -> None:
        """Count one micro-batch (chunk) of a log-prob pass: its rows, distinct prompts, and why it ran plain."""
        prompt_len = input_ids.size(1) - logits_to_keep
        if prompts is None and prompt_len > 0:
            prompts = shared_prompt.distinct_prompts(input_ids[:, :prompt_len], attention_mask[:, :prompt_len])
        distinct = prompts[0].numel() if prompts is not None else 1
        kind = self._log_prob_counts.setdefault("loss" if torch.is_grad_enabled() else "no_grad", {})
        way = "plain" if why is not None else "prompt-once"
        counts = kind.setdefault(way, {"micro_batches": 0, "rows": 0, "distinct_prompts": 0})
        counts["micro_batches"] += 1
        counts["rows"] += input_ids.size(0)
        counts["distinct_prompts"] += distinct
        if why is not None:
            reasons = counts.setdefault("why", {})
            reasons[why] = reasons.get(why, 0) + 1

    def _pass_plain_reason(self, model, compute_aux_loss: bool, multimodal: dict) -> str | None:
        """Why this pass runs plain (None: prompt-once, chunk by chunk); a reason other than the setting is logged
        once."""
        on, why = self._log_prob_choice()
        if not on:
            return why
        reason = self._plain_pass_reason()
        if reason is None and compute_aux_loss:
            reason = "a MoE router loss is computed over the whole rows"
        elif reason is None and any(value is not None for value in multimodal.values()):
            reason = "multimodal inputs"
        elif reason is None:
            reason = self._dropout_reason(model)
        if reason and reason not in self._log_prob_said:
            logger.warning("shared_prompt_forward: the plain log-prob pass runs instead (%s)", reason)
            self._log_prob_said.add(reason)
        return reason

    def _shared_prompt_pass(self, model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy):
        """:func:`countdown_rl.training.shared_prompt.shared_prompt_logps` over TRL's row chunks; a chunk that
        shares no prompt runs TRL's plain pass on its own (the chunks already computed are kept)."""
        batch_size = batch_size or input_ids.size(0)
        inner = getattr(model, "module", model)  # DDP's module: the prompt pass is not a forward DDP must see
        prompt_len = input_ids.size(1) - logits_to_keep
        logps, entropies = [], []
        for start in range(0, input_ids.size(0), batch_size):
            rows = slice(start, start + batch_size)
            ids, mask = input_ids[rows], attention_mask[rows]
            prompts = (shared_prompt.distinct_prompts(ids[:, :prompt_len], mask[:, :prompt_len])
                       if prompt_len > 0 else None)
            why = shared_prompt.plain_reason(ids, logits_to_keep, prompts[0].numel() if prompts else 1)
            if why is None:
                with self.accelerator.autocast():
                    chunk = shared_prompt.shared_prompt_logps(model, ids, mask, logits_to_keep, compute_entropy,
                                                              prompt_model=inner, prompts=prompts)
            else:  # TRL's plain pass over this chunk alone
                chunk = super()._get_per_token_logps_and_entropies(model, ids, mask, logits_to_keep, None,
                                                                   compute_entropy)
            self._count_pass(ids, mask, logits_to_keep, prompts, why)
            logps.append(chunk[0])
            entropies.append(chunk[1])
        return torch.cat(logps), torch.cat(entropies) if compute_entropy else None, None

    def _compute_loss(self, model, inputs):
        """TRL's loss; our reduction, Dr.GRPO constant and zero-advantage skip around it (module docstring, 2)."""
        mode = "train" if self.model.training else "eval"
        full_inputs, rows = inputs, None
        if self.args.skip_zero_advantage and not MULTIMODAL_KEYS & inputs.keys():
            rows = grpo.learning_rows(inputs["advantages"])  # only the rows that move the policy
            skipped = 1.0 - rows.numel() / inputs["completion_mask"].size(0)  # the share of completions not forwarded
            self._metrics[mode]["skipped_completions"].append(skipped)
            inputs = {key: (value[rows] if torch.is_tensor(value) else [value[i] for i in rows.tolist()])
                      if key in PER_COMPLETION_KEYS else value for key, value in inputs.items()}
        # The rollout's own budget (a reused rollout keeps the one it was generated with): TRL's dr_grpo constant.
        budget = inputs[BUDGET_COLUMN][0] if BUDGET_COLUMN in inputs else self.args.max_completion_length
        self._metrics[mode]["completion_budget"].append(float(budget))
        trl_constant, self.max_completion_length = self.max_completion_length, self.args.drgrpo_num_tokens or budget
        self._loss_forward = []
        try:
            if self.args.reduction == "hybrid":
                loss, loss_types = self._hybrid_loss(model, inputs, mode), HYBRID_LOSS_TYPES
            else:
                loss, loss_types = super()._compute_loss(model, inputs), (self.loss_type,)
            aux_loss = self._loss_forward[0][2] if self._loss_forward else None
        finally:
            self.max_completion_length, self._loss_forward = trl_constant, None
        if rows is None:
            return loss
        # The kept rows' reduction rescaled to the whole batch's (both hybrid halves divide by the rows alike).
        scale = full_batch_scale(loss_types[0], self._loss_mask(inputs), self._loss_mask(full_inputs))
        if not self.aux_loss_enabled:
            return loss * scale
        # the router's auxiliary loss (of the trained rows) is not a reduction over completions: kept as it is
        accumulation = self.current_gradient_accumulation_steps if mode == "train" else 1
        aux = self.router_aux_loss_coef * aux_loss / accumulation
        return (loss - aux) * scale + aux

    @staticmethod
    def _loss_mask(inputs) -> torch.Tensor:
        mask = inputs["completion_mask"]
        return mask * inputs["tool_mask"] if "tool_mask" in inputs else mask

    def _hybrid_loss(self, model, inputs, mode: str) -> torch.Tensor:
        """alpha * TRL's dr_grpo loss + (1 - alpha) * its grpo loss, from one forward (``_loss_forward``).

        Everything TRL's loss does besides the reduction (KL, entropy bonus, router loss) is in both halves, so it
        counts once in the mix. The second pass must leave the trainer as the first left it: attributes it rebinds
        (the adaptive entropy controller) are put back, and each metric it logs is mixed with the first's (equal
        where the metric does not depend on the reduction).
        """
        alpha, metrics, trl_loss_type = self.args.hybrid_alpha, self._metrics[mode], self.loss_type
        lengths = {key: len(values) for key, values in metrics.items()}
        before = dict(vars(self))
        self.loss_type = HYBRID_LOSS_TYPES[0]
        first = super()._compute_loss(model, inputs)
        after_first = dict(vars(self))
        for key, value in after_first.items():  # undo what the first pass rebound: the second starts alike
            if key not in before:
                delattr(self, key)
            elif value is not before[key]:
                setattr(self, key, before[key])
        first_logged = {key: values[lengths.get(key, 0):] for key, values in metrics.items()}
        for key, values in first_logged.items():
            del metrics[key][lengths.get(key, 0):]
        self.loss_type = HYBRID_LOSS_TYPES[1]
        second = super()._compute_loss(model, inputs)
        for key, value in after_first.items():  # the state after one pass, as the first left it
            setattr(self, key, value)
        self.loss_type = trl_loss_type
        for key, values in metrics.items():
            start = lengths.get(key, 0)
            mixed = [alpha * a + (1 - alpha) * b for a, b in zip(first_logged.get(key, []), values[start:])]
            values[start:] = mixed
        return alpha * first + (1 - alpha) * second
