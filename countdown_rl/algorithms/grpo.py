"""GRPO and Dr.GRPO maths as small pure functions (torch only).

One GRPO step, for a batch of prompts each answered ``group_size`` times:

1. Score every completion: a scalar reward r_i (NaN marks a completion no reward function could score).
2. Advantages per group: A_i = r_i - mean(group) (the baseline; or no baseline at all: plain REINFORCE), then
   divided by (std + eps) for GRPO, left as is for Dr.GRPO. std is the *unbiased* (n - 1) standard deviation, as
   ``torch.std`` and TRL use, over the group or over the whole batch. A group scored all alike gets exactly 0.
3. Per-token clipped surrogate: ratio_t = exp(logp_new - logp_old), loss_t = -min(A * ratio_t, A * clip(ratio_t)).
4. Reduce the (B, T) token losses to one scalar over the response mask:
   - ``masked_mean``: mean over each response's tokens, then over the batch (GRPO; short responses weigh more per
     token);
   - ``masked_mean_drgrpo``: sum over all response tokens / (num_tokens * B) with a constant num_tokens (Dr.GRPO;
     every token weighs the same);
   - ``token_mean``: sum over all response tokens / their count (DAPO/BNPO);
   - ``hybrid``: alpha * drgrpo + (1 - alpha) * masked_mean.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import torch

Baseline = Literal["group_mean", "none"]
StdNormalization = Literal["group", "batch", "none"]
Reduction = Literal["masked_mean", "masked_mean_drgrpo", "token_mean", "hybrid"]

BASELINES: tuple[str, ...] = ("group_mean", "none")
STD_NORMALIZATIONS: tuple[str, ...] = ("group", "batch", "none")
REDUCTIONS: tuple[str, ...] = ("masked_mean", "masked_mean_drgrpo", "token_mean", "hybrid")


def _nanstd(x: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Unbiased (n - 1) standard deviation ignoring NaNs; NaN where fewer than two values remain (as TRL)."""
    valid = ~torch.isnan(x)
    count = valid.sum() if dim is None else valid.sum(dim=dim)
    mean = torch.nanmean(x) if dim is None else torch.nanmean(x, dim=dim, keepdim=True)
    squares = torch.nansum((x - mean) ** 2) if dim is None else torch.nansum((x - mean) ** 2, dim=dim)
    std = torch.sqrt(squares / (count - 1).clamp(min=1))
    return torch.where(count > 1, std, torch.full_like(std, float("nan")))


