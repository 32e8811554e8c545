"""The GSM8K recipe carries the GSM8K write-up's settings (a 24 GB card) and passes the strict parser and checks."""

from __future__ import annotations

import pytest

from tests.helpers.env import ROOT
from tests.helpers.recipes import parse

GSM8K = ROOT / "recipes" / "gsm8k" / "qwen2.5-1.5b-instruct" / "grpo_24gb.yaml"


def test_gsm8k_recipe_is_the_gsm8k_write_ups():
    s, t, m = parse(GSM8K)
    assert (s.task, s.dataset_name, s.dataset_config, s.eval_dataset_split) == ("gsm8k", "openai/gsm8k", "main", "test")
    assert (s.prompt_template, s.reward_funcs) == ("chat", ["gsm8k"])
    assert m.model_name_or_path == "Qwen/Qwen2.5-1.5B-Instruct"
    # group 4, batch of 1 prompt, 128 new tokens, lr 5e-6, clip 0.2, bf16, gradient checkpointing
    assert t.num_generations == 4 and t.generation_batch_size == 4
    assert t.max_completion_length == 128
    assert t.learning_rate == pytest.approx(5e-6) and t.epsilon == pytest.approx(0.2)
    assert t.bf16 is True and t.gradient_checkpointing is True and t.use_vllm is False
