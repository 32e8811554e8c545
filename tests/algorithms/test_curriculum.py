"""Curricula (``countdown_rl.algorithms.curriculum``): the completion-budget schedule and the easy-to-hard data order.

1. The pure functions: ``budget_at``, the schedule check (one line naming ``budget_schedule``), the orders.
2. The config and the recipe: every bad schedule is a one-line error before anything loads; the command line and
   YAML forms parse; ``shuffle_dataset`` follows ``data_order`` and an explicit clash is one line.
3. Training with a schedule (tiny model, in process): each rollout is generated with the budget of its step on
   the plain transformers path and TRL's vLLM path (backend cut at its class boundary; the compiled path:
   tests/generation/test_compiled.py);
   reward functions get that budget; a reused rollout (``num_iterations=2``) keeps its budget, and the Dr.GRPO
   normaliser is the rollout's budget, not the step's; the in-training evaluation uses the current budget.
4. Resume: a run checkpointed before the budget changes and resumed ends bit-identical to an uninterrupted run,
   and sees the same rows in the same (easy-to-hard) order.
5. Data order: the training rows only (the held-out rows are the random order's), sorted by difficulty or staged;
   two processes (torchrun, gloo) see the rows in the same order as one.

The model card and the report naming a schedule: tests/evaluation/test_model_card.py and
tests/evaluation/test_report_curriculum.py.

A random tiny model rarely emits EOS, so its completions run to the budget: the budget is visible in every length.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from countdown_rl.algorithms.curriculum import budget_at, data_order_indices, parse_budget_schedule, staged_order
from countdown_rl.tasks import get_task
from countdown_rl.tasks.countdown.puzzles import SEARCH_LIMIT, generate_countdown, search_effort
from countdown_rl.data.arguments import DataArguments
from countdown_rl.data.jsonl import write_jsonl
from countdown_rl.data.prepare import prepare_dataset
from countdown_rl.training.trainer import CountdownGRPOConfig
from tests.helpers.budgets import SCHEDULED, check_budgets, recording_reward
from tests.helpers.trainers import logged, puzzle_rows, tiny_trainer

from tests.helpers.env import ROOT, crash_report
SMOKE = ROOT / "recipes" / "smoke" / "cpu_tiny.yaml"

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: tiny models, one thread


@pytest.fixture(scope="module")
def puzzles(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "puzzles.jsonl"
    write_jsonl(generate_countdown(40, seed=0, min_numbers=3, max_numbers=4), path)
    return path


# ---------------------------------------------------------------------------------------------------------------
# 1. Pure functions
# ---------------------------------------------------------------------------------------------------------------


def test_budget_at_is_the_last_entry_started():
    schedule = [[0, 256], [40, 512], [60, 1024]]
    assert [budget_at(schedule, s) for s in (0, 39, 40, 59, 60, 10_000)] == [256, 256, 512, 512, 1024, 1024]
    assert budget_at([[0, 7]], 123) == 7
    with pytest.raises(ValueError):
        budget_at(schedule, -1)


@pytest.mark.parametrize("schedule, words", [
    ([], ["non-empty"]),
    ("0:16", ["non-empty"]),
    ([[0, 8, 16]], ["[0, 8, 16]", "pair"]),
    ([[0, "many"]], ["pair of integers"]),
    ([[0, True]], ["pair of integers"]),
    ([[1, 16]], ["step 0"]),
    ([[0, 8], [4, 12], [4, 16]], ["strictly increase", "4 then 4"]),
    ([[0, 8], [5, 16], [3, 12]], ["strictly increase"]),
    ([[0, 0], [5, 16]], ["positive", "0"]),
    ([[0, 8], [5, 12]], ["largest budget 12", "max_completion_length=16"]),
    ([[0, 8], [5, 32]], ["largest budget 32"]),
])
def test_a_bad_schedule_is_one_line_naming_the_key(tmp_path, schedule, words):
    with pytest.raises(ValueError) as err:
        CountdownGRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", max_completion_length=16,
                            budget_schedule=schedule)
    message = str(err.value)
    assert message.startswith("budget_schedule: ") and "\n" not in message
    for word in words:
        assert word in message


def test_a_schedule_with_a_fixed_generation_budget_is_refused(tmp_path):
    with pytest.raises(ValueError, match="budget_schedule: generation_kwargs sets max_new_tokens"):
        CountdownGRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", max_completion_length=16,
                            budget_schedule=[[0, 8], [2, 16]], generation_kwargs={"max_new_tokens": 8})


def test_schedule_from_yaml_and_command_line(tmp_path):
    from countdown_rl.training.recipe import parse_args

    recipe = tmp_path / "r.yaml"
    recipe.write_text(SMOKE.read_text() + "budget_schedule: [[0, 8], [2, 12], [3, 16]]\n")
    _, args, _ = parse_args(["--config", str(recipe)])
    assert args.budget_schedule == [[0, 8], [2, 12], [3, 16]]
    _, args, _ = parse_args(["--config", str(SMOKE), "--budget_schedule", "0:4", "10:16"])
    assert args.budget_schedule == [[0, 4], [10, 16]]
    assert [args.completion_budget(s) for s in (0, 9, 10)] == [4, 4, 16]
    _, args, _ = parse_args(["--config", str(SMOKE)])
    assert args.budget_schedule is None and args.completion_budget(99) == 16
    assert parse_budget_schedule([("0", "16")], 16) == [[0, 16]]


def test_the_examples_hold_and_every_key_has_help():
    import doctest
    from dataclasses import fields

    import countdown_rl.algorithms.curriculum as curriculum
    import countdown_rl.tasks.countdown as countdown
    import countdown_rl.tasks.countdown.puzzles as puzzles_module
    import countdown_rl.training.config as config_module

    for module in (curriculum, countdown, puzzles_module, config_module):
        assert doctest.testmod(module).failed == 0, module.__name__
    for f in fields(DataArguments):
        assert f.metadata.get("help"), f.name


def test_easy_to_hard_is_a_stable_sort():
    assert data_order_indices([3.0, 1.0, 3.0, 2.0, 1.0], "easy_to_hard") == [1, 4, 3, 0, 2]
    assert data_order_indices([3.0, 1.0], "random") == [0, 1]
    with pytest.raises(ValueError, match="data_order"):
        data_order_indices([1.0], "hard_to_easy")


def test_staged_order_blocks_replay_and_seed():
    difficulties = [float(d) for d in range(20)]  # index = difficulty rank
    order = staged_order(difficulties, stages=4, replay=0.4, seed=3)
    assert order == staged_order(difficulties, stages=4, replay=0.4, seed=3)  # seeded
    assert order != staged_order(difficulties, stages=4, replay=0.4, seed=4)
    assert sorted(set(order)) == list(range(20))  # every row once ...
    assert len(order) == 20 + 3 * 2  # ... plus round(0.4 * 5) replayed rows in stages 2, 3 and 4
    start = 0
    for stage in range(4):
        own = set(range(5 * stage, 5 * stage + 5))
        size = 5 + (2 if stage else 0)
        block = order[start:start + size]
        assert own <= set(block), stage  # the stage's own rows, shuffled within the block
        assert all(i < 5 * stage for i in set(block) - own), stage  # replays come from earlier stages only
        start += size
    assert order[:5] != [0, 1, 2, 3, 4] or order[5:12] != sorted(order[5:12])  # shuffled, not sorted
    assert staged_order(difficulties, stages=1, replay=0.5, seed=0) != list(range(20))
    assert sorted(staged_order(difficulties, stages=50, replay=0.0, seed=0)) == list(range(20))  # <= one row each
    for bad, key in ((dict(stages=0), "curriculum_stages"), (dict(replay=1.5), "curriculum_replay")):
        with pytest.raises(ValueError, match=key):
            staged_order(difficulties, **{"stages": 2, "replay": 0.1, **bad})


def test_countdown_difficulty_counts_numbers_then_search():
    task = get_task("countdown")
    first_try = {"nums": [1, 2], "target": 3}  # 1 + 2: the first leaf the search enters
    later = {"nums": [1, 2], "target": 1}  # 2 - 1: tried after +, * and 1 - 2
    impossible = {"nums": [1, 1, 1], "target": 99}
    assert search_effort([1, 2], 3) < search_effort([1, 2], 1) < search_effort([1, 1, 1], 99) == SEARCH_LIMIT
    assert search_effort([2, 1], 1) == search_effort([1, 2], 1)  # a function of the puzzle, not of the row order
    assert search_effort([1, 1, 1], 99, limit=50) == 50  # bounded
    assert 2 < task.difficulty(first_try) < task.difficulty(later) < 3 < task.difficulty(impossible) < 4
    four = generate_countdown(30, seed=1, min_numbers=4, max_numbers=4)
    three = generate_countdown(30, seed=1, min_numbers=3, max_numbers=3)
    assert max(map(task.difficulty, three)) < min(map(task.difficulty, four))
    assert len({task.difficulty(r) for r in four}) > 5  # search effort separates puzzles with as many numbers


# ---------------------------------------------------------------------------------------------------------------
# 2. Data order in the data pipeline and the recipe
# ---------------------------------------------------------------------------------------------------------------


def _key(row):
    return tuple(row["nums"]), row["target"]


def test_data_order_sorts_the_training_rows_only(puzzles):
    task = get_task("countdown")
    base_train, base_test, info = prepare_dataset(task, puzzles, test_size=6)
    train, test, sorted_info = prepare_dataset(task, puzzles, test_size=6, order="easy_to_hard")
    assert list(test) == list(base_test)  # the held-out rows are untouched
    assert sorted_info.data_order == "easy_to_hard" and info.data_order == "random"
    assert sorted(map(_key, train)) == sorted(map(_key, base_train))
    difficulties = [task.difficulty(row) for row in train]
    assert difficulties == sorted(difficulties) and difficulties != [task.difficulty(r) for r in base_train]
    assert train[0]["prompt"] == task.prompt(train[0])  # prompts rendered after ordering
    staged, staged_test, _ = prepare_dataset(task, puzzles, test_size=6, order="staged", stages=2, replay=0.5)
    assert list(staged_test) == list(base_test)
    assert len(staged) == len(base_train) + round(0.5 * (len(base_train) - len(base_train) // 2))
    half = len(base_train) // 2
    hardest_first_half = max(task.difficulty(r) for r in staged.select(range(half)))
    assert hardest_first_half <= sorted(difficulties)[half - 1]  # stage 1 holds the easier half only


@pytest.mark.parametrize("kwargs, words", [
    (dict(data_order="hard_to_easy"), ["data_order", "hard_to_easy"]),
    (dict(data_order="easy_to_hard", curriculum_stages=3), ["curriculum_stages", "staged"]),
    (dict(curriculum_replay=0.2), ["curriculum_replay", "staged"]),
    (dict(data_order="staged", curriculum_stages=0), ["curriculum_stages", ">= 1"]),
    (dict(data_order="staged", curriculum_replay=2.0), ["curriculum_replay", "[0, 1]"]),
])
def test_data_order_keys_are_checked_in_one_line(kwargs, words):
    with pytest.raises(ValueError) as err:
        DataArguments(**kwargs).check()
    assert "\n" not in str(err.value) and all(w in str(err.value) for w in words)


def test_shuffle_follows_data_order_and_an_explicit_clash_is_one_line(tmp_path, capsys, no_loading):
    from countdown_rl.commands.train import main
    from countdown_rl.training.recipe import check_recipe, parse_args

    argv = ["--config", str(SMOKE), "--model_name_or_path", "m", "--output_dir", str(tmp_path / "out")]
    parsed = parse_args([*argv, "--data_order", "staged"])
    check_recipe(*parsed)
    assert parsed[1].shuffle_dataset is False
    parsed = parse_args(argv)
    check_recipe(*parsed)
    assert parsed[1].shuffle_dataset is True
    parsed = parse_args([*argv, "--data_order", "easy_to_hard", "--shuffle_dataset", "false"])
    check_recipe(*parsed)
    assert parsed[1].shuffle_dataset is False

    assert main([*argv, "--data_order", "easy_to_hard", "--shuffle_dataset", "true"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("countdown-rl train: error: shuffle_dataset") and "data_order" in err
    assert "\n" not in err and not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------------------------
# 3. Training with a schedule
# ---------------------------------------------------------------------------------------------------------------


def _trainer(model_dir, out, reward, train_dataset=None, eval_dataset=None, **overrides):
    return tiny_trainer(model_dir, out, reward=reward, train_dataset=train_dataset, eval_dataset=eval_dataset,
                        **{**SCHEDULED, **overrides})


def test_each_rollout_uses_the_budget_of_its_step(tiny_model_dir, tmp_path):
    reward = recording_reward()
    trainer = _trainer(tiny_model_dir, tmp_path, reward, eval_dataset=puzzle_rows(4), max_steps=3,
                       eval_strategy="steps", eval_steps=1, per_device_eval_batch_size=4)
    trainer.train()
    assert [c["step"] for c in reward.calls] == [0, 1, 2]
    check_budgets(reward.calls, [4, 4, 8])
    assert logged(trainer, "completion_budget") == [4.0, 4.0, 8.0]
    assert logged(trainer, "completions/max_length") == [4.0, 4.0, 8.0]
    # In-training evaluation after steps 1, 2 and 3 at the budget of the next rollout: 4, 8, 8 tokens at most.
    evals = [h for h in trainer.state.log_history if "eval_mean_completion_tokens" in h]
    assert [h["step"] for h in evals] == [1, 2, 3]
    assert evals[0]["eval_mean_completion_tokens"] <= 4 < evals[1]["eval_mean_completion_tokens"] <= 8
    assert trainer.evaluate_task(puzzle_rows(4)).max_tokens == 8
    assert trainer.generation_config.max_new_tokens == 8


def test_a_reused_rollout_keeps_its_budget_and_dr_grpo_normalises_by_it(tiny_model_dir, tmp_path):
    # num_iterations=2: the rollout of step 0 (budget 4) also trains step 1, whose own budget would be 8.
    reward = recording_reward()
    trainer = _trainer(tiny_model_dir, tmp_path, reward, algorithm="dr_grpo", num_iterations=2,
                       budget_schedule=[[0, 4], [1, 8]])
    trainer.train()
    assert [c["step"] for c in reward.calls] == [0, 2]
    check_budgets(reward.calls, [4, 8])
    assert logged(trainer, "completion_budget") == [4.0, 4.0, 8.0, 8.0]

    # The loss of one 4-token rollout at step 1 (schedule: 8), with unit advantages: -tokens / (4 * rows).
    trainer.state.global_step = 0
    trainer.model.train()
    batch = trainer._generate_and_score_completions([row for row in puzzle_rows(2) for _ in range(4)])
    trainer.state.global_step = 1
    batch["advantages"] = torch.ones_like(batch["advantages"])
    trainer.model.eval()  # no division by the accumulation steps
    tokens = batch["completion_mask"].sum().item()
    assert batch["completion_mask"].size(1) == 4
    loss = trainer._compute_loss(trainer.model, batch).item()
    assert loss == pytest.approx(-tokens / (4 * 8), rel=1e-6)
    trainer.args.drgrpo_num_tokens = 16  # explicit: one constant for the whole run
    assert trainer._compute_loss(trainer.model, batch).item() == pytest.approx(-tokens / (16 * 8), rel=1e-6)


def test_the_vllm_path_generates_with_the_current_budget(tiny_model_dir, tmp_path, monkeypatch):
    """vLLM is cut at TRL's class boundary (tests/helpers/vllm_standin.py samples from the HF model): its budget is
    the ``max_completion_length`` TRL reads into ``SamplingParams(max_tokens=...)`` on each call."""
    import trl.trainer.grpo_trainer as grpo_trainer_module

    from tests.helpers.vllm_standin import HFSamplingVLLMStandIn

    monkeypatch.setattr(grpo_trainer_module, "VLLMGeneration", HFSamplingVLLMStandIn)
    reward = recording_reward()
    trainer = _trainer(tiny_model_dir, tmp_path, reward, use_vllm=True, vllm_mode="colocate", max_steps=2,
                       budget_schedule=[[0, 4], [1, 8]])
    trainer.train()
    assert trainer.vllm_generation.max_completion_length == 8
    check_budgets(reward.calls, [4, 8])
    assert logged(trainer, "completion_budget") == [4.0, 8.0]


# ---------------------------------------------------------------------------------------------------------------
# 4. Resume across a budget change, in the easy-to-hard order
# ---------------------------------------------------------------------------------------------------------------


def test_resume_across_a_budget_change_is_bit_exact_and_keeps_the_order(tiny_model_dir, puzzles, tmp_path):
    task = get_task("countdown")
    train, _, _ = prepare_dataset(task, puzzles, test_size=4, order="easy_to_hard")
    common = dict(max_steps=4, save_strategy="steps", save_steps=2, budget_schedule=[[0, 4], [3, 8]],
                  shuffle_dataset=False, learning_rate=1e-2)

    full_reward = recording_reward()
    full = _trainer(tiny_model_dir, tmp_path / "full", full_reward, train, **common)
    full.train()
    full_weights = {k: v.clone() for k, v in full.model.state_dict().items()}
    del full

    with pytest.raises(RuntimeError, match="simulated crash"):  # in step 3's generation, after checkpoint-2
        _trainer(tiny_model_dir, tmp_path / "resumed", recording_reward(crash_in_call=3), train, **common).train()
    assert (tmp_path / "resumed" / "checkpoint-2").is_dir()
    resumed_reward = recording_reward()
    resumed = _trainer(tiny_model_dir, tmp_path / "resumed", resumed_reward, train, **common)
    resumed.train(resume_from_checkpoint=str(tmp_path / "resumed" / "checkpoint-2"))

    check_budgets(full_reward.calls, [4, 4, 4, 8])
    check_budgets(resumed_reward.calls, [4, 8])  # steps 3 and 4 only: the budget of their step
    assert [c["step"] for c in resumed_reward.calls] == [2, 3]
    assert [c["rows"] for c in resumed_reward.calls] == [c["rows"] for c in full_reward.calls[2:]]
    # One process walks the easy-to-hard rows in order, 2 prompts x 4 completions per step.
    expected = [[[list(r["nums"]), r["target"]]] * 4 for r in train.select(range(8))]
    assert [c["rows"] for c in full_reward.calls] == [a + b for a, b in zip(expected[::2], expected[1::2])]
    moved = [k for k, v in resumed.model.state_dict().items() if not torch.equal(v, full_weights[k])]
    assert not moved, f"{len(moved)} tensors differ after resuming, e.g. {moved[:3]}"
    assert logged(resumed, "completion_budget")[-2:] == [4.0, 8.0]


# ---------------------------------------------------------------------------------------------------------------
# 5. Two processes
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(not (Path(sys.executable).parent / "torchrun").exists() and shutil.which("torchrun") is None,
                    reason="torchrun not installed")
def test_two_processes_see_the_rows_in_the_one_process_order(tiny_model_dir, puzzles, tmp_path):
    """torchrun really starts two processes (gloo on the CPU); accelerate gives rank 0 the first half of each
    generation batch, so rank 0's rows then rank 1's are the easy-to-hard rows in order."""
    torchrun = Path(sys.executable).parent / "torchrun"
    torchrun = str(torchrun) if torchrun.exists() else shutil.which("torchrun")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = [torchrun, "--nproc_per_node", "2", "--master_port", "29561",
           str(ROOT / "tests" / "helpers" / "order_run.py"), str(tiny_model_dir), str(puzzles), str(tmp_path)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, crash_report(done.stderr)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    train, _, _ = prepare_dataset(get_task("countdown"), puzzles, test_size=4, order="easy_to_hard")
    expected = [[[list(r["nums"]), r["target"]]] * 4 for r in train.select(range(6))]
    for rank, calls in enumerate(ranks):
        assert [c["step"] for c in calls] == [0, 1, 2]
        assert [c["rows"] for c in calls] == expected[rank::2], rank
