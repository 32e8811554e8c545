"""``CountdownGRPOTrainer`` is a superset of TRL's ``GRPOTrainer``: every TRL option trains through it, a plain
``GRPOConfig`` (or none) works, and with none of our keys set a step is stock TRL's.

Method: tiny Qwen3 runs on the CPU (``tests.helpers.trainers``), stock and ours built alike from one seed; and, for
the loss-level claims, one generated batch scored by both trainers after the policies were perturbed identically
(ratios off 1), as in ``test_trainer_parity``.
"""

import math

import pytest
import torch
from trl import GRPOConfig, GRPOTrainer

from countdown_rl.training.trainer import CountdownGRPOConfig, CountdownGRPOTrainer
from tests.helpers.trainers import (TINY_ARGS, GradientRecorder, char_diversity_reward, logged, puzzle_rows,
                                    tiny_trainer)

pytestmark = pytest.mark.comparison  # CI runs it again under another processor's kernels

# TRL's own options, each with metrics only it logs (besides loss, entropy, reward ...)
TRL_OPTIONS = [
    pytest.param(dict(), ["clip_ratio/low_min", "clip_ratio/high_max"], id="dapo-default"),
    pytest.param(dict(loss_type="grpo"), ["clip_ratio/region_mean"], id="grpo"),
    pytest.param(dict(loss_type="bnpo"), ["clip_ratio/region_mean"], id="bnpo"),
    pytest.param(dict(loss_type="dr_grpo", scale_rewards="none"), ["clip_ratio/region_mean"], id="dr_grpo"),
    pytest.param(dict(loss_type="cispo"), ["cispo_clip_ratio"], id="cispo"),
    pytest.param(dict(loss_type="sapo"), [], id="sapo"),
    pytest.param(dict(loss_type="luspo", importance_sampling_level="sequence"), ["clip_ratio/high_max"], id="luspo"),
    pytest.param(dict(loss_type="vespo"), ["vespo/phi_seq_mean"], id="vespo"),
    pytest.param(dict(importance_sampling_level="sequence"), ["clip_ratio/region_mean"], id="gspo"),
    pytest.param(dict(entropy_coef=0.01), ["entropy_coef", "policy_loss"], id="entropy-bonus"),
    pytest.param(dict(use_adaptive_entropy=True), ["entropy_coef"], id="adaptive-entropy"),
    pytest.param(dict(top_entropy_quantile=0.2), ["entropy"], id="entropy-filter"),
    pytest.param(dict(off_policy_mask_threshold=0.01), ["entropy"], id="off-policy-mask"),
    pytest.param(dict(delta=1.5), ["clip_ratio/region_mean"], id="two-sided-clip"),
    pytest.param(dict(scale_rewards="batch"), ["frac_reward_zero_std"], id="scale-batch"),
    pytest.param(dict(multi_objective_aggregation="normalize_then_sum"), ["rewards/length_reward/mean"], id="gdpo"),
]


def length_reward(completions, **kwargs):
    """A second dense toy reward (GDPO normalises each reward function apart)."""
    return [len(c) / 32 for c in completions]


def _pair(tiny_model_dir, tmp_path, config_cls, trainer_cls, **overrides):
    return tiny_trainer(tiny_model_dir, tmp_path, task=None, trainer_cls=trainer_cls, config_cls=config_cls,
                        **overrides)


def _params(model):
    return {name: p.detach().clone() for name, p in model.named_parameters()}


@pytest.mark.parametrize("options, metrics", TRL_OPTIONS)
def test_every_trl_option_trains_through_ours_and_logs_trls_metrics(tiny_model_dir, tmp_path, options, metrics):
    """Two optimizer steps (num_iterations 2: ratios move off 1) change the weights; TRL's metrics are logged."""
    gdpo = "multi_objective_aggregation" in options
    reward = [char_diversity_reward, length_reward] if gdpo else char_diversity_reward
    trainer = tiny_trainer(tiny_model_dir, tmp_path, task=None, num_iterations=2, steps_per_generation=2,
                           per_device_train_batch_size=4, reward=reward, **options)
    before = _params(trainer.model)
    trainer.train()
    after = trainer.model.named_parameters()
    assert any(not torch.equal(before[name], p) for name, p in after), "the weights must move"
    losses = logged(trainer, "loss")
    assert len(losses) == 2 and all(math.isfinite(loss) for loss in losses)
    for key in ["entropy", "reward", "completions/mean_length", *metrics]:  # the second step reuses the rollout
        values = [value for value in logged(trainer, key) if value is not None]
        assert values and all(math.isfinite(value) for value in values), key


