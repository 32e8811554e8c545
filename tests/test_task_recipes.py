"""The GSM8K, MATH and format-copy recipes carry their seeds' settings and pass the strict parser and checks.

Parsed with ``countdown_rl.training.recipe.parse_args`` (what ``countdown-rl train`` does); GPU recipes get
``--use_cpu true`` on the command line only, as in tests/test_recipes.py.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from unittest import mock

import pytest
import yaml

from countdown_rl.training.recipe import check_recipe, parse_args

ROOT = Path(__file__).resolve().parents[1]
GSM8K = ROOT / "recipes" / "gsm8k" / "qwen2.5-1.5b-instruct" / "grpo_24gb.yaml"
MATH_003 = ROOT / "recipes" / "math" / "qwen2.5-math-1.5b"
MATH_002 = ROOT / "recipes" / "math" / "qwen2.5-1.5b"
FORMAT_COPY = ROOT / "recipes" / "format_copy" / "cpu_tiny.yaml"

# seed 003's variants: file -> (reduction, std_normalization, baseline)
SEED_003 = {
    "masked_mean_std": ("masked_mean", "group", "group_mean"),
    "masked_mean_no_std": ("masked_mean", "none", "group_mean"),
    "constant_std": ("masked_mean_drgrpo", "group", "group_mean"),
    "constant_no_std": ("masked_mean_drgrpo", "none", "group_mean"),
    "no_baseline": ("masked_mean", "none", "none"),
}


def parse(path: Path, cpu: bool = True):
    parsed = parse_args(["--config", str(path), *(["--use_cpu", "true"] if cpu else [])])
    # check_recipe refuses use_vllm where vllm is not installed (it needs CUDA): vllm is cut at TRL's availability
    # check, to run the rest (task, options, template, reward names, batch arithmetic) as train checks them.
    with mock.patch.object(importlib.import_module("trl.import_utils"), "is_vllm_available", lambda *a, **k: True):
        check_recipe(*parsed)
    return parsed


def test_gsm8k_recipe_is_seed_004():
    s, t, m = parse(GSM8K)
    assert (s.task, s.dataset_name, s.dataset_config, s.eval_dataset_split) == ("gsm8k", "openai/gsm8k", "main", "test")
    assert (s.prompt_template, s.reward_funcs) == ("chat", ["gsm8k"])
    assert m.model_name_or_path == "Qwen/Qwen2.5-1.5B-Instruct"
    # group 4, batch of 1 prompt, 128 new tokens, lr 5e-6, clip 0.2, bf16, gradient checkpointing
    assert t.num_generations == 4 and t.generation_batch_size == 4
    assert t.max_completion_length == 128
    assert t.learning_rate == pytest.approx(5e-6) and t.epsilon == pytest.approx(0.2)
    assert t.bf16 is True and t.gradient_checkpointing is True and t.use_vllm is False


@pytest.mark.parametrize("name", sorted(SEED_003))
def test_math_recipes_are_seed_003_variants(name):
    s, t, m = parse(MATH_003 / f"{name}.yaml")
    assert m.model_name_or_path == "Qwen/Qwen2.5-Math-1.5B"
    assert (s.task, s.prompt_template, s.reward_funcs, s.eval_dataset_split) == ("math", "r1_zero", ["r1_zero"], "test")
    assert (t.reduction, t.std_normalization, t.baseline) == SEED_003[name]
    if t.reduction == "masked_mean_drgrpo":
        assert t.drgrpo_num_tokens == 2048
    # 100 steps, lr 1e-5, rollout 64 = 8 prompts x group 8, accumulation 32, on-policy, clip norm 1, T 1, 2048 tokens
    assert t.max_steps == 100 and t.learning_rate == pytest.approx(1e-5)
    assert (t.generation_batch_size, t.num_generations, t.gradient_accumulation_steps) == (64, 8, 32)
    assert t.per_device_train_batch_size * t.gradient_accumulation_steps == 64
    assert t.num_iterations == 1 and t.max_grad_norm == pytest.approx(1.0) and t.temperature == pytest.approx(1.0)
    assert t.max_completion_length == 2048 and t.eval_steps == 10


def test_seed_003_variants_differ_only_in_their_knobs():
    knobs = {"algorithm", "reduction", "std_normalization", "baseline", "drgrpo_num_tokens", "output_dir", "run_name"}
    recipes = {p.stem: yaml.safe_load(p.read_text()) for p in MATH_003.glob("*.yaml")}
    assert set(recipes) == set(SEED_003)
    reference = {k: v for k, v in recipes["masked_mean_std"].items() if k not in knobs}
    for name, recipe in recipes.items():
        assert {k: v for k, v in recipe.items() if k not in knobs} == reference, name


def test_math_recipes_gr_reinforce_vs_grpo_are_seed_002():
    runs = {name: parse(MATH_002 / f"{name}.yaml") for name in ("gr_reinforce", "grpo")}
    for s, t, m in runs.values():
        assert s.task == "math" and s.task_options == ["levels=5"]  # "Math Hard": level 5
        assert m.use_peft is True and t.beta > 0  # LoRA and a KL penalty
        assert s.reward_funcs == ["math_shaped"]
    (_, reinforce, _), (_, grpo_args, _) = runs["gr_reinforce"], runs["grpo"]
    assert (reinforce.num_iterations, grpo_args.num_iterations) == (1, 2)
    for key in ("learning_rate", "generation_batch_size", "num_generations", "per_device_train_batch_size",
                "gradient_accumulation_steps", "beta", "epsilon", "max_completion_length"):
        assert getattr(reinforce, key) == getattr(grpo_args, key), key


def test_format_copy_recipe_is_a_cpu_run_on_generated_rows():
    s, t, m = parse(FORMAT_COPY, cpu=False)
    assert (s.task, s.dataset_name, s.reward_funcs) == ("format_copy", "generated", ["format_copy"])
    assert t.use_cpu is True and t.bf16 is False and t.use_vllm is False
    assert m.model_name_or_path == "outputs/format-copy-warm"  # made by `countdown-rl warmup` (README)