def group_advantages(
    rewards: torch.Tensor,
    group_size: int,
    *,
    baseline: Baseline = "group_mean",
    std_normalization: StdNormalization = "group",
    advantage_eps: float = 1e-4,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Advantages from flat rewards laid out in consecutive groups of ``group_size``.

    NaN rewards (unscorable completions) are left out of the group statistics and get advantage 0.
    ``std_normalization``: "group" (GRPO), "batch" (one std over all rewards) or "none" (Dr.GRPO).

    >>> adv, stats = group_advantages(torch.tensor([1.0, 0.0, 0.5, 0.5]), 2, std_normalization="none")
    >>> adv.tolist(), stats["frac_zero_std_groups"]
    ([0.5, -0.5, 0.0, 0.0], 0.5)
    """
    if rewards.dim() != 1:
        raise ValueError(f"rewards must be a flat (N,) tensor, got shape {tuple(rewards.shape)}")
    if group_size < 1 or rewards.numel() % group_size != 0:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of group_size={group_size}")
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be one of {BASELINES}, got {baseline!r}")
    if std_normalization not in STD_NORMALIZATIONS:
        raise ValueError(f"std_normalization must be one of {STD_NORMALIZATIONS}, got {std_normalization!r}")

    grouped = rewards.view(-1, group_size)
    group_std = _nanstd(grouped, dim=1) if group_size > 1 else torch.zeros(grouped.size(0), dtype=rewards.dtype)
    if baseline == "group_mean":
        centred = grouped - torch.nanmean(grouped, dim=1, keepdim=True)
        # A group scored all alike has nothing to learn from, but its mean's rounding (eight float32 0.1s average
        # to 0.10000001) divided by std + eps ~ 1e-4 would give every sample an advantage of ~1e-4: exactly 0.
        valid = ~torch.isnan(grouped)
        top = torch.where(valid, grouped, float("-inf")).amax(dim=1, keepdim=True)
        bottom = torch.where(valid, grouped, float("inf")).amin(dim=1, keepdim=True)
        centred = torch.where(top == bottom, torch.zeros_like(centred), centred)
    else:
        centred = grouped
    if std_normalization == "group":
        centred = centred / (group_std.unsqueeze(1) + advantage_eps)
    elif std_normalization == "batch":
        batch_std = _nanstd(rewards) if rewards.numel() > 1 else rewards.new_zeros(())
        centred = centred / (batch_std + advantage_eps)
    advantages = torch.nan_to_num(centred.reshape(-1), nan=0.0)
    return advantages, advantage_stats(advantages, rewards, group_size)


def advantage_stats(advantages: torch.Tensor, rewards: torch.Tensor, group_size: int) -> dict[str, float]:
    """The share of groups scored all alike and the mean, std, min and max of flat ``advantages`` (any source).

    >>> stats = advantage_stats(torch.tensor([0.5, -0.5, 0.0, 0.0]), torch.tensor([1.0, 0.0, 0.5, 0.5]), 2)
    >>> stats["frac_zero_std_groups"], stats["max"]
    (0.5, 0.5)
    """
    grouped = rewards.view(-1, group_size)
    group_std = _nanstd(grouped, dim=1) if group_size > 1 else torch.zeros(grouped.size(0), dtype=rewards.dtype)
    zero_std = torch.isclose(torch.nan_to_num(group_std, nan=0.0), torch.zeros_like(group_std))
    spread = advantages.std() if advantages.numel() > 1 else advantages.new_zeros(())
    values = torch.stack([zero_std.float().mean().to(advantages.dtype), advantages.mean(), spread, advantages.min(),
                          advantages.max()])
    return dict(zip(("frac_zero_std_groups", "mean", "std", "min", "max"), values.tolist()))  # one device sync


def learning_rows(advantages: torch.Tensor) -> torch.Tensor:
    """Indices of the rows whose advantage is not zero: with no KL term only they move the policy.

    Row 0 stands in when every advantage is zero, so that a backward pass (and DDP's gradient sync) still runs.

    >>> learning_rows(torch.tensor([0.0, 1.2, 0.0, -0.4])).tolist(), learning_rows(torch.zeros(3)).tolist()
    ([1, 3], [0])
    """
    rows = advantages.reshape(advantages.size(0), -1).ne(0).any(dim=1).nonzero().flatten()
    return rows if rows.numel() else rows.new_zeros(1)


def compute_group_normalized_advantages(
    rollout_responses: Sequence[str],
    repeated_ground_truths: Sequence[dict[str, Any]],
    reward_fn: Callable[[str, dict[str, Any]], float],
    group_size: int,
    advantage_eps: float,
    normalize_by_std: bool,
) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """Score responses and normalise their rewards within groups (the reference setup's signature).

    Groups are consecutive blocks of ``group_size`` responses to the same prompt. Advantages are
    ``r - mean(group)``, divided by ``(std(group) + advantage_eps)`` when ``normalize_by_std`` (GRPO) and not
    divided otherwise (Dr.GRPO); std is the unbiased (n - 1) estimate, as in ``torch.std`` and TRL.
    Returns flat ``advantages`` and ``raw_rewards`` of length n_prompts * group_size, and the ``mean``, ``std``,
    ``max``, ``min`` of the raw rewards.

    >>> adv, raw, meta = compute_group_normalized_advantages(
    ...     ["a", "b"], [{"t": "a"}] * 2, lambda r, gt: float(r == gt["t"]), 2, 1e-6, False)
    >>> adv.tolist(), meta["mean"].item()
    ([0.5, -0.5], 0.5)
    """
    if len(rollout_responses) != len(repeated_ground_truths):
        raise ValueError(
            f"{len(rollout_responses)} responses but {len(repeated_ground_truths)} ground truths: "
            "repeat each ground truth group_size times"
        )
    raw_rewards = torch.tensor(
        [float(reward_fn(r, gt)) for r, gt in zip(rollout_responses, repeated_ground_truths)], dtype=torch.float32
    )
    advantages, _ = group_advantages(
        raw_rewards,
        group_size,
        std_normalization="group" if normalize_by_std else "none",
        advantage_eps=advantage_eps,
    )
    metadata = {
        "mean": raw_rewards.mean(),
        "std": raw_rewards.std() if raw_rewards.numel() > 1 else torch.tensor(0.0),
        "max": raw_rewards.max(),
        "min": raw_rewards.min(),
    }
    return advantages, raw_rewards, metadata


def compute_loss(
    advantages: torch.Tensor,
    policy_log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    clip_range: float,
    clip_range_high: float | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Per-token PPO clipped surrogate ``-min(A * ratio, A * clip(ratio, 1 - eps, 1 + eps_high))``.

    ``advantages`` of shape (B,) are broadcast over the T tokens (a (B, T) tensor is used as is);
    ``ratio = exp(policy_log_probs - old_log_probs)``. ``clip_range_high`` defaults to ``clip_range``
    (set it higher for DAPO's clip-higher). Metadata: ``ratio`` (with grad, for a bias-corrected KL),
    ``is_low_clipped``/``is_high_clipped`` (where the clip bound is active) and ``clip_fraction`` over all tokens.

    >>> loss, meta = compute_loss(torch.tensor([1.0]), torch.tensor([[0.5]]), torch.tensor([[0.0]]), 0.2)
    >>> round(loss.item(), 4), meta["clip_fraction"].item()
    (-1.2, 1.0)
    """
    high = clip_range if clip_range_high is None else clip_range_high
    adv = advantages.unsqueeze(1) if advantages.dim() == 1 else advantages
    ratio = torch.exp(policy_log_probs - old_log_probs)
    clipped_ratio = torch.clamp(ratio, 1 - clip_range, 1 + high)
    per_token_loss = -torch.min(ratio * adv, clipped_ratio * adv)
    is_low_clipped = (ratio < 1 - clip_range) & (adv < 0)
    is_high_clipped = (ratio > 1 + high) & (adv > 0)
    metadata = {
        "ratio": ratio,
        "is_low_clipped": is_low_clipped,
        "is_high_clipped": is_high_clipped,
        "clip_fraction": (is_low_clipped | is_high_clipped).float().mean(),
    }
    return per_token_loss, metadata


def k3_kl(policy_log_probs: torch.Tensor, ref_log_probs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimator of KL(policy || ref): ``exp(ref - new) - (ref - new) - 1`` (>= 0).

    >>> k3_kl(torch.tensor([0.0]), torch.tensor([0.0])).item()
    0.0
    """
    diff = ref_log_probs - policy_log_probs
    return torch.exp(diff) - diff - 1


def masked_mean(tensor: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over each sequence's response tokens, then mean over the batch (GRPO's length normalisation).

    A row with no response tokens contributes 0 (and still counts in the batch mean).

    >>> masked_mean(torch.tensor([[1.0, 1.0], [4.0, 0.0]]), torch.tensor([[1, 1], [1, 0]]))
    tensor(2.5000)
    """
    mask = mask.to(tensor.dtype)
    per_sequence = (tensor * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)
    return per_sequence.mean()


def masked_mean_drgrpo(tensor: torch.Tensor, mask: torch.Tensor, num_tokens: int) -> torch.Tensor:
    """Dr.GRPO reduction: sum over response tokens divided by the constant ``num_tokens * B``.

    >>> masked_mean_drgrpo(torch.tensor([[1.0, 1.0], [4.0, 0.0]]), torch.tensor([[1, 1], [1, 0]]), 2)
    tensor(1.5000)
    """
    if num_tokens <= 0:
        raise ValueError(f"num_tokens must be positive, got {num_tokens}")
    return (tensor * mask.to(tensor.dtype)).sum() / (num_tokens * tensor.size(0))


def token_mean(tensor: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Token-level mean over every response token of the batch (DAPO/BNPO style).

    >>> token_mean(torch.tensor([[1.0, 1.0], [4.0, 0.0]]), torch.tensor([[1, 1], [1, 0]]))
    tensor(2.)
    """
    mask = mask.to(tensor.dtype)
    return (tensor * mask).sum() / mask.sum().clamp(min=1.0)


def hybrid_mean(tensor: torch.Tensor, mask: torch.Tensor, num_tokens: int, alpha: float) -> torch.Tensor:
    """``alpha * masked_mean_drgrpo + (1 - alpha) * masked_mean``; alpha in [0, 1] is the user's choice.

    >>> hybrid_mean(torch.tensor([[1.0, 1.0], [4.0, 0.0]]), torch.tensor([[1, 1], [1, 0]]), 2, 0.5)
    tensor(2.)
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"hybrid alpha must be in [0, 1], got {alpha}")
    return alpha * masked_mean_drgrpo(tensor, mask, num_tokens) + (1 - alpha) * masked_mean(tensor, mask)


def reduce_loss(
    per_token_loss: torch.Tensor,
    mask: torch.Tensor,
    reduction: Reduction,
    *,
    num_tokens: int | None = None,
    alpha: float | None = None,
) -> torch.Tensor:
    """Apply the named reduction (see the module docstring) to a (B, T) loss.

    >>> reduce_loss(torch.ones(2, 3), torch.ones(2, 3), "masked_mean_drgrpo", num_tokens=6)
    tensor(0.5000)
    """
    if reduction == "masked_mean":
        return masked_mean(per_token_loss, mask)
    if reduction == "token_mean":
        return token_mean(per_token_loss, mask)
    if num_tokens is None:
        raise ValueError(f"reduction {reduction!r} needs num_tokens")
    if reduction == "masked_mean_drgrpo":
        return masked_mean_drgrpo(per_token_loss, mask, num_tokens)
    if reduction == "hybrid":
        if alpha is None:
            raise ValueError("reduction 'hybrid' needs alpha")
        return hybrid_mean(per_token_loss, mask, num_tokens, alpha)
    raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
