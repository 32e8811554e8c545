"""Model loading (countdown_rl.models.loading): a recipe's model with its check between the tokenizer and the
weights, an adapter's base, the dtype names. An adapter evaluated merged: tests/commands/test_evaluate.py; the
merge after training: tests/commands/test_train.py."""

import json
from types import SimpleNamespace

import pytest
import torch

from countdown_rl.models.loading import adapter_base, is_adapter, load_recipe_model, torch_dtype


def test_dtype_names_become_torch_dtypes_and_auto_stays():
    assert torch_dtype(None) is None and torch_dtype("auto") == "auto"
    assert torch_dtype("bfloat16") is torch.bfloat16 and torch_dtype(torch.float16) is torch.float16


def test_an_adapter_folder_names_its_base_or_is_one_line(tmp_path):
    assert not is_adapter(tmp_path)
    (tmp_path / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "owner/base"}))
    assert is_adapter(tmp_path) and adapter_base(tmp_path) == "owner/base"
    (tmp_path / "adapter_config.json").write_text("{}")
    with pytest.raises(ValueError, match="names no base_model_name_or_path"):
        adapter_base(tmp_path)


def test_a_recipe_model_is_checked_before_its_weights_load(tiny_model_dir, monkeypatch):
    import transformers

    args = SimpleNamespace(model_name_or_path=str(tiny_model_dir), model_revision="main", dtype="float32",
                           attn_implementation=None)
    seen = []
    model, tokenizer = load_recipe_model(args, check_config=lambda tok, config: seen.append(config.model_type))
    assert seen == ["qwen3"] and model.dtype == torch.float32 and tokenizer.eos_token

    def tripwire(*a, **k):
        raise AssertionError("the weights were loaded after a failed check")

    def refuse(tok, config):
        raise ValueError("refused")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", tripwire)
    with pytest.raises(ValueError, match="refused"):
        load_recipe_model(args, check_config=refuse)
