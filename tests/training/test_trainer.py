"""CountdownGRPOTrainer in training: learning, degenerate batches, the vLLM path and two processes."""

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from countdown_rl.tasks import get_task
from countdown_rl.training.trainer import CountdownGRPOConfig, CountdownGRPOTrainer
from tests.helpers.trainers import char_diversity_reward, puzzle_rows, tiny_trainer

from tests.helpers.env import ROOT, crash_report


def even_token_reward(completions, completion_ids, **kwargs):
    """Dense, quickly learnable toy reward: the share of completion tokens with an even id (0.5 at random)."""
    return [sum(t % 2 == 0 for t in ids) / max(len(ids), 1) for ids in completion_ids]


def constant_reward(completions, **kwargs):
    return [0.5] * len(completions)


def _trainer(model_dir, tmp_path, reward, **overrides):
    return tiny_trainer(model_dir, tmp_path, reward=reward, **overrides)


def _history(trainer, key):
    return [h[key] for h in trainer.state.log_history if key in h]


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["grpo", "dr_grpo"])
def test_mean_reward_rises_with_a_dense_reward(tiny_model_dir, tmp_path, algorithm):
    """Fails if a sign is flipped anywhere between the reward and the gradient."""
    trainer = _trainer(tiny_model_dir, tmp_path, even_token_reward, algorithm=algorithm, max_steps=40,
                       learning_rate=1e-2, max_completion_length=12)
    trainer.train()
    rewards = _history(trainer, "reward")
    assert len(rewards) == 40
    first, last = sum(rewards[:5]) / 5, sum(rewards[-5:]) / 5
    assert last > first + 0.15, f"mean reward did not rise: first steps {first:.3f}, last steps {last:.3f}"


def test_equal_rewards_give_zero_advantages_and_a_finite_loss(tiny_model_dir, tmp_path):
    trainer = _trainer(tiny_model_dir, tmp_path, constant_reward, algorithm="grpo", beta=0.04)
    trainer.train()
    assert all(math.isfinite(loss) for loss in _history(trainer, "loss"))
    assert _history(trainer, "advantages/frac_zero_std_groups") == [1.0, 1.0]
    assert _history(trainer, "advantages/max") == [0.0, 0.0]
    assert set(trainer._logs["advantages"]) == {0.0}


@pytest.mark.parametrize("algorithm", ["grpo", "dr_grpo"])
def test_empty_and_truncated_completions_give_a_finite_loss(tiny_model_dir, tmp_path, algorithm):
    trainer = _trainer(tiny_model_dir, tmp_path, char_diversity_reward, algorithm=algorithm, beta=0.04)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    prompt_ids = torch.tensor([[5, 6, 7], [5, 6, 7]])
    batch = {
        "prompt_ids": prompt_ids,
        "prompt_mask": torch.ones_like(prompt_ids),
        "completion_ids": torch.tensor([[1, 1, 1, 1], [9, 10, 11, 12]]),
        # an empty completion (EOS dropped, all padding) and one cut at max length (no EOS)
        "completion_mask": torch.tensor([[0, 0, 0, 0], [1, 1, 1, 1]]),
        "advantages": torch.tensor([1.0, -1.0]),
        "ref_per_token_logps": torch.full((2, 4), -6.0),
    }
    loss = trainer._compute_loss(trainer.model, batch)
    loss.backward()
    assert math.isfinite(loss.item())
    assert all(torch.isfinite(p.grad).all() for p in trainer.model.parameters() if p.grad is not None)


def test_countdown_outcomes_and_lengths_are_logged(tiny_model_dir, tmp_path):
    trainer = _trainer(tiny_model_dir, tmp_path, char_diversity_reward, max_steps=1)
    trainer.train()
    (log,) = [h for h in trainer.state.log_history if "loss" in h]
    assert log["outcomes/correct"] + log["outcomes/partial"] + log["outcomes/failed"] == pytest.approx(1.0)
    assert 0 < log["outcomes/mean_length_incorrect"] <= 8
    for key in ("advantages/mean", "advantages/std", "entropy", "clip_ratio/region_mean"):
        assert key in log


