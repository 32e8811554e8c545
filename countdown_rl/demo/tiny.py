"""A tiny tokenizer and a small random Qwen3, built offline, for tests and the CPU demo.

Nothing can be downloaded from the Hub here, so the project makes its own model:

1. Generate Countdown puzzles with the project's generator and render them with every prompt template, plus the
   solver's reasoning traces: the tokenizer's training corpus.
2. Train a byte-level BPE (digits split one per token, so arithmetic stays learnable) with ChatML specials.
3. Build ``Qwen3ForCausalLM`` from a small config with a fixed seed: the same seed gives byte-identical weights.
4. ``save_tiny_model`` writes both with ``save_pretrained`` so every loader (TRL's reference model included, which
   re-reads ``config._name_or_path``) finds them on disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|pad|>", "<|im_start|>", "<|im_end|>"]


@dataclass(frozen=True)
class TinySize:
    """Shape of a tiny Qwen3."""

    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int


# "test": ~100k parameters, a training step in ~0.1 s. "demo": 267k parameters, the CPU demo's SFT + GRPO in ~10 min.
SIZES = {
    "test": TinySize(64, 128, 2, 4, 2, 16),
    "demo": TinySize(96, 256, 2, 8, 4, 16),
}


def _corpus(num_puzzles: int, seed: int) -> list[str]:
    from countdown_rl.tasks.countdown.prompts import PROMPT_TEMPLATES, build_prompt
    from countdown_rl.tasks.countdown.puzzles import generate_countdown, solver_trace

    lines: list[str] = []
    for puzzle in generate_countdown(num_puzzles, seed=seed):
        nums, target = puzzle["nums"], puzzle["target"]
        for name in PROMPT_TEMPLATES:
            prompt = build_prompt(nums, target, template=name)
            if isinstance(prompt, str):
                lines.append(prompt)
            else:
                lines.extend(message["content"] for message in prompt)
        lines.append(solver_trace(nums, target))
    return lines


def build_tiny_tokenizer(vocab_size: int = 512, num_puzzles: int = 60, seed: int = 0):
    """Train a small byte-level BPE on generated Countdown text and wrap it for transformers.

    >>> tok = build_tiny_tokenizer()
    >>> tok.decode(tok("<answer>(65 - 7) - 7</answer>")["input_ids"])
    '<answer>(65 - 7) - 7</answer>'
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    # Digits one per token: a number's digits then mean the same thing wherever they appear.
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_corpus(num_puzzles, seed), trainer=trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|pad|>",
        unk_token=None,
        padding_side="left",
        model_max_length=2048,
    )
    wrapped.chat_template = CHAT_TEMPLATE
    return wrapped


def build_tiny_model(tokenizer, size: str = "test", seed: int = 0):
    """A randomly initialised ``Qwen3ForCausalLM`` of the named size, deterministic for a seed.

    >>> model = build_tiny_model(build_tiny_tokenizer())
    >>> sum(p.numel() for p in model.parameters()) < 200_000
    True
    """
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    if size not in SIZES:
        raise ValueError(f"unknown tiny model size {size!r}; choose one of {sorted(SIZES)}")
    shape = SIZES[size]
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden_size,
        intermediate_size=shape.intermediate_size,
        num_hidden_layers=shape.num_hidden_layers,
        num_attention_heads=shape.num_attention_heads,
        num_key_value_heads=shape.num_key_value_heads,
        head_dim=shape.head_dim,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def save_tiny_model(path: str | Path, size: str = "test", seed: int = 0) -> Path:
    """Build the tiny tokenizer and model and ``save_pretrained`` both into ``path``; returns the path.

    >>> import tempfile
    >>> out = save_tiny_model(tempfile.mkdtemp())
    >>> (out / "config.json").exists() and (out / "tokenizer.json").exists()
    True
    """
    path = Path(path)
    tokenizer = build_tiny_tokenizer(seed=seed)
    model = build_tiny_model(tokenizer, size=size, seed=seed)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
