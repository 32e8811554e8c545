"""``CountdownGRPOConfig``: TRL's ``GRPOConfig`` plus the GRPO / Dr.GRPO, generation-backend and budget keys.

Every ``GRPOConfig`` field keeps TRL's meaning; with none of our keys set the run is stock TRL's. Where one of our
keys and one of TRL's decide the same thing, one rule decides:

1. ``reduction`` and TRL's ``loss_type`` are one decision under two names: ``masked_mean`` = ``grpo``,
   ``masked_mean_drgrpo`` = ``dr_grpo``, ``token_mean`` = ``bnpo`` (their twins); ``hybrid`` mixes TRL's
   ``dr_grpo`` and ``grpo`` losses; TRL's other loss types (``dapo``, ``luspo``, ``cispo``, ``sapo``, ``vespo``) carry
   their own reduction. ``std_normalization`` and TRL's ``scale_rewards`` are one decision too (same values).
   Set either name; set both, they must agree (a clash is one line naming both keys).
2. ``algorithm`` is a preset (:mod:`countdown_rl.algorithms.presets`): it fills in the reduction and the std
   normalisation you leave unset, under either name. Unset as well: TRL's defaults (``dapo``, ``group``).
3. Our advantages (``grpo.group_advantages``: exact zeros for a tied group, ``baseline``, ``advantage_eps``) replace
   TRL's once one of ``algorithm``, ``std_normalization``, ``baseline``, ``advantage_eps`` or
   ``skip_zero_advantage`` is set; TRL's ``normalize_then_sum`` (GDPO) computes its own and takes none of them.
4. A combination that cannot hold is refused in one line saying why (``skip_zero_advantage`` with a KL term, an
   entropy bonus or entropy filtering; our reduction with a loss type that carries its own).
5. ``generation_backend`` is settled against TRL's own keys (``use_vllm``, continuous batching) from the backend
   registry (:mod:`countdown_rl.generation.backends`): unset, it follows TRL's keys; set, it sets them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from trl import GRPOConfig

from countdown_rl.algorithms import grpo as grpo
from countdown_rl.algorithms.curriculum import budget_at, parse_budget_schedule, shuffle_for_order
from countdown_rl.algorithms.presets import ALGORITHMS
from countdown_rl.generation.backends import BACKENDS, backend_names

__all__ = ["HYBRID_LOSS_TYPES", "REDUCTION_TO_LOSS_TYPE", "TRL_LOSS_TYPES", "VLLM_DTYPES", "CountdownGRPOConfig",
           "reconcile_backend_keys"]

# TRL 1.16's loss types (GRPOConfig.loss_type's help; tests/training/test_trl_pin.py checks the list)
TRL_LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo", "luspo", "cispo", "sapo", "vespo")
# our reduction -> the TRL loss_type that reduces the same way (its twin)
REDUCTION_TO_LOSS_TYPE = {"masked_mean": "grpo", "masked_mean_drgrpo": "dr_grpo", "token_mean": "bnpo"}
# vllm_dtype's values (vLLM's names); unset, the trainer takes the run's precision (generation.vllm_settings)
VLLM_DTYPES = ("auto", "float32", "bfloat16", "float16")
LOSS_TYPE_TO_REDUCTION = {loss_type: reduction for reduction, loss_type in REDUCTION_TO_LOSS_TYPE.items()}
# hybrid = alpha * TRL's first loss + (1 - alpha) * its second; loss_type then names the second (the clip family)
HYBRID_LOSS_TYPES = ("dr_grpo", "grpo")
_TRL_DEFAULT = {f.name: f.default for f in fields(GRPOConfig) if f.name in ("loss_type", "scale_rewards")}
# our keys that make our advantages replace TRL's (rule 3)
_ADVANTAGE_KEYS = ("algorithm", "std_normalization", "baseline", "advantage_eps")


@dataclass
class CountdownGRPOConfig(GRPOConfig):
    """GRPOConfig plus the GRPO / Dr.GRPO knobs of countdown-rl (the rules: module docstring).

    ``algorithm`` is a preset; ``reduction`` / ``loss_type`` and ``std_normalization`` / ``scale_rewards``, set under
    either name, override it. With none of ours set, TRL's defaults and TRL's own advantages stand.

    >>> cfg = CountdownGRPOConfig(output_dir="/tmp/x", algorithm="dr_grpo", use_cpu=True, report_to="none")
    >>> cfg.reduction, cfg.std_normalization, cfg.loss_type, cfg.scale_rewards
    ('masked_mean_drgrpo', 'none', 'dr_grpo', 'none')
    >>> cfg = CountdownGRPOConfig(output_dir="/tmp/x", use_cpu=True, report_to="none")
    >>> cfg.reduction, cfg.loss_type, cfg.scale_rewards, cfg.algorithm_label
    (None, 'dapo', 'group', 'dapo')
    """

    algorithm: str | None = field(
        default=None,
        metadata={
            "help": "Preset: 'grpo' (std-normalised advantages, per-sequence masked_mean) or 'dr_grpo' "
            "(mean-only advantages, constant-normalised sum); it fills in reduction and std_normalization (or "
            "their TRL names loss_type and scale_rewards) where those are unset. Default: none, TRL's own defaults.",
            "choices": list(ALGORITHMS),
        },
    )
    reduction: str | None = field(
        default=None,
        metadata={
            "help": "Loss reduction: 'masked_mean' (TRL's loss_type 'grpo'), 'masked_mean_drgrpo' ('dr_grpo'), "
            "'token_mean' ('bnpo') or 'hybrid' (alpha * TRL's dr_grpo loss + (1 - alpha) * its grpo loss). Set this "
            "or loss_type (both: they must agree). Default: the algorithm's, else loss_type's twin (None for TRL's "
            "loss types with a reduction of their own: dapo, luspo, cispo, sapo, vespo).",
            "choices": list(grpo.REDUCTIONS),
        },
    )
    drgrpo_num_tokens: int | None = field(
        default=None,
        metadata={"help": "Dr.GRPO's constant normaliser (tokens per sequence). Default: the rollout's completion "
                  "budget, i.e. max_completion_length (TRL's dr_grpo constant), or with budget_schedule the budget "
                  "the rollout was generated with (a full-budget sequence then weighs as much at every stage); set it "
                  "to keep one constant for the whole run."},
    )
    hybrid_alpha: float | None = field(
        default=None,
        metadata={
            "help": "Weight of the Dr.GRPO term in the 'hybrid' reduction: alpha * drgrpo + (1 - alpha) * "
            "masked_mean. Required with reduction='hybrid'."
        },
    )
    baseline: str | None = field(
        default=None,
        metadata={
            "help": "Advantage baseline: 'group_mean' (GRPO, TRL's) or 'none' (plain REINFORCE on raw rewards). "
            "Default: group_mean.",
            "choices": list(grpo.BASELINES),
        },
    )
    std_normalization: str | None = field(
        default=None,
        metadata={
            "help": "Divide advantages by the reward std of the 'group', of the whole 'batch', or 'none' (TRL's "
            "scale_rewards under our name: set either; both must agree). Default: the algorithm's, else "
            "scale_rewards, else TRL's 'group'.",
            "choices": list(grpo.STD_NORMALIZATIONS),
        },
    )
    advantage_eps: float | None = field(
        default=None,
        metadata={"help": "Added to the std before dividing. Default: 1e-4 (the value TRL hard-codes)."},
    )
    skip_zero_advantage: bool = field(
        default=False,
        metadata={"help": "Leave the completions whose advantage is exactly 0 (every sample of their group scored "
                  "alike) out of the loss's forward and backward. Without a KL term or an entropy bonus they add "
                  "nothing to the gradient, so the update is the same for every loss type (they still count in the "
                  "reduction's denominators) and the training step is cheaper by their share. The entropy and "
                  "clip-ratio logs (and a MoE router's auxiliary loss) then cover the trained completions only; "
                  "`skipped_completions` logs the share skipped. Needs beta 0, no entropy bonus and no "
                  "top_entropy_quantile filter (its quantile is taken over every completion)."},
    )
    shared_prompt_forward: bool | None = field(
        default=None,
        metadata={"help": "Run each distinct prompt of a micro-batch through the model once in the log-prob passes "
                  "(policy with gradients, old policy, reference model), its completions against its cached keys and "
                  "values (countdown_rl.training.shared_prompt): the same log-probs and gradients within float "
                  "rounding, the prompt's share of the work done once per group instead of G times. Only rows of "
                  "one prompt in one micro-batch share (see group_micro_batches); a micro-batch where every prompt "
                  "is distinct runs the plain pass. Unset (the default): on where a measured row shows a gain, the "
                  "CPU and a GPU with gradient checkpointing (full fine-tuning); off on a GPU without checkpointing "
                  "or with LoRA (measured slower: more kernel launches) and on devices not measured. Where it cannot "
                  "run (reentrant gradient checkpointing, FSDP or DeepSpeed, a model whose cache holds other than "
                  "attention layers; per pass: active dropout, whose mask the rows of a group would share over the "
                  "prompt, a MoE router loss, multimodal inputs) the plain pass runs and the log and the run record "
                  "say why. true: on, and a run where it cannot run refuses at the start. false: TRL's plain pass. "
                  "The run record's extra.log_prob_passes counts what each pass ran."},
    )
    trl_eval_metrics: bool = field(
        default=False,
        metadata={"help": "With a task's evaluation set (the task's columns), the evaluation scores greedy completions "
                  "by the task (eval_accuracy, eval_partial, eval_failed, eval_mean_completion_tokens); true also "
                  "runs TRL's evaluation beside it (eval_loss, eval_reward, eval_rewards/..., over "
                  "num_generations_eval sampled completions per prompt, several times the task's cost), its metrics "
                  "in the same evaluation. A metric_for_best_model (or load_best_model_at_end's eval_loss) that the "
                  "evaluation will not compute is refused when the trainer is built. Without a task's evaluation "
                  "set TRL's evaluation runs as usual."},
    )
    group_micro_batches: bool = field(
        default=False,
        metadata={"help": "Split each generation batch into micro-batches that keep a prompt's completions together "
                  "(groups in the order TRL's shuffle reaches them) instead of TRL's row shuffle, so that prompt-once "
                  "(shared_prompt_forward) runs each prompt once per micro-batch instead of once per row. The update "
                  "is TRL's: every micro-batch of a generation batch feeds the same optimizer step and the loss sums "
                  "per-row terms. Refused where that does not hold: steps_per_generation not dividing "
                  "gradient_accumulation_steps (a generation batch spread over optimizer steps), loss_type bnpo "
                  "(token_mean: divides by each micro-batch's tokens), an entropy bonus or top_entropy_quantile < 1 "
                  "(per micro-batch)."},
    )
    dynamic_sampling: bool = field(
        default=False,
        metadata={"help": "DAPO's dynamic sampling: fill each training generation batch with groups whose rewards "
                  "differ. Round 1 is TRL's batch; while it holds fewer such groups than dynamic_sampling_min_groups, "
                  "more prompts are drawn (a seeded order of the training rows, seed + 1) and scored, up to "
                  "dynamic_sampling_max_rounds rounds; each process keeps whole groups, differing ones first, so the "
                  "batch keeps its shape. A group differs by the task's outcome (some but not all of its completions "
                  "correct) where the trainer has a task whose columns the rows carry, else by the weighted summed "
                  "reward (two rewards further apart than 1e-6 relative). Where the cap is hit first the batch is "
                  "filled with groups scored all alike (advantage 0), said once in the log and counted in "
                  "dynamic_sampling/short. The reward, outcome and length metrics cover every drawn completion. "
                  "Needs per-group advantages (scale_rewards group or none, sum_then_normalize), beta 0, and each "
                  "process's rows (per_device_train_batch_size x steps_per_generation) a whole number of groups."},
    )
    dynamic_sampling_max_rounds: int = field(
        default=4,
        metadata={"help": "dynamic_sampling: the most generation rounds one generation batch may take (1: TRL's "
                  "batch only, no extra round; each round generates a generation batch's worth of prompts)."},
    )
    dynamic_sampling_min_groups: int | None = field(
        default=None,
        metadata={"help": "dynamic_sampling: the groups whose rewards differ that the generation batch must hold, "
                  "over all processes (at most generation_batch_size / num_generations). Default: all of them."},
    )
    loss_type: str | None = field(
        default=None,
        metadata={"help": f"TRL's loss type ({', '.join(TRL_LOSS_TYPES)}), with TRL's meaning. One decision with "
                  "`reduction` (grpo = masked_mean, dr_grpo = masked_mean_drgrpo, bnpo = token_mean): set either; "
                  "both must agree. Default: the reduction's twin, else TRL's 'dapo'."},
    )
    scale_rewards: str | None = field(
        default=None,
        metadata={
            "help": "TRL's reward scaling ('group' or true, 'batch', 'none' or false), with TRL's meaning: "
            "`std_normalization` under TRL's name (set either; both must agree). Default: std_normalization, "
            "else TRL's 'group'."
        },
    )

    generation_backend: str | None = field(
        default=None,
        metadata={
            "help": "'transformers' (TRL's plain generate), 'compiled' (static cache sized once + torch.compile'd "
            "decoding, prompts padded to buckets; falls back to plain generate where torch.compile cannot run) or "
            "'vllm' (the same as use_vllm: true). Default: 'vllm' when use_vllm is set, else 'transformers'. "
            "Setting both keys is fine when they agree; a clash is an error.",
            "choices": list(backend_names()),
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

    vllm_dtype: str | None = field(
        default=None,
        metadata={
            "help": "use_vllm, colocate mode: the dtype the colocated vLLM engine computes in ('float32', "
            "'bfloat16', 'float16', or vLLM's own 'auto'). Default: the run's precision: 'bfloat16' with bf16, "
            "'float16' with fp16, else 'float32' on a CPU (vLLM's 'auto' makes a float32 model bfloat16 on every "
            "x86 CPU, emulated and 15-60x slower where the CPU has no bf16 kernels) and 'auto' on a GPU.",
            "choices": list(VLLM_DTYPES),
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
        self.settle_countdown_keys()
        super().__post_init__()
        self._refuse_group_clashes()  # reads steps_per_generation, which TRL's __post_init__ settles
        self._refuse_dynamic_sampling_shapes()  # reads generation_batch_size, settled there too

    @classmethod
    def from_trl(cls, args: GRPOConfig) -> CountdownGRPOConfig:
        """A plain (already initialised) ``GRPOConfig`` as a ``CountdownGRPOConfig`` with none of our keys set.

        TRL's ``__post_init__`` is not run again (it is not idempotent); only our keys are settled.

        >>> trl_args = GRPOConfig(output_dir="/tmp/x", use_cpu=True, report_to="none", loss_type="dr_grpo")
        >>> ours = CountdownGRPOConfig.from_trl(trl_args)
        >>> ours.loss_type, ours.reduction, ours.algorithm_label
        ('dr_grpo', 'masked_mean_drgrpo', 'dr_grpo (std group)')
        """
        config = cls.__new__(cls)
        config.__dict__.update(vars(args))
        for f in fields(cls):
            if f.name not in config.__dict__:
                config.__dict__[f.name] = f.default
        config.settle_countdown_keys()
        return config

    def settle_countdown_keys(self) -> None:
        """Our part of ``__post_init__``: validate our keys and settle them against TRL's (module docstring)."""
        reconcile_backend_keys(self)  # generation_backend vs use_vllm / continuous batching / buckets
        if self.vllm_dtype is not None and self.vllm_dtype not in VLLM_DTYPES:
            raise ValueError(f"vllm_dtype must be one of {list(VLLM_DTYPES)}, got {self.vllm_dtype!r}")
        buckets = self.generation_prompt_buckets
        if buckets is not None and (not buckets or min(buckets) <= 0):
            raise ValueError(f"generation_prompt_buckets must be positive token counts, got {buckets}")
        if self.algorithm is not None and self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {sorted(ALGORITHMS)}, got {self.algorithm!r}")
        self._own_advantages = any(getattr(self, key) is not None for key in _ADVANTAGE_KEYS)
        if self.multi_objective_aggregation == "normalize_then_sum":
            given = [key for key in _ADVANTAGE_KEYS if getattr(self, key) is not None]
            if given:
                raise ValueError(f"multi_objective_aggregation='normalize_then_sum' computes GDPO's advantages "
                                 f"itself and takes no {given[0]}; unset it (reduction / loss_type still apply)")
        else:
            self._own_advantages = self._own_advantages or self.skip_zero_advantage
        self._settle_reduction()
        if self.multi_objective_aggregation != "normalize_then_sum":  # GDPO's advantages read none of these
            self._settle_std_normalization()
            self.baseline = self.baseline or "group_mean"
            self.advantage_eps = 1e-4 if self.advantage_eps is None else self.advantage_eps
            if self.baseline not in grpo.BASELINES:
                raise ValueError(f"baseline must be one of {list(grpo.BASELINES)}, got {self.baseline!r}")
            if self.advantage_eps < 0:
                raise ValueError(f"advantage_eps must be >= 0, got {self.advantage_eps}")
        if self.reduction == "hybrid":
            if self.hybrid_alpha is None or not 0.0 <= self.hybrid_alpha <= 1.0:
                raise ValueError(f"reduction 'hybrid' needs hybrid_alpha in [0, 1], got {self.hybrid_alpha}")
        elif self.hybrid_alpha is not None:
            raise ValueError(f"hybrid_alpha is set but reduction is {self.reduction!r}, not 'hybrid'")
        if self.drgrpo_num_tokens is not None:
            if self.drgrpo_num_tokens <= 0:
                raise ValueError(f"drgrpo_num_tokens must be positive, got {self.drgrpo_num_tokens}")
            if self.reduction not in ("masked_mean_drgrpo", "hybrid"):
                raise ValueError(f"drgrpo_num_tokens is Dr.GRPO's normaliser, but loss_type={self.loss_type!r} "
                                 "does not divide by it; unset it, or use reduction masked_mean_drgrpo or hybrid")
        self._refuse_skip_clashes()
        self._refuse_dynamic_sampling_clashes()
        if self.budget_schedule is not None:
            self.budget_schedule = parse_budget_schedule(self.budget_schedule, self.max_completion_length)
            fixed = sorted({"max_new_tokens", "max_tokens"} & set(self.generation_kwargs or {}))
            if fixed:
                raise ValueError(f"budget_schedule: generation_kwargs sets {fixed[0]}, which would fix the budget; "
                                 "remove it")
        # unset stays None: the trainer decides by device (training.trainer.prompt_once_default); true asked: refuse
        if self.shared_prompt_forward and self.gradient_checkpointing and (
                self.gradient_checkpointing_kwargs or {}).get("use_reentrant"):
            raise ValueError("shared_prompt_forward: true needs non-reentrant gradient checkpointing (the reentrant "
                             "kind passes no gradient to the cached prompt); set gradient_checkpointing_kwargs "
                             "{use_reentrant: false}, or leave shared_prompt_forward unset to run the plain pass")
        self._shuffle_dataset_given = self.shuffle_dataset is not None
        if self.shuffle_dataset is None:
            self.shuffle_dataset = True

    def _settle_reduction(self) -> None:
        """``reduction`` vs ``loss_type`` (rule 1), the preset filling in what is unset (rule 2)."""
        if self.reduction is not None and self.reduction not in grpo.REDUCTIONS:
            raise ValueError(f"reduction must be one of {list(grpo.REDUCTIONS)}, got {self.reduction!r}")
        if self.loss_type is not None and self.loss_type not in TRL_LOSS_TYPES:
            raise ValueError(f"loss_type must be one of TRL's {list(TRL_LOSS_TYPES)}, got {self.loss_type!r}")
        if self.reduction is not None and self.loss_type is not None:
            twin = REDUCTION_TO_LOSS_TYPE.get(self.reduction)
            if twin != self.loss_type:
                why = (f"which TRL calls loss_type={twin!r}" if twin else
                       f"which mixes TRL's {' and '.join(HYBRID_LOSS_TYPES)} losses")
                raise ValueError(f"loss_type={self.loss_type!r} clashes with reduction={self.reduction!r}, {why}; "
                                 "set one of them")
        elif self.loss_type is not None:
            self.reduction = LOSS_TYPE_TO_REDUCTION.get(self.loss_type)  # None: the loss type's own reduction
        elif self.reduction is None and self.algorithm is not None:
            self.reduction = ALGORITHMS[self.algorithm].reduction
        if self.loss_type is None:
            if self.reduction is None:
                self.loss_type = _TRL_DEFAULT["loss_type"]
            else:
                self.loss_type = REDUCTION_TO_LOSS_TYPE.get(self.reduction, HYBRID_LOSS_TYPES[-1])

    def _settle_std_normalization(self) -> None:
        """``std_normalization`` vs ``scale_rewards`` (rule 1), the preset filling in what is unset (rule 2)."""
        scale = {True: "group", False: "none"}.get(self.scale_rewards, self.scale_rewards)
        std = self.std_normalization
        for key, value in (("std_normalization", std), ("scale_rewards", scale)):
            if value is not None and value not in grpo.STD_NORMALIZATIONS:
                raise ValueError(f"{key} must be one of {list(grpo.STD_NORMALIZATIONS)}, got {value!r}")
        if std is not None and scale is not None and std != scale:
            raise ValueError(f"scale_rewards={self.scale_rewards!r} clashes with std_normalization={std!r} "
                             "(one setting under TRL's name and ours); set one of them")
        std = std or scale
        if std is None:
            std = ALGORITHMS[self.algorithm].std_normalization if self.algorithm else _TRL_DEFAULT["scale_rewards"]
        self.std_normalization = self.scale_rewards = std

    def _refuse_skip_clashes(self) -> None:
        """``skip_zero_advantage`` leaves rows out of the forward: refused where they would still move the update."""
        if not self.skip_zero_advantage:
            return
        if self.beta != 0.0:
            raise ValueError(f"skip_zero_advantage needs beta 0 (got beta={self.beta}): the KL term gives the "
                             "zero-advantage completions a gradient too")
        if self.entropy_coef != 0.0 or self.use_adaptive_entropy:
            raise ValueError("skip_zero_advantage needs no entropy bonus (entropy_coef 0, use_adaptive_entropy "
                             "false): the bonus gives the zero-advantage completions a gradient too")
        if self.top_entropy_quantile < 1.0:
            raise ValueError(f"skip_zero_advantage clashes with top_entropy_quantile={self.top_entropy_quantile}: "
                             "its entropy quantile is taken over every completion, skipped ones included")

    def _refuse_dynamic_sampling_clashes(self) -> None:
        """``dynamic_sampling`` drops groups: refused where a kept group's update would depend on the dropped ones."""
        if not self.dynamic_sampling:
            return
        if self.dynamic_sampling_max_rounds < 1:
            raise ValueError(f"dynamic_sampling_max_rounds must be >= 1 (1: no extra round), got "
                             f"{self.dynamic_sampling_max_rounds}")
        if self.dynamic_sampling_min_groups is not None and self.dynamic_sampling_min_groups < 1:
            raise ValueError(f"dynamic_sampling_min_groups must be >= 1 (unset: every group of the batch), got "
                             f"{self.dynamic_sampling_min_groups}")
        if self.multi_objective_aggregation == "normalize_then_sum":
            raise ValueError("dynamic_sampling needs per-group advantages, but multi_objective_aggregation "
                             "'normalize_then_sum' scales them by the whole batch's std; use sum_then_normalize")
        if self.scale_rewards == "batch":
            raise ValueError("dynamic_sampling needs per-group advantages, but scale_rewards / std_normalization "
                             "'batch' divides by the whole batch's std, dropped groups included; use group or none")
        if self.beta != 0.0:
            raise ValueError(f"dynamic_sampling needs beta 0 (got beta={self.beta}): a dropped group would still have "
                             "carried a KL gradient, so dropping it changes the update")

    def _refuse_dynamic_sampling_shapes(self) -> None:
        """``dynamic_sampling``'s batch shapes: whole groups per process, a target the batch can hold."""
        if not self.dynamic_sampling:
            return
        rows = self.per_device_train_batch_size * self.steps_per_generation
        if rows % self.num_generations:
            raise ValueError(f"dynamic_sampling keeps whole groups per process, but each process's rows "
                             f"(per_device_train_batch_size x steps_per_generation = {rows}) are not a multiple of "
                             f"num_generations={self.num_generations}, so a group is split across processes")
        groups = self.generation_batch_size // self.num_generations
        if (self.dynamic_sampling_min_groups or 0) > groups:
            raise ValueError(f"dynamic_sampling_min_groups={self.dynamic_sampling_min_groups} is more than the "
                             f"generation batch's {groups} groups (generation_batch_size / num_generations); lower it")

    def _refuse_group_clashes(self) -> None:
        """``group_micro_batches`` changes which rows share a micro-batch: refused where that changes the update."""
        if not self.group_micro_batches:
            return
        why = None
        if self.gradient_accumulation_steps % self.steps_per_generation:
            why = (f"steps_per_generation={self.steps_per_generation} does not divide gradient_accumulation_steps="
                   f"{self.gradient_accumulation_steps}, so a generation batch feeds more than one optimizer step")
        elif self.loss_type == "bnpo":
            why = "loss_type bnpo (token_mean) divides by each micro-batch's token count"
        elif self.entropy_coef != 0.0 or self.use_adaptive_entropy:
            why = "the entropy bonus is a mean over each micro-batch's tokens"
        elif self.top_entropy_quantile < 1.0:
            why = f"top_entropy_quantile={self.top_entropy_quantile} takes its quantile over each micro-batch"
        if why:
            raise ValueError(f"group_micro_batches would change the update: {why}; unset group_micro_batches")

    @property
    def algorithm_label(self) -> str:
        """What the loss and advantages are, for records and cards: the preset they equal, else TRL's loss type
        (or our reduction) and the std normalisation.

        >>> CountdownGRPOConfig(output_dir="/tmp/x", use_cpu=True, report_to="none", loss_type="grpo").algorithm_label
        'grpo'
        """
        loss = f"hybrid {self.hybrid_alpha}" if self.reduction == "hybrid" else self.loss_type
        if self.multi_objective_aggregation == "normalize_then_sum":
            return f"{loss} (GDPO advantages)"
        plain = self.baseline == "group_mean"
        for name, preset in ALGORITHMS.items():
            if plain and (preset.reduction, preset.std_normalization) == (self.reduction, self.std_normalization):
                return name
        if plain and self.reduction is None and self.std_normalization == _TRL_DEFAULT["scale_rewards"]:
            return loss
        baseline = "" if plain else f", baseline {self.baseline}"
        return f"{loss} (std {self.std_normalization}{baseline})"

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