def test_vllm_path_with_a_standin_backend(tiny_model_dir, tmp_path, monkeypatch):
    """vLLM (and a GPU) are not available here: TRL's generation backend class is replaced by a stand-in that samples
    from the HF model and returns its log-probs, so TRL's vLLM code path (weight sync, importance-sampling ratio)
    runs with our advantages and loss."""
    import trl.trainer.grpo_trainer as grpo_trainer_module

    from tests.helpers.vllm_standin import HFSamplingVLLMStandIn

    monkeypatch.setattr(grpo_trainer_module, "VLLMGeneration", HFSamplingVLLMStandIn)
    HFSamplingVLLMStandIn.calls_to_sync = 0
    trainer = _trainer(tiny_model_dir, tmp_path, char_diversity_reward, use_vllm=True, vllm_mode="colocate")
    trainer.train()
    assert HFSamplingVLLMStandIn.calls_to_sync == 2  # weights pushed once per generation step
    (ratio_mean,) = set(_history(trainer, "sampling/importance_sampling_ratio/mean")[:1])
    assert ratio_mean == pytest.approx(1.0, abs=1e-3)  # same model sampled and scored: ratio ~ 1
    assert all(math.isfinite(loss) for loss in _history(trainer, "loss"))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("torchrun") is None and not os.path.exists(Path(sys.executable).parent / "torchrun"),
                    reason="torchrun not installed")
@pytest.mark.parametrize("algorithm", ["grpo", "dr_grpo"])
def test_two_processes_match_one_process_at_the_same_global_batch(tiny_model_dir, tmp_path, algorithm):
    """DDP over gloo on CPU (torchrun really starts two processes; `accelerate launch --cpu` would start one)."""
    torchrun = str(Path(sys.executable).parent / "torchrun")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    results = {}
    for nproc in (1, 2):
        out = tmp_path / f"losses-{nproc}.json"
        cmd = [torchrun, "--nproc_per_node", str(nproc), "--master_port", str(29500 + nproc + (algorithm == "grpo") * 10),
               str(ROOT / "tests" / "helpers" / "ddp_run.py"), str(tiny_model_dir), str(out), algorithm]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, crash_report(proc.stderr)
        results[nproc] = json.loads(out.read_text())
    one, two = results[1], results[2]
    assert len(one["loss"]) == 3
    assert any(g > 0 for g in one["grad_norm"]), "the run must learn something for the comparison to mean anything"
    # GRPO's on-policy loss is ~1e-7 of float noise (group-normalised advantages sum to zero); the gradient is not.
    assert two["loss"] == pytest.approx(one["loss"], rel=1e-4, abs=1e-6)
    for key in ("reward", "grad_norm"):
        assert two[key] == pytest.approx(one[key], rel=1e-4), key


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("torchrun") is None and not os.path.exists(Path(sys.executable).parent / "torchrun"),
                    reason="torchrun not installed")
def test_prompt_once_under_ddp_equals_the_plain_pass(tiny_model_dir, tmp_path):
    """Two DDP processes, one group each: shared_prompt_forward on (the prompt pass beside DDP, the completions
    through it) gives the losses and gradient norms of the same launch with it off."""
    torchrun = str(Path(sys.executable).parent / "torchrun")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    results = {}
    for flag, port in (("on", 29531), ("off", 29532)):
        out = tmp_path / f"losses-{flag}.json"
        cmd = [torchrun, "--nproc_per_node", "2", "--master_port", str(port),
               str(ROOT / "tests" / "helpers" / "ddp_run.py"), str(tiny_model_dir), str(out), "dr_grpo", flag]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, crash_report(proc.stderr)
        results[flag] = json.loads(out.read_text())
    assert any(g > 0 for g in results["off"]["grad_norm"])
    for key in ("loss", "reward", "grad_norm"):
        assert results["on"][key] == pytest.approx(results["off"][key], rel=1e-4, abs=1e-6), key


