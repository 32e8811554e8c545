"""Where a run computes and in what precision: the device asked for, and bf16 only where it pays.

1. :func:`resolve_device`: ``auto`` is CUDA when torch sees a GPU, else the CPU; ``cuda`` without CUDA is a one-line
   :class:`DeviceError` (raised before any model loads); ``cpu`` is the CPU even beside a GPU.
2. :func:`cpu_has_bf16_kernels`: whether this CPU computes bf16 natively, the one place that decides it. torch's
   probe (``torch.ops.mkldnn._is_mkldnn_bf16_supported()``: oneDNN's effective ISA at least AVX512_CORE) and the
   processor's bf16 instructions (AVX512_BF16 or AMX): with AVX-512 alone oneDNN converts bf16 to fp32 and back
   (torch's probe says yes there; not measured here, so counted as no kernels).
   ``ONEDNN_MAX_CPU_ISA`` (or ``DNNL_MAX_CPU_ISA``) below AVX512_CORE_BF16 counts as none, read here as well: oneDNN
   fixes its ISA once per process, so a mask set later would not reach the probe. Without them bf16 is emulated:
   measured 15-60x slower than fp32 (:data:`BF16_CPU_COST`).
3. :func:`choose_precision`: what a run that wants bf16 gets on a device: bf16 on a GPU that computes it, on a CPU
   only with bf16 kernels; otherwise fp32, with the reason (a :class:`Precision`).
4. :func:`describe_precision`: what ran, from the trainer's accelerator and model: the run record's
   ``extra.precision``.

The probes are torch's own (cut there in the tests): no model is loaded, nothing is computed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["BF16_CPU_COST", "DEVICES", "DeviceError", "Precision", "choose_precision", "cpu_has_bf16_kernels",
           "describe_precision", "resolve_device"]

DEVICES = ("auto", "cuda", "cpu")
# Measured on an AMD EPYC with AVX2 only (torch 2.13.0+cpu, 2 threads): benchmarks/results/real-model.md, "Precision on
# CPUs with and without bf16 kernels".
BF16_CPU_COST = ("bf16 on a CPU without bf16 kernels is emulated, 15-60x slower than fp32 in its matmuls (measured: "
                 "a 1024 x 1024 matmul 0.8 against 47 GFLOP/s; the SmolLM2 demo's whole RL step 1.8x)")
# oneDNN's ISA names below the first with bf16 instructions (AVX512_CORE_BF16), as ONEDNN_MAX_CPU_ISA spells them.
_NO_BF16_ISAS = frozenset({"SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE", "AVX512_CORE_VNNI"})


class DeviceError(ValueError):
    """The device asked for is not on this machine (one line, before any model loads)."""


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def resolve_device(device: str, *, key: str = "--device") -> str:
    """``cuda`` or ``cpu`` for ``device`` (``auto``, ``cuda`` or ``cpu``); ``cuda`` without CUDA refuses.

    >>> resolve_device("cpu")
    'cpu'
    """
    if device not in DEVICES:
        raise DeviceError(f"{key} {device!r}: must be one of {', '.join(DEVICES)}")
    if device == "cpu":
        return "cpu"
    if _cuda_available():
        return "cuda"
    if device == "cuda":
        raise DeviceError(f"{key} cuda: torch sees no CUDA GPU on this machine (torch.cuda.is_available() is "
                          "False); use --device cpu or auto")
    return "cpu"


def isa_mask(env: Mapping[str, str] | None = None) -> str | None:
    """The oneDNN ISA limit the environment sets (``ONEDNN_MAX_CPU_ISA``, else ``DNNL_MAX_CPU_ISA``), upper case.

    >>> isa_mask({"ONEDNN_MAX_CPU_ISA": "avx2"}), isa_mask({})
    ('AVX2', None)
    """
    env = os.environ if env is None else env
    value = env.get("ONEDNN_MAX_CPU_ISA") or env.get("DNNL_MAX_CPU_ISA")
    return value.strip().upper() if value and value.strip() else None


def _torch_bf16_probe() -> bool:
    """torch's probe and the processor's bf16 instructions (module docstring, 2)."""
    import torch

    if not (torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()):
        return False
    native = [getattr(torch.cpu, name, None) for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
    known = [probe for probe in native if probe is not None]
    return not known or any(probe() for probe in known)  # an older torch without them: its probe alone


def cpu_has_bf16_kernels(env: Mapping[str, str] | None = None) -> bool:
    """Whether bf16 pays on this CPU: bf16 instructions that oneDNN may use (module docstring, 2).

    >>> cpu_has_bf16_kernels({"ONEDNN_MAX_CPU_ISA": "AVX2"})
    False
    """
    if isa_mask(env) in _NO_BF16_ISAS:
        return False
    return _torch_bf16_probe()


def _cuda_has_bf16() -> bool:
    import torch

    return torch.cuda.is_bf16_supported(including_emulation=False)


@dataclass(frozen=True)
class Precision:
    """What a run computes in: ``bf16`` autocast or fp32 on ``device``; ``why``: why not bf16 where it was wanted.

    >>> Precision("cpu", False, "this CPU has no bf16 kernels").summary()
    'fp32 on cpu (bf16 off: this CPU has no bf16 kernels)'
    """

    device: str
    bf16: bool
    why: str | None = None

    @property
    def name(self) -> str:
        return "bf16" if self.bf16 else "fp32"

    def summary(self) -> str:
        """``bf16 on cuda``, ``fp32 on cpu (bf16 off: ...)``."""
        return f"{self.name} on {self.device}" + (f" (bf16 off: {self.why})" if self.why else "")

    def to_dict(self) -> dict[str, Any]:
        """The demos' record: these fields and the summary."""
        return {**asdict(self), "summary": self.summary()}


