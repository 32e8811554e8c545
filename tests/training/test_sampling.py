"""The training rows' order across epochs and resumes (countdown_rl.training.sampling).

1. Over TRL's own ``RepeatSampler``: the wrapper keeps an uninterrupted run's passes (stock TRL's, epoch by epoch),
   and a fresh wrapper that starts in epoch e (a resumed run) yields the uninterrupted run's epoch e.
2. A real run across an epoch boundary: 6 training rows at 2 prompts a step are 3 steps an epoch; a run that
   crashes in step 5 resumes from checkpoint-4 (epoch 1.33, resumed mid-epoch) and ends bit-identical to the
   uninterrupted run. Before the fix the resumed steps trained on epoch 0's order: step 6 had other prompts
   (``num_tokens`` differed by 4) and the final weights differed by ~2e-5.
3. ``group_micro_batches``: a generation batch re-split with each prompt's rows together gives TRL's update.
"""

from __future__ import annotations

import doctest
import json

import pytest
from trl.trainer.utils import RepeatSampler

from countdown_rl.data.jsonl import write_jsonl
from countdown_rl.tasks.countdown.puzzles import generate_countdown
from countdown_rl.training import sampling
from countdown_rl.training.sampling import ResumableSampler
from tests.helpers.train_runs import SMOKE, SimulatedCrash, assert_bit_identical, step_logs, toy_reward, train

pytestmark = pytest.mark.comparison  # CI runs it again under another processor's kernels

SHAPES = {  # TRL's sampler as GRPO builds it: (rows, num_generations, prompts a generation, num_iterations x steps)
    "one-generation-a-step": (6, 4, 2, 1),
    "reused-rollouts": (7, 2, 3, 2),
}


def repeat_sampler(shape, shuffle=True):
    rows, mini_repeat, batch, repeat = SHAPES[shape]
    return RepeatSampler(range(rows), mini_repeat_count=mini_repeat, batch_size=batch, repeat_count=repeat,
                         shuffle=shuffle, seed=42)


def test_the_docstring_example_runs():
    assert doctest.testmod(sampling).failed == 0


@pytest.mark.parametrize("shape", list(SHAPES))
def test_an_uninterrupted_run_keeps_trls_order_and_a_resume_gets_its_epochs(shape):
    stock = repeat_sampler(shape)
    epochs = [list(stock) for _ in range(5)]
    assert len({tuple(e) for e in epochs}) == 5, "each epoch its own order (else this test could not fail)"

    state = {"epoch": 0.0}  # the trainer's state.epoch at the start of each pass
    wrapped = ResumableSampler(repeat_sampler(shape), epoch=lambda: state["epoch"])
    for epoch in range(4):
        state["epoch"] = float(epoch)
        assert list(wrapped) == epochs[epoch]
    assert len(wrapped) == len(stock)

    for start in (1, 3):  # a run resumed in epoch `start`: a fresh sampler, state.epoch restored mid-epoch
        state["epoch"] = start + 1 / 3
        resumed = ResumableSampler(repeat_sampler(shape), epoch=lambda: state["epoch"])
        assert list(resumed) == epochs[start]
        state["epoch"] = start + 1.0
        assert list(resumed) == epochs[start + 1]


def test_a_fixed_order_is_unchanged():
    resumed = ResumableSampler(repeat_sampler("reused-rollouts", shuffle=False), epoch=lambda: 2.5)
    assert list(resumed) == list(repeat_sampler("reused-rollouts", shuffle=False))


def test_a_run_resumed_in_its_second_epoch_ends_as_the_uninterrupted_run(tiny_model_dir, tmp_path, one_torch_thread):
    # one torch thread: with two, the embedding's backward sums in a varying order (~1e-8 between identical runs)
    puzzles = tmp_path / "puzzles.jsonl"
    write_jsonl(generate_countdown(22, seed=0), puzzles)  # 16 held out, 6 to train on: 3 steps an epoch
    extra = ("--test_size", "16", "--max_steps", "6", "--final_eval_size", "2")
    full, resumed = tmp_path / "uninterrupted", tmp_path / "resumed"
    assert train(SMOKE, tiny_model_dir, puzzles, full, *extra) == 0
    with pytest.raises(SimulatedCrash):
        train(SMOKE, tiny_model_dir, puzzles, resumed, *extra, reward=toy_reward(crash_in_call=5))
    reward = toy_reward()
    assert train(SMOKE, tiny_model_dir, puzzles, resumed, *extra, "--resume_from_checkpoint",
                 str(resumed / "checkpoint-4"), reward=reward) == 0
    assert reward.calls == 2  # only steps 5 and 6 ran, in epoch 1
    history = json.loads((full / "trainer_state.json").read_text())["log_history"]
    assert [round(h["epoch"], 2) for h in history if "loss" in h] == [0.33, 0.67, 1.0, 1.33, 1.67, 2.0]
    assert_bit_identical(full / "model.safetensors", resumed / "model.safetensors")
    assert step_logs(resumed) == step_logs(full)  # num_tokens among them: the same prompts in step 5


@pytest.mark.parametrize("options", [
    pytest.param(dict(), id="dapo"),
    pytest.param(dict(algorithm="grpo", beta=0.04, num_iterations=2), id="grpo-kl-it2", marks=pytest.mark.slow),
])
def test_whole_group_micro_batches_give_trls_update(tiny_model_dir, tmp_path, options):
    """Two micro-batches of 4 rows per optimizer step, one generation batch of 2 groups of 4: TRL's shuffle mixes the
    groups, group_micro_batches keeps each in one micro-batch (one prompt each, shared), and the weights after 2 steps
    are TRL's (SGD, so a float-noise gradient stays noise; tolerance as the prompt-once comparisons: the same sums
    in another order, then float noise through one step)."""
    import torch

    from tests.helpers.trainers import tiny_trainer

    runs = {}
    for grouped in (False, True):
        trainer = tiny_trainer(tiny_model_dir, tmp_path / str(grouped), task=None, group_micro_batches=grouped,
                               per_device_train_batch_size=4, gradient_accumulation_steps=2, optim="sgd",
                               learning_rate=0.1, generation_kwargs={"sequence_bias": [[[3], 4.0]]}, **options)
        trainer.train()
        runs[grouped] = trainer
    for (name, off), on in zip(runs[False].model.named_parameters(), runs[True].model.parameters(), strict=True):
        torch.testing.assert_close(on, off, rtol=1e-4, atol=1e-6, msg=name)
    shared = runs[True].log_prob_passes["loss"]
    assert set(shared) == {"prompt-once"} and shared["prompt-once"]["distinct_prompts"] == shared[
        "prompt-once"]["micro_batches"]  # one prompt per micro-batch
    mixed = runs[False].log_prob_passes["loss"]
    assert sum(c["distinct_prompts"] for c in mixed.values()) > sum(c["micro_batches"] for c in mixed.values())