def test_in_training_evaluation_logs_countdown_metrics_and_final_eval_reaches_the_card(tiny_model_dir, tmp_path):
    trainer = CountdownGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(tiny_model_dir), reward_funcs=[char_diversity_reward],
        args=CountdownGRPOConfig(
            output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", per_device_train_batch_size=8,
            per_device_eval_batch_size=8, num_generations=4, max_completion_length=8, max_steps=2, logging_steps=1,
            save_strategy="no", eval_strategy="steps", eval_steps=1, seed=0, algorithm="dr_grpo",
        ),
        train_dataset=puzzle_rows(), eval_dataset=puzzle_rows(4),
        processing_class=AutoTokenizer.from_pretrained(tiny_model_dir),
        task=get_task("countdown"),
    )
    trainer.train()
    evals = [h for h in trainer.state.log_history if "eval_accuracy" in h]
    assert [h["step"] for h in evals] == [1, 2]
    for h in evals:
        assert h["eval_accuracy"] + h["eval_partial"] + h["eval_failed"] == pytest.approx(1.0)
        assert 0 < h["eval_mean_completion_tokens"] <= 8
    train_logs = [h for h in trainer.state.log_history if "loss" in h]
    assert len(train_logs) == 2 and all("reward" in h for h in train_logs), "evaluation must not swallow train logs"

    result = trainer.evaluate_task(puzzle_rows(4), final=True)
    saved = json.loads((tmp_path / "eval" / "eval.json").read_text())
    assert saved["results"][0]["accuracy"] == result.accuracy and saved["results"][0]["max_tokens"] == 8
    trainer.create_model_card(dataset_name="generated-puzzles")
    card = (tmp_path / "README.md").read_text()
    assert "- dr-grpo" in card and "- countdown-rl" in card and "generated-puzzles" in card
    assert f"| 8 | {100 * result.accuracy:.1f}% | {result.correct} / {result.partial} / {result.failed} |" in card


def test_trl_eval_metrics_are_computed_beside_the_tasks_in_one_evaluation(tiny_model_dir, tmp_path):
    """trl_eval_metrics: one evaluation holds the task's greedy metrics and TRL's (loss, rewards over
    num_generations_eval sampled completions per prompt): in the returned dict, the logged line and the one
    on_evaluate event that early stopping and best-model selection read."""
    from transformers import TrainerCallback

    events = []

    class Seen(TrainerCallback):
        def on_evaluate(self, args, state, control, metrics=None, **kwargs):
            events.append(dict(metrics))

    trainer = tiny_trainer(tiny_model_dir, tmp_path, eval_dataset=puzzle_rows(2), trl_eval_metrics=True,
                           per_device_eval_batch_size=4, num_generations_eval=4)
    trainer.add_callback(Seen())
    metrics = trainer.evaluate()
    wanted = {"eval_accuracy", "eval_partial", "eval_failed", "eval_mean_completion_tokens", "eval_loss",
              "eval_reward", "eval_rewards/char_diversity_reward/mean"}
    assert wanted <= set(metrics) and len(events) == 1 and wanted <= set(events[0])
    assert wanted <= set(trainer.state.log_history[-1])
    task_only = tiny_trainer(tiny_model_dir, tmp_path / "task", eval_dataset=puzzle_rows(2)).evaluate()
    assert set(task_only) == {"eval_accuracy", "eval_partial", "eval_failed", "eval_mean_completion_tokens"}


def test_a_best_model_metric_the_evaluation_will_not_compute_is_refused_before_training(tiny_model_dir, tmp_path):
    """Only the task's metrics exist without trl_eval_metrics: eval_reward (or load_best_model_at_end's default,
    eval_loss) would fail at the first evaluation, after training steps; the trainer refuses when built."""
    rows = puzzle_rows(2)
    with pytest.raises(ValueError, match=r"^metric_for_best_model='eval_reward': the task's evaluation computes "
                                         r"eval_accuracy, eval_partial, eval_failed, eval_mean_completion_tokens, "
                                         r"not eval_reward; name one of those, or set trl_eval_metrics: true"):
        tiny_trainer(tiny_model_dir, tmp_path / "a", eval_dataset=rows, metric_for_best_model="eval_reward")
    with pytest.raises(ValueError, match=r"^metric_for_best_model='loss'.*not eval_loss"):
        tiny_trainer(tiny_model_dir, tmp_path / "b", eval_dataset=rows, load_best_model_at_end=True,
                     eval_strategy="steps", save_strategy="steps")
    assert tiny_trainer(tiny_model_dir, tmp_path / "c", eval_dataset=rows, metric_for_best_model="accuracy")
    assert tiny_trainer(tiny_model_dir, tmp_path / "d", eval_dataset=rows, metric_for_best_model="eval_reward",
                        trl_eval_metrics=True, per_device_eval_batch_size=4)
    assert tiny_trainer(tiny_model_dir, tmp_path / "e", task=None, eval_dataset=rows,  # no task: TRL's evaluation
                        metric_for_best_model="eval_reward", per_device_eval_batch_size=4)
