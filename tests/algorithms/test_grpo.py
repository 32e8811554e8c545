"""The GRPO maths: advantages, the clipped surrogate and the reductions, checked against hand computations."""

import pytest
import torch

from countdown_rl.algorithms import grpo as grpo

pytestmark = pytest.mark.comparison  # CI runs it again under another processor's kernels


def test_group_normalized_advantages_grpo_uses_unbiased_group_std():
    rewards = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0]  # two groups of three
    adv, raw, meta = grpo.compute_group_normalized_advantages(
        [str(r) for r in rewards], [{}] * 6, lambda text, gt: float(text), 3, 1e-6, True
    )
    expected = []
    for group in (rewards[:3], rewards[3:]):
        g = torch.tensor(group)
        expected += ((g - g.mean()) / (g.std(unbiased=True) + 1e-6)).tolist()
    assert torch.allclose(adv, torch.tensor(expected))
    assert raw.tolist() == rewards
    assert meta["mean"].item() == pytest.approx(0.5)
    assert meta["max"].item() == 1.0 and meta["min"].item() == 0.0
    assert meta["std"].item() == pytest.approx(torch.tensor(rewards).std().item())


def test_group_normalized_advantages_drgrpo_only_subtracts_mean():
    adv, _, _ = grpo.compute_group_normalized_advantages(
        ["1", "0", "0", "0"], [{}] * 4, lambda text, gt: float(text), 4, 1e-6, False
    )
    assert adv.tolist() == pytest.approx([0.75, -0.25, -0.25, -0.25])


def test_length_mismatch_between_responses_and_ground_truths_is_an_error():
    with pytest.raises(ValueError, match="3 responses but 2 ground truths"):
        grpo.compute_group_normalized_advantages(["a", "b", "c"], [{}, {}], lambda t, g: 0.0, 1, 1e-6, True)


def test_equal_rewards_give_zero_advantages_and_count_as_zero_std():
    adv, stats = grpo.group_advantages(torch.tensor([0.1, 0.1, 1.0, 0.0]), 2)
    assert adv[:2].tolist() == [0.0, 0.0]
    assert stats["frac_zero_std_groups"] == 0.5


def test_a_group_scored_all_alike_gets_exactly_zero_even_where_its_mean_rounds():
    # eight float32 0.1s average to 0.10000001; divided by std + eps that residue was a ~1e-4 advantage
    for std_normalization in ("group", "batch", "none"):
        adv, _ = grpo.group_advantages(torch.tensor([0.1] * 8 + [1.0] + [0.1] * 7), 8,
                                       std_normalization=std_normalization)
        assert adv[:8].tolist() == [0.0] * 8 and adv[8] > 0 and adv[9] < 0
    adv, _ = grpo.group_advantages(torch.tensor([0.1, float("nan")] * 4), 8)
    assert adv.tolist() == [0.0] * 8


def test_learning_rows_are_the_non_zero_advantages_or_one_stand_in():
    assert grpo.learning_rows(torch.tensor([0.0, -0.5, 2.0, 0.0])).tolist() == [1, 2]
    assert grpo.learning_rows(torch.zeros(4)).tolist() == [0]
    assert grpo.learning_rows(torch.tensor([[0.0, 0.0], [0.0, 3.0]])).tolist() == [1]


def test_no_baseline_keeps_raw_rewards_and_batch_std_divides_by_one_std():
    rewards = torch.tensor([1.0, 0.0, 0.5, 0.5])
    adv, _ = grpo.group_advantages(rewards, 2, baseline="none", std_normalization="none")
    assert torch.equal(adv, rewards)
    adv, _ = grpo.group_advantages(rewards, 2, std_normalization="batch", advantage_eps=0.0)
    assert torch.allclose(adv, torch.tensor([0.5, -0.5, 0.0, 0.0]) / rewards.std())


def test_nan_rewards_are_left_out_of_the_baseline_and_get_zero_advantage():
    adv, _ = grpo.group_advantages(torch.tensor([1.0, float("nan"), 0.0, 0.5]), 4, std_normalization="none")
    assert adv.tolist() == pytest.approx([0.5, 0.0, -0.5, 0.0])


