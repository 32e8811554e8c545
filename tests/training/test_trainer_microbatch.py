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


def even_token_reward(completions, completion_ids, **kwargs):
    """A dense toy reward (share of even token ids), so that every group has a reward spread."""
    return [sum(t % 2 == 0 for t in ids) / max(len(ids), 1) for ids in completion_ids]


class GradientAtStep(TrainerCallback):
    """The accumulated gradient just before the optimizer step of ``step`` (1-based)."""

    def __init__(self, step: int):
        self.step, self.grads = step, None

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        if state.global_step + 1 == self.step:
            self.grads = torch.cat([p.grad.detach().flatten().clone() for p in model.parameters()
                                    if p.grad is not None])


def one_step(model_dir, tmp_path, micro: int, accumulation: int, algorithm: str, iterations: int):
    rows = [{"prompt": f"Numbers {i} {i + 1}, target {2 * i + 1}:", "nums": [i, i + 1], "target": 2 * i + 1}
            for i in range(1, 9)]
    args = CountdownGRPOConfig(
        output_dir=str(tmp_path / f"{micro}x{accumulation}"), use_cpu=True, bf16=False, report_to="none",
        gradient_checkpointing=False, algorithm=algorithm, num_generations=8, generation_batch_size=16,
        per_device_train_batch_size=micro, gradient_accumulation_steps=accumulation, num_iterations=iterations,
        max_completion_length=8, max_steps=iterations, learning_rate=1e-3, max_grad_norm=1e9, epsilon=0.05,
        logging_steps=1, save_strategy="no", seed=0, data_seed=0,
    )
    callback = GradientAtStep(iterations)  # the last step: with 2 iterations, the reused rollout's second pass
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
    base_grads, base_weights, base_rewards = one_step(tiny_model_dir, tmp_path, 2, 8, algorithm, iterations)
    assert base_grads is not None and base_grads.abs().max() > 0  # a real gradient, not a vacuous comparison
    start = torch.cat([p.detach().flatten() for p in AutoModelForCausalLM.from_pretrained(tiny_model_dir).parameters()])
    assert (base_weights - start).abs().max() > 1e-5  # and the weights moved
    for micro, accumulation in ((4, 4), (16, 1)):
        grads, weights, rewards = one_step(tiny_model_dir, tmp_path, micro, accumulation, algorithm, iterations)
        assert rewards == base_rewards  # the same rollout
        torch.testing.assert_close(grads, base_grads, rtol=1e-4, atol=1e-6)
        # Adam's first step is about lr * g / |g|: where g is ~0, rounding noise in g moves the weight by up to a
        # fraction of lr (1e-3), so the weights agree to 1% of one step, the gradients to float rounding.
        torch.testing.assert_close(weights, base_weights, rtol=0, atol=1e-5)
