"""Parity with stock TRL: the tripwire for TRL upgrades.

Method: build a stock ``trl.GRPOTrainer`` and a ``CountdownGRPOTrainer`` from the same saved tiny model; generate one
batch with each under the same seed (identical completions, so advantages must match); then perturb both policies
identically so ratios differ from 1 and the KL is non-zero, run the loss + ``backward()`` on the same batch, and
compare the losses and the flattened gradients.
"""

import math

import pytest
import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

from countdown_rl.training.trainer import CountdownGRPOConfig, CountdownGRPOTrainer

pytestmark = pytest.mark.comparison  # CI runs it again under another processor's kernels

NUM_GENERATIONS = 4
EOS_ID = 3  # <|im_end|> in the tiny tokenizer (specials: endoftext, pad, im_start, im_end)


def digit_density_reward(completions, **kwargs):
    """A dense toy reward (a random model never solves Countdown): the share of digits in the completion."""
    return [sum(ch.isdigit() for ch in c) / max(len(c), 1) for c in completions]


def one_group_tied_reward(completions, target, **kwargs):
    """Digit density, but a constant for the puzzle with target 36: its group's advantages are all zero."""
    return [0.5 if t == 36 else score for t, score in zip(target, digit_density_reward(completions))]


def _dataset():
    rows = [
        {"prompt": f"Numbers {a} {b} {c}, target {t}. Answer:", "nums": [a, b, c], "target": t}
        for a, b, c, t in [(7, 7, 65, 51), (79, 17, 60, 36), (3, 4, 9, 21), (10, 2, 8, 40)]
    ]
    return Dataset.from_list(rows)


def _common_args(tmp_path, **overrides):
    args = dict(
        output_dir=str(tmp_path),
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        report_to="none",
        per_device_train_batch_size=8,
        num_generations=NUM_GENERATIONS,
        max_completion_length=12,
        temperature=1.0,
        seed=0,
        logging_steps=1,
        # A random model rarely emits EOS; without varied lengths every reduction would agree. This logits
        # bias makes EOS about 10% likely per token, so completion lengths differ.
        generation_kwargs={"sequence_bias": [[[EOS_ID], 4.0]]},
    )
    args.update(overrides)
    return args


def _make_trainer(trainer_cls, config_cls, model_dir, tmp_path, reward=digit_density_reward, **config_kwargs):
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    config = config_cls(**_common_args(tmp_path, **config_kwargs))
    trainer = trainer_cls(
        model=model,
        reward_funcs=[reward],
        args=config,
        train_dataset=_dataset(),
        processing_class=tokenizer,
    )
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = config.gradient_accumulation_steps
    return trainer


def _generation_batch():
    rows = list(_dataset())[:2]
    return [dict(row) for row in rows for _ in range(NUM_GENERATIONS)]


def _perturb(model, seed=123, scale=0.02):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn(param.shape, generator=generator) * scale)


def _flat_grad(model):
    return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])


PARITY_CASES = [
    # (ours, stock) config pairs
    pytest.param(dict(algorithm="grpo"), dict(loss_type="grpo", scale_rewards="group"), id="grpo"),
    pytest.param(dict(algorithm="dr_grpo"), dict(loss_type="dr_grpo", scale_rewards="none"), id="dr_grpo"),
    pytest.param(
        dict(algorithm="grpo", reduction="token_mean"), dict(loss_type="bnpo", scale_rewards="group"), id="token_mean"
    ),
]
TRAINING_CASES = [
    pytest.param(dict(beta=0.0, num_iterations=1, gradient_accumulation_steps=1), id="beta0-it1-ga1"),
    pytest.param(dict(beta=0.04, num_iterations=2, gradient_accumulation_steps=1), id="beta0.04-it2-ga1"),
    pytest.param(dict(beta=0.0, num_iterations=2, gradient_accumulation_steps=2), id="beta0-it2-ga2"),
    pytest.param(dict(beta=0.04, num_iterations=1, gradient_accumulation_steps=2), id="beta0.04-it1-ga2"),
]


