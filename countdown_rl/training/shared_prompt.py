"""Prompt-once log-probs: each distinct prompt of a micro-batch goes through the model once, not once per row.

A GRPO micro-batch holds G completions of each prompt, so a plain pass runs every prompt G times. Here:

1. Rows whose prompt is the same (ids and mask, left-padded as the micro-batch holds them) share one prompt pass:
   the distinct prompts run once, all but their last token, filling a KV cache.
2. The cache is expanded to the rows by index (autograd sums the rows' gradients back into the shared prompt).
3. Each row runs its last prompt token and its completion against its prompt's cached keys and values. Positions
   and the attention mask are the plain pass's (a token's position is its index in the padded row, padding masked),
   and the completion tokens are scored by the same head (TRL's fused one), so the per-token log-probs and
   entropies equal the plain pass's up to float rounding.
4. The tail pass only reads the cache (:class:`PromptCache` returns the prompt's states and the tail's without
   storing them), so under gradient checkpointing a layer's replay in the backward sees the same cache: the tail's
   layers are checkpointed as usual, and the prompt pass, which writes the cache, runs without checkpointing (its
   activations are kept for the distinct prompts only). Non-reentrant checkpointing only: the reentrant kind passes
   no gradient to tensors outside a layer's positional arguments, such as the cache (the trainer falls back).

:func:`shared_prompt_logps` returns None where nothing is shared (every prompt distinct, or a prompt of fewer than 2
tokens: :func:`plain_reason` says which): the plain pass is then as cheap and is what runs, for that chunk only.

Dropout: the plain pass draws one dropout mask per row over the whole row; here the G rows of a group would share the
prompt pass's one mask over the prompt, another estimator than TRL's. Under active dropout (:func:`active_dropout`:
a dropout module with ``p > 0`` in training mode, or a dropout rate in the model's config while it trains) the
trainer runs the plain pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from transformers import DynamicCache
from transformers.modeling_layers import GradientCheckpointingLayer

__all__ = ["PromptCache", "active_dropout", "distinct_prompts", "other_cache_layers", "plain_reason",
           "shared_prompt_logps"]

ATTENTION_LAYERS = ("DynamicLayer", "DynamicSlidingWindowLayer")
"""The cache layers a prompt cache is built from: attention keys and values, which rows can share and a tail
can read."""


def other_cache_layers(config) -> list[str]:
    """The kinds of cache layer a model's ``DynamicCache`` holds besides attention ones (e.g. a Mamba mixer's
    ``LinearAttentionLayer``, whose state a tail pass would advance): prompt-once needs none.

    >>> from transformers import Qwen3Config
    >>> other_cache_layers(Qwen3Config(num_hidden_layers=2))
    []
    """
    return sorted({type(layer).__name__ for layer in DynamicCache(config=config).layers} - set(ATTENTION_LAYERS))


def active_dropout(model, training: bool | None = None) -> str | None:
    """The dropout a forward of ``model`` would apply (None: none): ``nn.Dropout`` modules with ``p > 0`` (e.g.
    LoRA's ``lora_dropout``) and the model config's dropout rates (e.g. ``attention_dropout``, applied functionally
    in training mode). ``training`` None: as each module is now; True: as it will be in training.

    >>> from transformers import Qwen3Config, Qwen3ForCausalLM
    >>> model = Qwen3ForCausalLM(Qwen3Config(num_hidden_layers=1, hidden_size=8, intermediate_size=8,
    ...                                      num_attention_heads=2, num_key_value_heads=1, head_dim=4,
    ...                                      vocab_size=16, attention_dropout=0.1))
    >>> active_dropout(model.eval()), active_dropout(model.train())
    (None, 'attention_dropout 0.1')
    """
    found = {}
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.modules.dropout._DropoutNd) and module.p > 0 and (
                module.training if training is None else training):
            parts = name.split(".")
            label = next((part for part in reversed(parts) if "dropout" in part), parts[-1] or "dropout")
            found.setdefault(f"{label} {module.p:g}", None)
    inner = getattr(model, "module", model)  # DDP
    if (inner.training if training is None else training) and getattr(inner, "config", None) is not None:
        configs = [inner.config, *(value for value in vars(inner.config).values()
                                   if hasattr(value, "to_dict") and hasattr(value, "model_type"))]  # text_config
        for config in configs:
            for key, value in vars(config).items():
                if (key.endswith("dropout") or key.endswith("pdrop")) and not isinstance(value, bool) and \
                        isinstance(value, int | float) and value > 0:
                    found.setdefault(f"{key} {value:g}", None)
    return ", ".join(found) or None


def plain_reason(input_ids: torch.Tensor, logits_to_keep: int, num_distinct: int) -> str | None:
    """Why a chunk of ``input_ids`` rows with ``num_distinct`` distinct prompts runs the plain pass (None: it is
    shared).

    >>> plain_reason(torch.zeros(4, 10), 6, 2), plain_reason(torch.zeros(4, 10), 6, 4)
    (None, 'every prompt distinct')
    """
    if input_ids.size(1) - logits_to_keep < 2:
        return "prompt shorter than 2 tokens"
    if num_distinct == input_ids.size(0):
        return "every prompt distinct"
    return None


class PromptCache(DynamicCache):
    """A ``DynamicCache`` that, once ``read_only``, returns the cached states joined with the new ones without storing
    the new ones: every call of a layer (a first run or a checkpointed replay) sees the prompt's cache alone.

    >>> cache = PromptCache()
    >>> _ = cache.update(torch.zeros(1, 1, 3, 2), torch.zeros(1, 1, 3, 2), 0)
    >>> cache.read_only = True
    >>> [cache.update(torch.ones(1, 1, 2, 2), torch.ones(1, 1, 2, 2), 0)[0].shape[2] for _ in range(2)]
    [5, 5]
    >>> cache.get_seq_length()
    3
    """

    read_only = False

    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        if not self.read_only:
            return super().update(key_states, value_states, layer_idx, *args, **kwargs)
        layer = self.layers[layer_idx]
        saved = dict(vars(layer))  # the layer's update reassigns its tensors (and counters): put them back after
        try:
            return super().update(key_states, value_states, layer_idx, *args, **kwargs)
        finally:
            vars(layer).clear()
            vars(layer).update(saved)


@contextmanager
def _checkpointed_layers(model, *, prompt_pass: bool) -> Iterator[None]:
    """Under gradient checkpointing: the prompt pass runs its layers plainly (it writes the cache, which a replay would
    write twice); the tail pass keeps the read-only cache in its checkpointed layers (transformers drops it
    otherwise)."""
    layers = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer) and m.gradient_checkpointing]
    attribute = "gradient_checkpointing" if prompt_pass else "_can_checkpoint_with_cache"
    before = [vars(layer).get(attribute) for layer in layers]
    for layer in layers:
        setattr(layer, attribute, not prompt_pass)
    try:
        yield
    finally:
        for layer, value in zip(layers, before):
            if value is None:
                vars(layer).pop(attribute, None)
            else:
                setattr(layer, attribute, value)


def distinct_prompts(prompt_ids: torch.Tensor, prompt_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One row index per distinct prompt (its first row), and each row's index into them.

    >>> ids = torch.tensor([[0, 5, 6], [7, 8, 9], [0, 5, 6]]); mask = torch.tensor([[0, 1, 1], [1, 1, 1], [0, 1, 1]])
    >>> first, inverse = distinct_prompts(ids, mask)
    >>> ids[first][inverse].equal(ids), first.numel()
    (True, 2)
    """
    key = torch.cat([prompt_ids, prompt_mask.to(prompt_ids.dtype)], dim=1)
    _, inverse = torch.unique(key, dim=0, return_inverse=True)
    rows = torch.arange(inverse.numel(), device=inverse.device)
    first = torch.full((int(inverse.max()) + 1,), inverse.numel(), dtype=torch.long, device=inverse.device)
    return first.scatter_reduce(0, inverse, rows, reduce="amin"), inverse


def shared_prompt_logps(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int,
                        compute_entropy: bool = False, prompt_model=None,
                        prompts: tuple[torch.Tensor, torch.Tensor] | None = None,
                        ) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """Per-token log-probs (and entropies) of the last ``logits_to_keep`` tokens of each row, each distinct prompt
    run once; None when no prompt is shared.

    ``model`` is a causal LM whose forward takes ``fused_lm_head=True`` and ``labels`` (TRL's fused head:
    ``trl.trainer.utils.add_fused_lm_head``) and a ``past_key_values`` cache; ``input_ids`` / ``attention_mask`` are
    the plain pass's ``[prompt, completion]`` rows, prompts left-padded to one length. ``prompt_model`` (default
    ``model``) runs the prompt pass: the module inside a DDP wrapper, so that DDP sees one forward per backward.
    ``prompts``: :func:`distinct_prompts` of the rows' prompts where already computed.
    """
    prompt_len = input_ids.size(1) - logits_to_keep
    prompt_ids, prompt_mask = input_ids[:, :prompt_len], attention_mask[:, :prompt_len]
    first, inverse = prompts if prompts is not None else distinct_prompts(prompt_ids, prompt_mask)
    if plain_reason(input_ids, logits_to_keep, first.numel()) is not None:
        return None
    prompt_model = prompt_model or model
    cache = PromptCache(config=prompt_model.config)
    # 1. the distinct prompts but their last token: the cache (the logits of one position are computed and dropped)
    with _checkpointed_layers(prompt_model, prompt_pass=True):
        prompt_model(input_ids=prompt_ids[first, :-1], attention_mask=prompt_mask[first, :-1],
                     past_key_values=cache, use_cache=True, logits_to_keep=1)
    cache.batch_select_indices(inverse)  # 2. one cache row per row
    cache.read_only = True
    # 3. the last prompt token predicts the first completion token; labels -100 are not scored
    tail_ids = input_ids[:, prompt_len - 1:]
    tail_mask = attention_mask[:, prompt_len - 1:]
    labels = tail_ids.masked_fill(tail_mask == 0, -100)
    labels[:, 0] = -100
    with _checkpointed_layers(model, prompt_pass=False):
        outputs = model(input_ids=tail_ids, attention_mask=attention_mask, labels=labels, past_key_values=cache,
                        fused_lm_head=True)
    logps = outputs.log_probs[:, -logits_to_keep:]
    entropies = outputs.entropy[:, -logits_to_keep:] if compute_entropy else None
    return logps, entropies
