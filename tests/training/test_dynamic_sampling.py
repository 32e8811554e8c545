"""dynamic_sampling (DAPO's group filter): the config refuses what cannot hold in one line; a step keeps exactly the
differing groups in draw order and logs the right counts; its update equals a stock TRL step on the kept groups; a
cap hit fills the batch and says so once; gradient accumulation and the task's outcome rule work."""

from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from trl import GRPOConfig, GRPOTrainer

from countdown_rl.runs.record import RunRecord, read_run_record, write_run_record
from countdown_rl.training.trainer import CountdownGRPOConfig, CountdownGRPOTrainer
from tests.helpers.env import ROOT, crash_report
from tests.helpers.split_reward import DIFFER, G, batch_puzzles, puzzle_index, split_reward
from tests.helpers.trainers import TINY_ARGS, GradientRecorder, puzzle_rows, tiny_trainer

pytestmark = pytest.mark.usefixtures("one_torch_thread")

def constant_reward(completions, **kwargs):
    return [0.5] * len(completions)


class FixedCompletions:
    """Completions fixed by the prompt and the row's place in its group (no sampling), so that two runs generate the
    same completions for the same groups; 4 to 8 tokens long, so token counts differ between batches."""

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        return [[(sum(ids) * 7 + (i % G) * 13 + k * 3) % 300 + 20 for k in range(4 + (sum(ids) + 3 * (i % G)) % 5)]
                for i, ids in enumerate(prompt_ids)], None


class FixedOurs(FixedCompletions, CountdownGRPOTrainer):
    pass


class FixedStock(FixedCompletions, GRPOTrainer):
    pass


def _trainer(model_dir, out, **overrides):
    keys = dict(reward=split_reward, task=None, trainer_cls=FixedOurs, train_dataset=puzzle_rows(16),
                shuffle_dataset=False, max_steps=1, dynamic_sampling=True, shared_prompt_forward=False)
    return tiny_trainer(model_dir, out, **{**keys, **overrides})


def _spy(trainer):
    """Record each round's puzzles (in draw order, one per group) and the step's final batch."""
    drawn, batches = [], []
    score, fill = trainer._score_rollouts, trainer._dynamic_sampling_batch

    def scored(inputs):
        drawn.append([puzzle_index(row["prompt"]) for row in inputs[::G]])
        return score(inputs)

    def filled(inputs):
        batches.append(fill(inputs))
        return batches[-1]

    trainer._score_rollouts, trainer._dynamic_sampling_batch = scored, filled
    return drawn, batches


def _logged(trainer, key):
    return [h[key] for h in trainer.state.log_history if key in h]


@pytest.mark.parametrize(("keys", "message"), [
    ({"dynamic_sampling_max_rounds": 0}, r"dynamic_sampling_max_rounds must be >= 1 \(1: no extra round\), got 0"),
    ({"dynamic_sampling_min_groups": 3}, r"dynamic_sampling_min_groups=3 is more than the generation batch's 2 "),
    ({"dynamic_sampling_min_groups": 0}, r"dynamic_sampling_min_groups must be >= 1"),
    ({"scale_rewards": "batch"}, r"dynamic_sampling needs per-group advantages, but scale_rewards"),
    ({"std_normalization": "batch"}, r"dynamic_sampling needs per-group advantages, but scale_rewards"),
    ({"multi_objective_aggregation": "normalize_then_sum"}, r"dynamic_sampling needs per-group advantages, but multi"),
    ({"beta": 0.04}, r"dynamic_sampling needs beta 0 \(got beta=0.04\): a dropped group"),
    ({"per_device_train_batch_size": 6, "num_generations": 3, "gradient_accumulation_steps": 1,
      "steps_per_generation": 1}, None),  # 6 rows = 2 groups of 3: fine
])
def test_the_config_refuses_what_cannot_hold_in_one_line(tmp_path, keys, message):
    build = lambda: CountdownGRPOConfig(output_dir=str(tmp_path), **{**TINY_ARGS, "dynamic_sampling": True, **keys})
    if message is None:
        assert build().dynamic_sampling
        return
    with pytest.raises(ValueError, match="^" + message) as error:
        build()
    assert "\n" not in str(error.value)
    keys.pop("beta", None)  # off, nothing is refused
    assert not CountdownGRPOConfig(output_dir=str(tmp_path), **{**TINY_ARGS, **keys}).dynamic_sampling