def choose_precision(device: str, wanted: bool, env: Mapping[str, str] | None = None) -> Precision:
    """bf16 when ``wanted`` and ``device`` (``cuda`` or ``cpu``) computes it natively, else fp32 and why.

    >>> choose_precision("cpu", False)
    Precision(device='cpu', bf16=False, why=None)
    >>> choose_precision("cpu", True, {"ONEDNN_MAX_CPU_ISA": "AVX2"}).why.split(";")[0]
    'this CPU has no bf16 kernels (ONEDNN_MAX_CPU_ISA=AVX2)'
    """
    if not wanted:
        return Precision(device, False)
    if device == "cuda":
        if _cuda_has_bf16():
            return Precision(device, True)
        return Precision(device, False, "this GPU does not compute bf16 (torch.cuda.is_bf16_supported is False)")
    if cpu_has_bf16_kernels(env):
        return Precision(device, True)
    mask = isa_mask(env)
    where = f" (ONEDNN_MAX_CPU_ISA={mask})" if mask in _NO_BF16_ISAS else ""
    return Precision(device, False, f"this CPU has no bf16 kernels{where}; {BF16_CPU_COST}")


def describe_precision(accelerator: Any, model: Any) -> dict[str, Any]:
    """What a trainer computes in, for the run record (``extra.precision``): the device, the autocast
    (accelerate's ``mixed_precision``), the weights' dtype, and on a CPU whether it has bf16 kernels.

    >>> from types import SimpleNamespace as NS; import torch
    >>> describe_precision(NS(device=torch.device("cpu"), mixed_precision="no"), torch.nn.Linear(1, 1))["summary"]
    'fp32 weights, no autocast (cpu)'
    """
    import torch

    device = accelerator.device.type
    autocast = None if accelerator.mixed_precision in (None, "no") else accelerator.mixed_precision
    dtypes = {p.dtype for p in model.parameters()}
    weights = str(next(iter(dtypes))).removeprefix("torch.") if len(dtypes) == 1 else "mixed"
    weights = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(weights, weights)
    kernels = cpu_has_bf16_kernels() if device == "cpu" else None
    summary = f"{weights} weights, {f'{autocast} autocast' if autocast else 'no autocast'} ({device})"
    uses_bf16 = autocast == "bf16" or torch.bfloat16 in dtypes
    if device == "cpu" and uses_bf16 and not kernels:
        summary += "; bf16 emulated: this CPU has no bf16 kernels"
    return {"device": device, "autocast": autocast, "weights": weights, "cpu_bf16_kernels": kernels,
            "summary": summary}
