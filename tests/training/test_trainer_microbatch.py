"""The GR-REINFORCE study's claim, tested directly: at one effective batch, the micro-batch size changes nothing.

One optimizer step of ``CountdownGRPOTrainer`` on one rollout of 16 completions (2 prompts x 8), split into
micro-batches of 2 x 8 accumulation steps, 4 x 4 and 16 x 1: the same seed gives the same completions and rewards,
and the accumulated gradient and the updated weights must agree up to float rounding, for GRPO's per-sequence
``masked_mean`` and Dr.GRPO's constant normaliser, on-policy (num_iterations 1) and on the second pass of a
reused rollout (num_iterations 2, where the importance ratio and clipping are live). The sweep
``benchmarks/gr_reinforce_study.py`` (``micro_batch``) shows the same over 100 rollouts.
"""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback

from countdown_rl.tasks import get_task
from countdown_rl.training.trainer import CountdownGRPOConfig, CountdownGRPOTrainer

pytestmark = pytest.mark.comparison  # CI runs it again under another processor's kernels

# AdamW's defaults here (TrainingArguments'): eps 1e-8, betas (0.9, 0.999), no weight decay.
ADAM_EPS = 1e-8
LEARNING_RATE = 1e-3


def even_token_reward(completions, completion_ids, **kwargs):
    """A dense toy reward (share of even token ids), so that every group has a reward spread."""
    return [sum(t % 2 == 0 for t in ids) / max(len(ids), 1) for ids in completion_ids]


class Gradients(TrainerCallback):
    """The accumulated gradient just before each optimizer step, in order."""

    def __init__(self):
        self.grads = []

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        self.grads.append(torch.cat([p.grad.detach().flatten().clone() for p in model.parameters()
                                     if p.grad is not None]))


def one_step(model_dir, tmp_path, micro: int, accumulation: int, algorithm: str, iterations: int):
    rows = [{"prompt": f"Numbers {i} {i + 1}, target {2 * i + 1}:", "nums": [i, i + 1], "target": 2 * i + 1}
            for i in range(1, 9)]
    args = CountdownGRPOConfig(
        output_dir=str(tmp_path / f"{micro}x{accumulation}"), use_cpu=True, bf16=False, report_to="none",
        gradient_checkpointing=False, algorithm=algorithm, num_generations=8, generation_batch_size=16,
        per_device_train_batch_size=micro, gradient_accumulation_steps=accumulation, num_iterations=iterations,
        max_completion_length=8, max_steps=iterations, learning_rate=LEARNING_RATE, max_grad_norm=1e9, epsilon=0.05,
        logging_steps=1, save_strategy="no", seed=0, data_seed=0,
    )
    callback = Gradients()  # every step's: with 2 iterations the last is the reused rollout's second pass
    trainer = CountdownGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir), reward_funcs=[even_token_reward], args=args,
        train_dataset=Dataset.from_list(rows), processing_class=AutoTokenizer.from_pretrained(model_dir),
        task=get_task("countdown"), callbacks=[callback],
    )
    trainer.train()
    weights = torch.cat([p.detach().flatten() for p in trainer.model.parameters()])
    rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
    return callback.grads, weights, rewards


@pytest.mark.parametrize("algorithm", ["grpo", "dr_grpo"])
@pytest.mark.parametrize("iterations", [1, 2])
def test_micro_batch_size_does_not_change_the_update(tiny_model_dir, tmp_path, algorithm, iterations):
    """The gradients agree to float rounding; the weights, through Adam, where that rounding cannot move them.

    Adam's step is lr * m / (sqrt(v) + eps), which for gradients far above eps depends on their ratios only: a
    relative change of 1e-4 (plus 1e-6 absolute) in gradients of at least 1e-3 changes it by about 1e-3 of a step, so
    those weights agree to 1e-5 (1% of lr). Where a step's gradient is near eps (1e-8), the same rounding moves the
    update by up to a whole step, so there the bound is what Adam can move a weight at all: by Cauchy-Schwarz at most
    ~1.0014 lr a step in either run (bias-corrected m / sqrt(v) for two steps), 2.01 * iterations * lr apart."""
    base_grads, base_weights, base_rewards = one_step(tiny_model_dir, tmp_path, 2, 8, algorithm, iterations)
    assert len(base_grads) == iterations and base_grads[-1].abs().max() > 0  # a real gradient, not a vacuous one
    start = torch.cat([p.detach().flatten() for p in AutoModelForCausalLM.from_pretrained(tiny_model_dir).parameters()])
    assert (base_weights - start).abs().max() > 1e-5  # and the weights moved
    far_from_eps = torch.stack([g.abs() >= 1e5 * ADAM_EPS for g in base_grads]).all(dim=0)
    assert far_from_eps.sum() >= 100, "too few weights with a clear gradient to compare"  # 366-7,900 of 104,512
    for micro, accumulation in ((4, 4), (16, 1)):
        grads, weights, rewards = one_step(tiny_model_dir, tmp_path, micro, accumulation, algorithm, iterations)
        assert rewards == base_rewards  # the same rollout
        for step, base in zip(grads, base_grads, strict=True):
            torch.testing.assert_close(step, base, rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(weights[far_from_eps], base_weights[far_from_eps], rtol=0, atol=1e-5)
        assert (weights - base_weights).abs().max() <= 2.01 * iterations * LEARNING_RATE