def test_a_process_split_group_is_refused(tmp_path, monkeypatch):
    """Two processes of 2 rows each with groups of 4: a group would be split across them (the world size is read
    by TRL's __post_init__)."""
    monkeypatch.setattr(GRPOConfig, "world_size", property(lambda self: 2))
    with pytest.raises(ValueError, match=r"^dynamic_sampling keeps whole groups per process, but each process's "
                                         r"rows \(per_device_train_batch_size x steps_per_generation = 2\)"):
        CountdownGRPOConfig(output_dir=str(tmp_path), **{**TINY_ARGS, "per_device_train_batch_size": 2,
                                                         "dynamic_sampling": True})


def test_a_step_keeps_the_differing_groups_in_draw_order_and_logs_the_counts(tiny_model_dir, tmp_path):
    trainer = _trainer(tiny_model_dir, tmp_path)
    drawn, batches = _spy(trainer)
    trainer.train()
    order = [p for round_ in drawn for p in round_]
    assert drawn[0] == [1, 2] and len(drawn) >= 2  # round 1 is TRL's batch, one group of two differs
    differing = [p for p in order if p in DIFFER]
    # the step stops at the first round that brings the second differing group (or at the cap, 4)
    rounds = min(next(r + 1 for r in range(len(drawn)) if sum(p in DIFFER for q in drawn[:r + 1] for p in q) >= 2), 4)
    assert len(drawn) == rounds
    (batch,) = batches
    assert batch_puzzles(trainer, batch) == [p for p in differing[:2] for _ in range(G)]
    assert _logged(trainer, "dynamic_sampling/rounds") == [rounds]
    assert _logged(trainer, "dynamic_sampling/prompts_drawn") == [2 * rounds]
    assert _logged(trainer, "dynamic_sampling/groups_kept") == [min(len(differing), 2)]
    assert _logged(trainer, "dynamic_sampling/short") == [float(len(differing) < 2)]
    # TRL's token count over the kept rows, budgets aligned
    assert int(batch["num_items_in_batch"]) == int(batch["completion_mask"].sum())
    assert len(batch["completion_budget"]) == 2 * G and batch["advantages"].shape == (2 * G,)
    assert trainer.dynamic_sampling_ran["rounds"] == rounds


def test_a_step_equals_a_stock_trl_step_on_the_kept_groups(tiny_model_dir, tmp_path):
    """Same model, same completions (FixedCompletions): the gradient of the dynamic-sampling step equals stock TRL's
    on a dataset made of the kept puzzles alone.

    Tolerance: the two steps run the same operations on the same rows; they differ only in the row order (TRL shuffles
    the batch with the global RNG) and in the prompts' left padding (round 1's batch is padded to its own longest
    prompt before the rows are joined and trimmed; a uniform shift of positions leaves RoPE's relative angles equal in
    exact arithmetic). In float32 (unit roundoff u = 6e-8) each gradient entry is a sum over 64 completion tokens of
    products through 2 layers of width <= 128: a bound of about (64 + 2 * 128) u = 2e-5 relative to the gradient's
    size; rtol 1e-4 (norm-wise, per tensor) leaves a factor 5 for other kernel sets' reduction orders."""
    ours = _trainer(tiny_model_dir, tmp_path / "ours")
    drawn, batches = _spy(ours)
    seen = GradientRecorder()
    ours.add_callback(seen)
    ours.train()
    kept = sorted(set(batch_puzzles(ours, batches[0])), key=batch_puzzles(ours, batches[0]).index)
    rows = puzzle_rows(16).select([p - 1 for p in kept])
    stock = tiny_trainer(tiny_model_dir, tmp_path / "stock", reward=split_reward, task=None, trainer_cls=FixedStock,
                         config_cls=GRPOConfig, train_dataset=rows, shuffle_dataset=False, max_steps=1)
    stock_seen = GradientRecorder()
    stock.add_callback(stock_seen)
    stock.train()
    assert len(drawn) >= 2 and _logged(ours, "reward") != _logged(stock, "reward")  # ours averaged every round
    (mine,), (theirs,) = seen.steps, stock_seen.steps
    assert set(mine) == set(theirs)
    assert sum(g.norm() for g in theirs.values()) > 0
    for name, grad in theirs.items():
        assert (mine[name] - grad).norm() <= 1e-4 * grad.norm() + 1e-12, name


