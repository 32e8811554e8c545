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
from countdown_rl.training import evaluation, rollouts, sampling, shared_prompt
from countdown_rl.training.config import HYBRID_LOSS_TYPES, CountdownGRPOConfig

__all__ = ["PER_COMPLETION_KEYS", "CountdownGRPOConfig", "CountdownGRPOTrainer", "full_batch_scale"]

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
        super().__init__(*args, **kwargs)
        # None or a plain GRPOConfig: TRL's run, our hooks idle (but for the prompt-once log-probs, our default: the
        # same pass up to float rounding)
        if not isinstance(self.args, CountdownGRPOConfig):
            self.args = CountdownGRPOConfig.from_trl(self.args)
        if self.args.shared_prompt_forward and getattr(self.args, "_shared_prompt_given", False):
            reason = self._plain_pass_reason()  # asked for explicitly: a run that cannot do it refuses
            if reason is not None:
                raise ValueError(f"shared_prompt_forward: true cannot run here: {reason}; leave it unset (the plain "
                                 "pass then runs and the run record says why) or set it false")
        self.task = task
        self._gathered_rewards_per_func: torch.Tensor | None = None
        self._loss_forward: list | None = None  # the policy forward of the _compute_loss under way (hybrid reuses it)
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
        budget = self.args.completion_budget(self.state.global_step)
        self._set_completion_budget(budget)
        if self.environment_factories is None:  # an environment's reset() gets the rows: leave them as they are
            inputs = [{**example, BUDGET_COLUMN: budget} for example in inputs]  # reward functions see the budget
        output = super()._generate_and_score_completions(inputs)
        output[BUDGET_COLUMN] = [budget] * len(inputs)  # a per-row list: split and shuffled with the rollout
        mode = "train" if self.model.training else "eval"
        group_size = self.num_generations if mode == "train" else self.num_generations_eval
        rewards_per_func = self._gathered_rewards_per_func
        weights = self.reward_weights.to(rewards_per_func.device).unsqueeze(0)
        rewards = (rewards_per_func * weights).nansum(dim=1)
        rewards[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan  # unscorable: out of the baseline
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
        if isinstance(dataset, str):  # one of a dict of eval datasets, by name (transformers' loop over the dict)
            dataset = self.eval_dataset[dataset]
        columns = () if isinstance(dataset, dict) else getattr(dataset, "column_names", None) or ()
        if not self._has_task_columns(columns):  # no task, a dict (TRL loops, calling back here), no task columns
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
        result = None
        if self.args.shared_prompt_forward and self._can_share_prompts(compute_aux_loss, multimodal):
            result = self._shared_prompt_pass(model, input_ids, attention_mask, logits_to_keep, batch_size,
                                              compute_entropy)
        if result is None:
            result = super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, compute_aux_loss,
                **multimodal)
        if memo is not None:  # the loss's own forward (None: the old and reference log-probs)
            memo.append(result)
        return result

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
    def log_prob_pass(self) -> str:
        """What the log-prob passes run, for the run record (``extra["log_prob_pass"]``): ``"prompt-once"``,
        ``"plain"`` (the flag off) or ``"plain (why)"``."""
        if not self.args.shared_prompt_forward:
            return "plain"
        reason = self._plain_pass_reason()
        if reason is not None:
            return f"plain ({reason})"
        if self.aux_loss_enabled:
            return "prompt-once (the loss's own forward plain: a MoE router loss is computed over the whole rows)"
        return "prompt-once"

    def _can_share_prompts(self, compute_aux_loss: bool, multimodal: dict) -> bool:
        """Whether this pass can run prompt-once; where not, the plain pass runs and the log says why, once."""
        reason = self._plain_pass_reason()
        if reason is None and compute_aux_loss:
            reason = "a MoE router loss is computed over the whole rows"
        elif reason is None and any(value is not None for value in multimodal.values()):
            reason = "multimodal inputs"
        if reason and not getattr(self, "_shared_prompt_fallback_said", False):
            logger.warning("shared_prompt_forward: the plain log-prob pass runs instead (%s)", reason)
            self._shared_prompt_fallback_said = True
        return reason is None

    def _shared_prompt_pass(self, model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy):
        """:func:`countdown_rl.training.shared_prompt.shared_prompt_logps` over TRL's row chunks; None: nothing
        shared."""
        batch_size = batch_size or input_ids.size(0)
        inner = getattr(model, "module", model)  # DDP's module: the prompt pass is not a forward DDP must see
        logps, entropies = [], []
        for start in range(0, input_ids.size(0), batch_size):
            rows = slice(start, start + batch_size)
            with self.accelerator.autocast():
                chunk = shared_prompt.shared_prompt_logps(model, input_ids[rows], attention_mask[rows],
                                                          logits_to_keep, compute_entropy, prompt_model=inner)
            if chunk is None:
                return None
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