@pytest.mark.parametrize("training", TRAINING_CASES)
@pytest.mark.parametrize("ours_kwargs, stock_kwargs", PARITY_CASES)
def test_advantages_loss_and_gradients_match_stock_trl(tiny_model_dir, tmp_path, ours_kwargs, stock_kwargs, training):
    ours = _make_trainer(
        CountdownGRPOTrainer, CountdownGRPOConfig, tiny_model_dir, tmp_path / "ours", **ours_kwargs, **training
    )
    stock = _make_trainer(GRPOTrainer, GRPOConfig, tiny_model_dir, tmp_path / "stock", **stock_kwargs, **training)

    torch.manual_seed(0)
    batch = ours._generate_and_score_completions(_generation_batch())
    torch.manual_seed(0)
    stock_batch = stock._generate_and_score_completions(_generation_batch())
    assert torch.equal(batch["completion_ids"], stock_batch["completion_ids"])
    assert batch["advantages"].abs().sum() > 0, "the toy reward must give a learning signal"
    lengths = batch["completion_mask"].sum(dim=1)
    assert lengths.min() < lengths.max(), "completion lengths must vary, or the reductions cannot be told apart"
    torch.testing.assert_close(batch["advantages"], stock_batch["advantages"], rtol=1e-5, atol=1e-6)
    if training["num_iterations"] > 1:
        assert "old_per_token_logps" in batch

    # Move both policies away from the one that generated (ratios != 1, KL != 0), then compare loss and gradients.
    _perturb(ours.model)
    _perturb(stock.model)
    loss = ours._compute_loss(ours.model, batch)
    stock_loss = stock._compute_loss(stock.model, batch)
    loss.backward()
    stock_loss.backward()
    assert math.isfinite(loss.item())
    assert _flat_grad(ours.model).abs().sum() > 0
    torch.testing.assert_close(loss, stock_loss, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(_flat_grad(ours.model), _flat_grad(stock.model), rtol=1e-4, atol=1e-7)
    if training["beta"] > 0:
        assert ours._metrics["train"]["kl"][-1] == pytest.approx(stock._metrics["train"]["kl"][-1], rel=1e-5)
    for key in ("entropy", "clip_ratio/region_mean"):
        assert ours._metrics["train"][key][-1] == pytest.approx(stock._metrics["train"][key][-1], rel=1e-5, abs=1e-8)


def test_hybrid_reduction_is_the_alpha_mix_of_stock_dr_grpo_and_grpo(tiny_model_dir, tmp_path):
    """No stock TRL loss is the hybrid, but it must equal alpha * stock dr_grpo + (1 - alpha) * stock grpo."""
    alpha = 0.3
    training = dict(beta=0.04, num_iterations=2, gradient_accumulation_steps=1)
    ours = _make_trainer(CountdownGRPOTrainer, CountdownGRPOConfig, tiny_model_dir, tmp_path / "ours",
                         algorithm="dr_grpo", reduction="hybrid", hybrid_alpha=alpha, **training)
    torch.manual_seed(0)
    batch = ours._generate_and_score_completions(_generation_batch())
    _perturb(ours.model)
    hybrid = ours._compute_loss(ours.model, batch)
    stock_losses = {}
    for loss_type in ("dr_grpo", "grpo"):
        stock = _make_trainer(GRPOTrainer, GRPOConfig, tiny_model_dir, tmp_path / loss_type, loss_type=loss_type,
                              scale_rewards="none", **training)
        _perturb(stock.model)
        stock_losses[loss_type] = stock._compute_loss(stock.model, batch)
    expected = alpha * stock_losses["dr_grpo"] + (1 - alpha) * stock_losses["grpo"]
    assert (stock_losses["dr_grpo"] - stock_losses["grpo"]).abs() > 1e-4, "the two reductions must differ here"
    torch.testing.assert_close(hybrid, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("kwargs", [
    pytest.param(dict(algorithm="grpo"), id="grpo"),
    pytest.param(dict(algorithm="dr_grpo"), id="dr_grpo"),
    pytest.param(dict(algorithm="grpo", reduction="token_mean"), id="token_mean"),
    pytest.param(dict(algorithm="dr_grpo", reduction="hybrid", hybrid_alpha=0.3), id="hybrid"),
])
def test_skipping_zero_advantage_completions_leaves_loss_and_gradients_unchanged(tiny_model_dir, tmp_path, kwargs):
    """``skip_zero_advantage`` forwards only the group with a learning signal; the update is the full batch's."""
    training = dict(num_iterations=2, reward=one_group_tied_reward, **kwargs)  # 2: old log-probs, ratios != 1
    full = _make_trainer(CountdownGRPOTrainer, CountdownGRPOConfig, tiny_model_dir, tmp_path / "full", **training)
    skip = _make_trainer(CountdownGRPOTrainer, CountdownGRPOConfig, tiny_model_dir, tmp_path / "skip",
                         skip_zero_advantage=True, **training)
    torch.manual_seed(0)
    batch = full._generate_and_score_completions(_generation_batch())
    assert batch["advantages"][:4].ne(0).all() and batch["advantages"][4:].eq(0).all()
    _perturb(full.model)
    _perturb(skip.model)
    loss, skipped_loss = full._compute_loss(full.model, batch), skip._compute_loss(skip.model, batch)
    loss.backward()
    skipped_loss.backward()
    assert _flat_grad(full.model).abs().sum() > 0
    torch.testing.assert_close(skipped_loss, loss, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(_flat_grad(skip.model), _flat_grad(full.model), rtol=1e-4, atol=1e-7)
    assert skip._metrics["train"]["skipped_completions"] == [0.5]
    assert "skipped_completions" not in full._metrics["train"]


def test_a_batch_with_no_learning_signal_still_runs_one_backward_pass(tiny_model_dir, tmp_path):
    def tied(completions, **kwargs):
        return [0.5] * len(completions)

    skip = _make_trainer(CountdownGRPOTrainer, CountdownGRPOConfig, tiny_model_dir, tmp_path, reward=tied,
                         skip_zero_advantage=True)
    torch.manual_seed(0)
    batch = skip._generate_and_score_completions(_generation_batch())
    loss = skip._compute_loss(skip.model, batch)
    loss.backward()  # one stand-in row went through the model: DDP's gradient sync still has a graph to follow
    assert loss.item() == 0.0 and _flat_grad(skip.model).abs().sum() == 0
    assert skip._metrics["train"]["skipped_completions"] == [1 - 1 / 8]