def test_the_cap_fills_the_batch_says_so_once_and_records_it(tiny_model_dir, tmp_path, caplog):
    write_run_record(tmp_path, RunRecord())
    trainer = _trainer(tiny_model_dir, tmp_path, reward=constant_reward, dynamic_sampling_max_rounds=2, max_steps=2)
    drawn, batches = _spy(trainer)
    with caplog.at_level(logging.WARNING, logger="countdown_rl.training.trainer"):
        trainer.train()
    said = [r.getMessage() for r in caplog.records if "dynamic_sampling:" in r.getMessage()]
    assert len(said) == 1 and "\n" not in said[0]
    assert said[0].startswith("dynamic_sampling: 2 generation rounds (dynamic_sampling_max_rounds) found 0 of the 2 ")
    assert _logged(trainer, "dynamic_sampling/short") == [1.0, 1.0]
    assert _logged(trainer, "dynamic_sampling/rounds") == [2.0, 2.0]
    assert _logged(trainer, "dynamic_sampling/groups_kept") == [0.0, 0.0]
    # filled with the first groups drawn (round 1's), the batch's shape kept
    assert batch_puzzles(trainer, batches[0]) == [p for p in drawn[0] for _ in range(G)]
    assert all(b["completion_ids"].size(0) == 2 * G for b in batches)
    assert all(math.isfinite(loss) for loss in _logged(trainer, "loss"))
    record = read_run_record(tmp_path).extra["dynamic_sampling"]
    assert record == {"max_rounds": 2, "min_groups": "all", "rule": "summed reward", "generation_batches": 2,
                      "rounds": 4, "prompts_drawn": 8, "groups_kept": 0, "short_batches": 2}


def test_gradient_accumulation_and_a_group_target(tiny_model_dir, tmp_path):
    """steps_per_generation 2 (two micro-batches of one generation batch) and min_groups 1: round 1 already holds
    one differing group, so it is TRL's batch as drawn."""
    trainer = _trainer(tiny_model_dir, tmp_path, per_device_train_batch_size=4, gradient_accumulation_steps=2,
                       dynamic_sampling_min_groups=1)
    drawn, batches = _spy(trainer)
    trainer.train()
    assert drawn == [[1, 2]] and _logged(trainer, "dynamic_sampling/rounds") == [1]
    assert _logged(trainer, "dynamic_sampling/groups_kept") == [1] and _logged(trainer, "dynamic_sampling/short") == [0]
    assert trainer.state.global_step == 1 and len(trainer._buffered_inputs) == 2
    assert all(chunk["completion_ids"].size(0) == G for chunk in trainer._buffered_inputs)
    assert math.isfinite(_logged(trainer, "loss")[0])

    more = _trainer(tiny_model_dir, tmp_path / "all", per_device_train_batch_size=4, gradient_accumulation_steps=2)
    more_drawn, more_batches = _spy(more)
    more.train()
    assert len(more_drawn) >= 2 and set(batch_puzzles(more, more_batches[0])) <= DIFFER