def test_groups_must_divide_the_batch():
    with pytest.raises(ValueError, match="groups of group_size=3"):
        grpo.group_advantages(torch.zeros(4), 3)


def test_compute_loss_is_the_clipped_surrogate():
    adv = torch.tensor([1.0, -1.0])
    old = torch.zeros(2, 3)
    new = torch.log(torch.tensor([[1.0, 1.1, 1.5], [1.0, 0.9, 0.5]]))
    loss, meta = grpo.compute_loss(adv, new, old, clip_range=0.2)
    # positive advantage: ratio capped at 1.2; negative advantage: ratio floored at 0.8
    assert torch.allclose(loss, torch.tensor([[-1.0, -1.1, -1.2], [1.0, 0.9, 0.8]]))
    assert meta["is_high_clipped"].tolist() == [[False, False, True], [False, False, False]]
    assert meta["is_low_clipped"].tolist() == [[False, False, False], [False, False, True]]
    assert meta["clip_fraction"].item() == pytest.approx(2 / 6)


def test_compute_loss_does_not_clip_in_the_pessimistic_direction():
    # A negative advantage with a ratio above 1 + eps keeps the unclipped (larger) loss.
    loss, meta = grpo.compute_loss(torch.tensor([-1.0]), torch.log(torch.tensor([[2.0]])), torch.zeros(1, 1), 0.2)
    assert loss.item() == pytest.approx(2.0)
    assert meta["clip_fraction"].item() == 0.0


def test_reductions_on_a_masked_batch():
    loss = torch.tensor([[1.0, 2.0, 3.0, 0.0], [1.0, 1.0, 1.0, 1.0], [5.0, 5.0, 5.0, 5.0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [0, 0, 0, 0]])
    assert grpo.masked_mean(loss, mask).item() == pytest.approx((2.0 + 1.0 + 0.0) / 3)
    assert grpo.masked_mean_drgrpo(loss, mask, 4).item() == pytest.approx(10.0 / 12)
    assert grpo.token_mean(loss, mask).item() == pytest.approx(10.0 / 7)
    hybrid = grpo.hybrid_mean(loss, mask, 4, alpha=0.25)
    assert hybrid.item() == pytest.approx(0.25 * 10.0 / 12 + 0.75 * 1.0)
    with pytest.raises(ValueError, match="alpha"):
        grpo.reduce_loss(loss, mask, "hybrid", num_tokens=4)
    with pytest.raises(ValueError, match="reduction must be one of"):
        grpo.reduce_loss(loss, mask, "sum", num_tokens=4)


@pytest.mark.parametrize(
    "reduction, short_over_long",
    [("masked_mean", 2.0), ("masked_mean_drgrpo", 1.0), ("token_mean", 1.0), ("hybrid", 1.5)],
)
def test_gradient_question_short_versus_long_response(reduction, short_over_long):
    """The reference setup's question: a 3-token and a 6-token response, max length 6, equal ratios and advantages.

    Length normalisation (masked_mean) gives each token of the short response twice the gradient of a long-response
    token; the constant normaliser (Dr.GRPO) and the token mean give every token the same gradient; hybrid with
    alpha = 0.5 sits in between (1.5x).
    """
    mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1]])
    log_ratio = torch.zeros(2, 6, requires_grad=True)
    per_token, _ = grpo.compute_loss(torch.tensor([1.0, 1.0]), log_ratio, torch.zeros(2, 6), clip_range=0.2)
    grpo.reduce_loss(per_token, mask, reduction, num_tokens=6, alpha=0.5).backward()
    grad = log_ratio.grad
    assert torch.all(grad[0, 3:] == 0), "padding tokens get no gradient"
    short, long = grad[0, :3], grad[1]
    assert torch.allclose(short, short[0].expand(3)) and torch.allclose(long, long[0].expand(6))
    assert (short[0] / long[0]).item() == pytest.approx(short_over_long)
    assert short[0].item() < 0  # a positive advantage lowers the loss by raising the log-prob


def test_k3_kl_is_non_negative_and_zero_only_at_equality():
    new = torch.tensor([-1.0, -2.0, -0.5])
    assert torch.all(grpo.k3_kl(new, torch.tensor([-1.5, -1.0, -0.5])) >= 0)
    assert grpo.k3_kl(new, new).abs().max().item() == 0.0