STOCK_STEP_OPTIONS = [
    pytest.param(dict(), id="defaults"),
    pytest.param(dict(loss_type="cispo", beta=0.04), id="cispo-kl"),
    pytest.param(dict(loss_type="sapo", importance_sampling_level="sequence", num_iterations=2), id="sapo-seq"),
    pytest.param(dict(loss_type="dr_grpo", scale_rewards="none", top_entropy_quantile=0.5), id="dr_grpo-filter"),
    pytest.param(dict(use_adaptive_entropy=True, gradient_accumulation_steps=2, per_device_train_batch_size=4),
                 id="adaptive-ga2"),
]

# What the runs count from their rollouts (equal generations give equal counts: exact) and what they compute in
# floating point (compared to rounding).
COUNTED = {"num_tokens", "completions/mean_length", "completions/min_length", "completions/max_length",
           "completions/clipped_ratio", "completions/mean_terminated_length", "completions/min_terminated_length",
           "completions/max_terminated_length", "reward", "reward_std", "frac_reward_zero_std", "epoch",
           "learning_rate", "rewards/char_diversity_reward/mean", "rewards/char_diversity_reward/std"}
# A float32 gradient is a sum of a few hundred rounded products; the prompt-once pass sums the prompt's share once
# over the group (and at other absolute positions, whose float32 rotary tables differ by an ulp), so each gradient
# differs from TRL's by O(sqrt(n)) ulps normwise: 4e-7 to 4e-6 measured on AVX2 (under 1e-5 on the portable kernels).
# 1e-5 (about 170 ulps) is the bound: a real difference (a masked token, a dropped row, a pad attended to) moves a
# gradient by 1e-3 or more.
GRADIENT_RTOL = 1e-5