@pytest.mark.parametrize(("half_correct", "kept"), [(set(), 0), ({1}, 1)])
def test_with_a_task_the_groups_are_judged_by_their_outcome(tiny_model_dir, tmp_path, monkeypatch, half_correct, kept):
    """A task's outcome decides, not the reward: the reward differs in puzzle 2's group (DIFFER), but the judge calls
    every completion wrong but half of those of the puzzles in ``half_correct``; one round (the cap)."""
    from dataclasses import replace

    from countdown_rl.tasks import Outcome

    trainer = _trainer(tiny_model_dir, tmp_path, task="countdown", dynamic_sampling_max_rounds=1)
    calls = []

    def rigged(text, example):
        calls.append(None)
        correct = example["nums"][0] in half_correct and len(calls) % 2 == 0
        return replace(judge(text, example), outcome=Outcome.CORRECT if correct else Outcome.FAILED)

    judge = trainer.task.judge
    monkeypatch.setattr(trainer.task, "judge", rigged)
    trainer.train()
    assert _logged(trainer, "dynamic_sampling/groups_kept") == [kept]
    assert _logged(trainer, "outcomes/correct") == [len(half_correct) * 2 / 8]
    assert trainer.dynamic_sampling_ran["rule"] == "task outcome"


def test_the_keys_come_from_a_recipe_and_bad_ones_are_refused_before_a_model_loads():
    from countdown_rl.training.recipe import recipe_from_keys

    keys = {"output_dir": "/tmp/unused", "report_to": "none", "use_cpu": True, "bf16": False,
            "per_device_train_batch_size": 8, "num_generations": 4, "dynamic_sampling": True}
    _, training, _ = recipe_from_keys({**keys, "dynamic_sampling_max_rounds": 3, "dynamic_sampling_min_groups": 1})
    assert (training.dynamic_sampling, training.dynamic_sampling_max_rounds, training.dynamic_sampling_min_groups) == (
        True, 3, 1)
    with pytest.raises(ValueError, match=r"^dynamic_sampling_max_rounds must be >= 1 \(1: no extra round\), got 0$"):
        recipe_from_keys({**keys, "dynamic_sampling_max_rounds": 0})


@pytest.mark.slow
@pytest.mark.skipif(not (Path(sys.executable).parent / "torchrun").exists(), reason="torchrun not installed")
def test_two_processes_run_the_same_rounds_and_keep_their_own_groups(tiny_model_dir, tmp_path):
    """Two processes over gloo (torchrun), one group each, TRL's vLLM path (stand-in backend), two steps: both run the
    same rounds, each draws its own share of a round's prompts and keeps whole groups of its own."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = [str(Path(sys.executable).parent / "torchrun"), "--nproc_per_node", "2", "--master_port", "29541",
           str(ROOT / "tests" / "helpers" / "dynamic_sampling_run.py"), str(tiny_model_dir), str(tmp_path)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, crash_report(proc.stderr)
    ranks = [json.loads((tmp_path / f"rank-{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["ran"] == ranks[1]["ran"] and ranks[0]["ran"]["generation_batches"] == 2
    assert ranks[0]["ran"]["rounds"] > 2  # some batch needed an extra round (round 1 is puzzles 1 and 2)
    for one, two in zip(ranks[0]["batches"], ranks[1]["batches"], strict=True):
        assert len(one["rounds"]) == len(two["rounds"])
        for mine, theirs in zip(one["rounds"], two["rounds"]):
            assert len(mine) == len(theirs) == 1 and mine != theirs  # disjoint shares of each round
        for rank in (one, two):
            assert rank["rows"] == G and rank["kept"][0] in [p for r in rank["rounds"] for p in r]
    kept = sum(p in DIFFER for rank in ranks for batch in rank["batches"] for p in batch["kept"])
    assert kept == ranks[0]["ran"]["groups_kept"]


@pytest.mark.slow
def test_the_compiled_backend_generates_every_round(tiny_model_dir, tmp_path):
    """generation_backend compiled (torch.compile'd decoding, ~40 s to compile here): the extra rounds generate
    through it too and the step keeps the differing groups."""
    trainer = tiny_trainer(tiny_model_dir, tmp_path, reward=split_reward, task=None, train_dataset=puzzle_rows(16),
                           shuffle_dataset=False, max_steps=1, dynamic_sampling=True, generation_backend="compiled")
    drawn, batches = _spy(trainer)
    trainer.train()
    assert trainer.rollouts == "compiled" and len(drawn) >= 2
    assert set(batch_puzzles(trainer, batches[0])) <= DIFFER
