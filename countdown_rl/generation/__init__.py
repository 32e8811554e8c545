"""Generation backends, shared by training rollouts, evaluation, the demo and the benchmarks.

- :mod:`.sampling`: plain transformers ``generate`` and vLLM, one generation cut to every budget, left padding.
- :mod:`.compiled`: a static KV cache and a ``torch.compile``'d decoding step (``generation_backend: compiled``).

May import: the standard library, torch, transformers, vllm. Nothing else of ``countdown_rl``.
"""