@pytest.mark.parametrize("options", STOCK_STEP_OPTIONS)
@pytest.mark.parametrize("our_args", ["ours", "plain"])
def test_with_none_of_our_keys_set_a_step_is_stock_trls_to_rounding(tiny_model_dir, tmp_path, options, our_args):
    """Prompt-once on (the default): from one seed, our config or a plain ``GRPOConfig`` handed to our trainer
    generates TRL's rollouts, computes TRL's gradient to float rounding at every step, and takes TRL's step.

    The bound comes from the maths, not from one machine's kernels. AdamW divides by sqrt(v), so a 1e-9 rounding in
    an element whose gradient is near 0 becomes a 1e-6 step: the gradient (the optimizer's input) is compared, and
    the runs step with SGD, whose update is the gradient times the rate, so the weights differ by the rate times the
    gradient's rounding plus the last ulp of each subtraction."""
    options = {**options, "optim": "sgd"}
    stock_grads, our_grads = GradientRecorder(), GradientRecorder()
    stock = _pair(tiny_model_dir, tmp_path / "stock", GRPOConfig, GRPOTrainer, **options)
    stock.add_callback(stock_grads)
    stock.train()  # each trainer is built (set_seed) and trained before the other starts: one RNG stream each
    config_cls = GRPOConfig if our_args == "plain" else CountdownGRPOConfig
    ours = _pair(tiny_model_dir, tmp_path / "ours", config_cls, CountdownGRPOTrainer, **options)
    ours.add_callback(our_grads)
    assert isinstance(ours.args, CountdownGRPOConfig) and ours.args.algorithm_label == stock.args.loss_type
    assert ours.log_prob_pass == "prompt-once"
    ours.train()
    stock_logs = [h for h in stock.state.log_history if "loss" in h]
    our_logs = [h for h in ours.state.log_history if "loss" in h]
    assert len(stock_logs) == len(our_logs) == 2 and len(stock_grads.steps) == len(our_grads.steps) == 2
    for theirs, mine in zip(stock_logs, our_logs, strict=True):
        assert mine.keys() >= theirs.keys()
        for key, value in theirs.items():
            if key == "step_time":  # wall clock
                continue
            if key in COUNTED:
                assert mine[key] == value, key
            else:  # loss, grad_norm, entropy, clip ratios: means of O(1) float32 terms, each off by a few ulps
                assert mine[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key
    for theirs, mine in zip(stock_grads.steps, our_grads.steps, strict=True):
        for name, grad in theirs.items():
            assert grad.norm() > 0, name
            assert (mine[name] - grad).norm() <= GRADIENT_RTOL * grad.norm(), name
    rate = TINY_ARGS["learning_rate"]  # the first step's rate bounds both (linear decay: 1e-3, then 5e-4)
    for (name, p), q in zip(stock.model.named_parameters(), ours.model.parameters(), strict=True):
        step_bound = sum(rate * GRADIENT_RTOL * step[name].norm() for step in stock_grads.steps)
        torch.testing.assert_close(q, p, rtol=2 * 2**-23, atol=float(step_bound), msg=name)


@pytest.mark.parametrize("options", STOCK_STEP_OPTIONS)
def test_with_the_plain_pass_a_step_is_stock_trls_bit_for_bit(tiny_model_dir, tmp_path, options, one_torch_thread):
    """``shared_prompt_forward: false``: TRL's own log-prob pass under our hooks; with the default AdamW, two
    steps leave every weight and every logged metric bit-identical to stock TRL's. One torch thread: with two, even
    two stock runs differ (the embedding's backward sums in a varying order)."""
    stock = _pair(tiny_model_dir, tmp_path / "stock", GRPOConfig, GRPOTrainer, **options)
    stock.train()
    ours = _pair(tiny_model_dir, tmp_path / "ours", CountdownGRPOConfig, CountdownGRPOTrainer,
                 shared_prompt_forward=False, **options)
    assert ours.log_prob_pass == "plain"
    ours.train()
    stock_logs = [h for h in stock.state.log_history if "loss" in h]
    our_logs = [h for h in ours.state.log_history if "loss" in h]
    assert len(stock_logs) == len(our_logs) == 2
    for theirs, mine in zip(stock_logs, our_logs, strict=True):
        assert {k: v for k, v in mine.items() if k in theirs and k != "step_time"} == \
            {k: v for k, v in theirs.items() if k != "step_time"}
    for (name, p), q in zip(stock.model.named_parameters(), ours.model.parameters(), strict=True):
        assert torch.equal(q, p), name


# -- loss-level: one batch, perturbed policies ------------------------------------------------------------------


def one_group_tied_reward(completions, target, **kwargs):
    """Char diversity, but a constant for the first puzzle (target 3): its group's advantages are all zero."""
    return [0.5 if t == 3 else score for t, score in zip(target, char_diversity_reward(completions))]


# A random model rarely emits EOS (id 3): this bias makes it about 10% likely per token, so lengths vary and the
# reductions can be told apart.
VARIED_LENGTHS = dict(generation_kwargs={"sequence_bias": [[[3], 4.0]]})


def _scored_batch(trainer):
    torch.manual_seed(0)
    rows = [dict(row) for row in list(puzzle_rows())[:2] for _ in range(4)]
    return trainer._generate_and_score_completions(rows)


def _perturb(model, seed=123, scale=0.05):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn(param.shape, generator=generator) * scale)


def _loss_and_grad(trainer, batch):
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    loss = trainer._compute_loss(trainer.model, batch)
    loss.backward()
    grad = torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.grad is not None])
    return loss, grad


