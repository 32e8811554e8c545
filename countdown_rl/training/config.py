"""``CountdownGRPOConfig``: TRL's ``GRPOConfig`` plus the GRPO / Dr.GRPO, generation-backend and budget keys.

1. ``algorithm`` is a preset (:mod:`countdown_rl.algorithms.presets`); ``reduction`` and ``std_normalization``
   override it; TRL's ``loss_type`` and ``scale_rewards`` are derived from them (set explicitly they must agree).
2. ``generation_backend`` is settled against TRL's own keys (``use_vllm``, continuous batching) from the backend
   registry (:mod:`countdown_rl.generation.backends`): unset, it follows TRL's keys; set, it sets them.
3. TRL options whose code paths :class:`countdown_rl.training.trainer.CountdownGRPOTrainer` does not reproduce
   are refused. Every error is one line naming the keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trl import GRPOConfig

from countdown_rl.algorithms import grpo as grpo
from countdown_rl.algorithms.curriculum import budget_at, parse_budget_schedule, shuffle_for_order
from countdown_rl.algorithms.presets import ALGORITHMS
from countdown_rl.generation.backends import BACKENDS, backend_names

__all__ = ["REDUCTION_TO_LOSS_TYPE", "UNSUPPORTED_TRL_OPTIONS", "CountdownGRPOConfig", "reconcile_backend_keys"]

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
            "choices": [*backend_names(), None],
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
        buckets = self.generation_prompt_buckets
        if buckets is not None and (not buckets or min(buckets) <= 0):
            raise ValueError(f"generation_prompt_buckets must be positive token counts, got {buckets}")
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
