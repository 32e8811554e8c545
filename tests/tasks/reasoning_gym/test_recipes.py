"""The reasoning-gym recipes go through the strict parser and the train checks: a CPU run on generated rows from a
warm-up of its own training rows, and a GPU run on a mixture."""

from __future__ import annotations

import re

from countdown_rl.data.splits import split_rows
from tests.helpers.env import ROOT
from tests.helpers.recipes import parse

CPU = ROOT / "recipes" / "reasoning_gym" / "cpu_tiny.yaml"
GPU = ROOT / "recipes" / "reasoning_gym" / "qwen3-1.7b-composite.yaml"


def test_the_cpu_recipe_is_a_cpu_run_on_generated_rows_from_its_own_warm_up(tiny_model_dir):
    from transformers import AutoTokenizer

    s, t, m = parse(CPU, cpu=False)
    task = s.check()
    assert (s.task, s.dataset_name, s.reward_funcs) == ("reasoning_gym", "generated", ["reasoning_gym"])
    assert t.use_cpu is True and t.bf16 is False and t.use_vllm is False
    # The setup line warms up on this recipe's rows (--config), so the held-out rows are never learnt, and writes the
    # model the recipe starts from.
    header = CPU.read_text()
    setup = re.search(r"countdown-rl warmup --config recipes/reasoning_gym/cpu_tiny.yaml .*--output_dir (\S+)", header)
    assert setup and setup.group(1) == m.model_name_or_path
    # The generated rows hold enough distinct questions for the held-out size asked, with most left to train on.
    rows = [task.prepare_row(r) for r in task.generate(s.num_generated_rows, seed=s.split_seed)]
    train, test, _ = split_rows(task, rows, s.test_size, s.split_seed)
    assert len(test) == s.test_size and len(train) > 2 * len(test)
    # Every reference answer in tags, with the end of sequence, fits the completion budget (the tiny model's tokens).
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    longest = max(len(tokenizer(task.demonstration(r))["input_ids"]) + 1 for r in train + test)
    assert longest <= t.max_completion_length


def test_the_gpu_recipe_trains_qwen3_on_a_mixture_with_vllm():
    s, t, m = parse(GPU)
    task = s.check()
    assert m.model_name_or_path == "Qwen/Qwen3-1.7B" and t.use_vllm is True and t.vllm_mode == "colocate"
    assert (s.task, s.dataset_name, s.reward_funcs) == ("reasoning_gym", "generated", ["reasoning_gym"])
    names = [spec.name for spec in task.options.specs]
    assert len(names) >= 4 and len(set(names)) == len(names)
    assert t.max_completion_length == 512 and t.vllm_max_model_length >= 512 + 400  # prompts stay under 400 tokens
    assert "pip install -e \".[vllm,tensorboard,reasoning-gym]\"" in GPU.read_text()