def reconcile_backend_keys(config) -> None:
    """``CountdownGRPOConfig.__post_init__``: settle ``generation_backend`` against TRL's keys (one-line errors).

    Unset, the backend is the one whose TRL keys are set (``use_vllm`` -> ``vllm``), else ``transformers``; a
    backend sets its TRL keys (``vllm`` sets ``use_vllm``). A TRL key of another backend, a TRL flag the backend
    clashes with (``compiled`` and continuous batching), or a key only another backend reads are errors.
    """
    selected = [name for name, b in BACKENDS.items()
                if b.trl_keys and all(getattr(config, key) == value for key, value in b.trl_keys.items())]
    backend = config.generation_backend or (selected[0] if selected else "transformers")
    if backend not in BACKENDS:
        raise ValueError(f"generation_backend must be one of {list(backend_names())}, got {backend!r}")
    chosen = BACKENDS[backend]
    for other in selected:
        if other != backend:
            keys = ", ".join(f"{key}={value!r}" for key, value in BACKENDS[other].trl_keys.items())
            raise ValueError(f"{keys} clashes with generation_backend={backend!r}; set one of them "
                             f"(generation_backend: {other} is the same as {keys})")
    for key in chosen.clashes:
        if getattr(config, key, False):
            raise ValueError(f"generation_backend={backend!r} clashes with {key}; use one of them")
    for name, other in BACKENDS.items():
        for key in other.own_keys:
            if name != backend and getattr(config, key, None) is not None:
                raise ValueError(f"{key} is only used by generation_backend {name!r}, not {backend!r}")
    config.generation_backend = backend
    for other in BACKENDS.values():  # TRL's keys say the chosen backend and no other
        for key, value in other.trl_keys.items():
            setattr(config, key, chosen.trl_keys.get(key, type(value)()))
