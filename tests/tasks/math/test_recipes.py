"""The MATH recipes carry the GR-REINFORCE study's and the MATH ablations' settings and pass the strict parser
and checks."""

from __future__ import annotations

import pytest
import yaml

from tests.helpers.env import ROOT
from tests.helpers.recipes import parse

MATH_003 = ROOT / "recipes" / "math" / "qwen2.5-math-1.5b"
MATH_002 = ROOT / "recipes" / "math" / "qwen2.5-1.5b"

# the MATH ablations' variants: file -> (reduction, std_normalization, baseline)
SEED_003 = {
    "masked_mean_std": ("masked_mean", "group", "group_mean"),
    "masked_mean_no_std": ("masked_mean", "none", "group_mean"),
    "constant_std": ("masked_mean_drgrpo", "group", "group_mean"),
    "constant_no_std": ("masked_mean_drgrpo", "none", "group_mean"),
    "no_baseline": ("masked_mean", "none", "none"),
}


@pytest.mark.parametrize("name", sorted(SEED_003))
def test_math_recipes_are_the_math_ablations_variants(name):
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


def test_the_math_ablations_variants_differ_only_in_their_knobs():
    knobs = {"algorithm", "reduction", "std_normalization", "baseline", "drgrpo_num_tokens", "output_dir", "run_name"}
    recipes = {p.stem: yaml.safe_load(p.read_text()) for p in MATH_003.glob("*.yaml")}
    assert set(recipes) == set(SEED_003)
    reference = {k: v for k, v in recipes["masked_mean_std"].items() if k not in knobs}
    for name, recipe in recipes.items():
        assert {k: v for k, v in recipe.items() if k not in knobs} == reference, name


def test_math_recipes_gr_reinforce_vs_grpo_are_the_studys_settings():
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