@pytest.mark.parametrize("options", [
    pytest.param(dict(loss_type=loss_type), id=loss_type) for loss_type in ("grpo", "bnpo", "dr_grpo", "dapo", "cispo",
                                                                             "sapo", "vespo")
] + [
    pytest.param(dict(loss_type="luspo", importance_sampling_level="sequence"), id="luspo-seq"),
    pytest.param(dict(importance_sampling_level="sequence"), id="gspo"),
    pytest.param(dict(off_policy_mask_threshold=0.01), id="off-policy-mask"),
    pytest.param(dict(delta=1.5), id="two-sided-clip"),
    pytest.param(dict(algorithm="dr_grpo", reduction="hybrid", hybrid_alpha=0.3), id="hybrid"),
])
def test_skipping_zero_advantage_rows_leaves_every_loss_types_update_unchanged(tiny_model_dir, tmp_path, options):
    """Only one group is forwarded; TRL's reduction over it, rescaled, is the whole batch's (loss and gradient)."""
    common = dict(num_iterations=2, reward=one_group_tied_reward, std_normalization="group", **VARIED_LENGTHS,
                  **options)
    full = tiny_trainer(tiny_model_dir, tmp_path / "full", task=None, **common)
    skip = tiny_trainer(tiny_model_dir, tmp_path / "skip", task=None, skip_zero_advantage=True, **common)
    batch = _scored_batch(full)
    assert batch["advantages"][:4].eq(0).all() and batch["advantages"][4:].ne(0).all()
    _perturb(full.model)
    _perturb(skip.model)
    loss, grad = _loss_and_grad(full, batch)
    skipped_loss, skipped_grad = _loss_and_grad(skip, batch)
    assert grad.abs().sum() > 0
    torch.testing.assert_close(skipped_loss, loss, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(skipped_grad, grad, rtol=1e-4, atol=1e-7)
    assert skip._metrics["train"]["skipped_completions"] == [0.5]


@pytest.mark.parametrize("options", [
    pytest.param(dict(beta=0.04), id="kl"),
    pytest.param(dict(entropy_coef=0.01), id="entropy-bonus"),
    pytest.param(dict(use_adaptive_entropy=True), id="adaptive-entropy"),
    pytest.param(dict(top_entropy_quantile=0.5, importance_sampling_level="sequence"), id="filter-gspo"),
])
def test_hybrid_is_the_alpha_mix_of_trls_two_losses_with_every_option(tiny_model_dir, tmp_path, options):
    """hybrid = alpha * stock dr_grpo + (1 - alpha) * stock grpo, metrics alike; the trainer's state (the adaptive
    entropy controller) is left as one pass of TRL's leaves it."""
    alpha = 0.3
    common = dict(num_iterations=2, scale_rewards="none", **VARIED_LENGTHS, **options)
    ours = tiny_trainer(tiny_model_dir, tmp_path / "ours", task=None, reduction="hybrid", hybrid_alpha=alpha,
                        **common)
    batch = _scored_batch(ours)
    _perturb(ours.model)
    loss, grad = _loss_and_grad(ours, batch)
    stock = {}
    for loss_type in ("dr_grpo", "grpo"):
        trainer = _pair(tiny_model_dir, tmp_path / loss_type, GRPOConfig, GRPOTrainer, loss_type=loss_type, **common)
        _perturb(trainer.model)
        stock[loss_type] = (*_loss_and_grad(trainer, batch), trainer)
    (dr_loss, dr_grad, dr), (grpo_loss, grpo_grad, _) = stock["dr_grpo"], stock["grpo"]
    assert (dr_loss - grpo_loss).abs() > 1e-5, "the two reductions must differ here"
    torch.testing.assert_close(loss, alpha * dr_loss + (1 - alpha) * grpo_loss, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(grad, alpha * dr_grad + (1 - alpha) * grpo_grad, rtol=1e-4, atol=1e-7)
    for key, values in dr._metrics["train"].items():
        if key not in ours._metrics["train"]:
            continue
        assert len(ours._metrics["train"][key]) == len(values), key  # one entry per loss call, not two
    assert ours.entropy_coef == pytest.approx(dr.entropy_coef)


def test_dr_grpo_divides_by_drgrpo_num_tokens_where_trl_divides_by_max_completion_length(tiny_model_dir, tmp_path):
    ours = tiny_trainer(tiny_model_dir, tmp_path / "ours", task=None, algorithm="dr_grpo", drgrpo_num_tokens=32,
                        **VARIED_LENGTHS)
    stock = _pair(tiny_model_dir, tmp_path / "stock", GRPOConfig, GRPOTrainer, loss_type="dr_grpo",
                  scale_rewards="none", **VARIED_LENGTHS)
    batch = _scored_batch(ours)
    loss, _ = _loss_and_grad(ours, batch)
    stock_loss, _ = _loss_and_grad(stock, batch)
    torch.testing.assert_close(loss, stock_loss * TINY_ARGS["max_completion_length"] / 32, rtol=1e-5, atol=1e-9)
    assert ours.max_completion_length == TINY_ARGS["max_completion_length"]  # TRL's value is put back


def test_a_trl_loss_type_composes_with_our_std_normalisation(tiny_model_dir, tmp_path):
    """``algorithm: dr_grpo`` with TRL's ``loss_type: dapo``: DAPO's reduction over Dr.GRPO's mean-only advantages."""
    trainer = tiny_trainer(tiny_model_dir, tmp_path, task=None, algorithm="dr_grpo", loss_type="dapo")
    batch = _scored_batch(trainer)
    rewards = torch.tensor([char_diversity_reward([c])[0] for c in trainer.processing_class.batch_decode(
        batch["completion_ids"], skip_special_tokens=True)])
    expected = (rewards.view(2, 4) - rewards.view(2, 4).mean(dim=1, keepdim=True)).flatten()
    torch.testing.assert_close(batch["advantages"], expected, rtol=1e-4, atol=1e-6)
    assert trainer.loss_type == "dapo" and trainer.args.algorithm_label == "dapo (std none)"


# -- what the earlier subclass got wrong ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_moe_dir(tmp_path_factory, tiny_model_dir):
    """A tiny Qwen3-MoE (4 experts, 2 active, router loss coefficient 0.01), with the tiny tokenizer; TRL asks for
    its router logits in the loss's forward only (left on, generation would ask too, which transformers rejects)."""
    from transformers import AutoTokenizer, Qwen3MoeConfig, Qwen3MoeForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    torch.manual_seed(0)
    config = Qwen3MoeConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
                            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                            num_experts=4, num_experts_per_tok=2,
                            router_aux_loss_coef=0.01, tie_word_embeddings=True,
                            eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    path = tmp_path_factory.mktemp("moe") / "model"
    Qwen3MoeForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.mark.parametrize("options", [pytest.param(dict(), id="trl"),
                                     pytest.param(dict(algorithm="grpo", skip_zero_advantage=True), id="ours-skip")])
def test_a_moe_model_logs_its_router_loss_and_trls_clip_extremes(tiny_moe_dir, tmp_path, options):
    trainer = tiny_trainer(tiny_moe_dir, tmp_path, task=None, **options)
    assert trainer.aux_loss_enabled
    trainer.train()
    for key in ("aux_loss", "clip_ratio/low_min", "clip_ratio/high_max"):
        values = logged(trainer, key)
        assert values and all(v is not None and math.isfinite(v) for v in values), key


def test_a_dict_of_eval_datasets_is_evaluated_each_under_its_name(tiny_model_dir, tmp_path):
    """With a task, each dataset gets the task's greedy metrics under its name; TRL loops over the dict."""
    evals = {"easy": puzzle_rows(4), "more": puzzle_rows(8)}
    trainer = tiny_trainer(tiny_model_dir, tmp_path, eval_dataset=evals, per_device_eval_batch_size=4,
                           eval_strategy="steps", eval_steps=1)
    metrics = trainer.evaluate()
    assert {"eval_easy_accuracy", "eval_more_accuracy"} <= metrics.keys()
    assert 0.0 <= metrics["eval_more_accuracy"] <= 1.0
    no_task = tiny_trainer(tiny_model_dir, tmp_path / "no-task", task=None, eval_dataset=evals,
                           per_device_eval_batch_size=4, eval_strategy="steps", eval_steps=1)
    assert {"eval_easy_loss", "eval_more_loss"} <= no_task.evaluate().keys()  # TRL's own evaluation


def test_no_args_gives_trls_default_config_as_ours(tiny_model_dir, tmp_path, monkeypatch):
    """``args=None``: TRL builds its default ``GRPOConfig`` (on a GPU-less machine only with ``use_cpu``, which the
    default lacks, so its bf16 default is cut at ``GRPOConfig``'s construction here) and we adopt it."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import trl.trainer.grpo_trainer as grpo_trainer_module

    monkeypatch.chdir(tmp_path)
    cpu_defaults = dict(use_cpu=True, bf16=False, report_to="none", per_device_train_batch_size=8, num_generations=4)
    monkeypatch.setattr(grpo_trainer_module, "GRPOConfig",
                        lambda output_dir: GRPOConfig(output_dir=output_dir, **cpu_defaults))
    trainer = CountdownGRPOTrainer(model=AutoModelForCausalLM.from_pretrained(tiny_model_dir),
                                   reward_funcs=char_diversity_reward, train_dataset=puzzle_rows(),
                                   processing_class=AutoTokenizer.from_pretrained(tiny_model_dir))
    assert isinstance(trainer.args, CountdownGRPOConfig)
    assert (trainer.args.loss_type, trainer.args.scale_rewards, trainer.args.algorithm) == ("dapo", "group", None)
    assert trainer.args.output_dir.endswith("-GRPO")
