"""Where a run computes and in what precision (``countdown_rl.runs.device``).

torch's probes (``torch.ops.mkldnn._is_mkldnn_bf16_supported``, ``torch.cpu._is_avx512_bf16_supported`` /
``_is_amx_tile_supported``, ``torch.cuda``) are the client boundary: the tests set them to each processor's answer,
since one machine has only one kind (this one: AVX2, no bf16 kernels, no GPU).
"""

import doctest
from types import SimpleNamespace

import pytest
import torch

from countdown_rl.runs import device as module
from countdown_rl.runs.device import (
    DeviceError,
    choose_precision,
    cpu_has_bf16_kernels,
    describe_precision,
    resolve_device,
)


def _processor(monkeypatch, *, onednn: bool, native: bool) -> None:
    """This process's CPU as torch would see it: oneDNN's bf16 probe, and bf16 instructions (AVX512_BF16 / AMX)."""
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: True)
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: onednn)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: native)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    # no oneDNN ISA limit: the one this process may run under (scripts/other_kernels.sh sets one) is not the simulated
    # processor's; the tests of a limit pass it as ``env``
    for name in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):
        monkeypatch.delenv(name, raising=False)


def test_the_docstrings_examples_hold():
    assert doctest.testmod(module).failed == 0


@pytest.mark.parametrize("onednn, native, env, expected", [
    (True, True, {}, True),  # AVX-512 with bf16 instructions (or AMX)
    (True, False, {}, False),  # AVX-512 without them: oneDNN converts bf16 to fp32, no faster
    (False, False, {}, False),  # AVX2 only (this machine)
    (True, True, {"ONEDNN_MAX_CPU_ISA": "AVX2"}, False),  # the kernels masked, as the notes' emulation does
    (True, True, {"ONEDNN_MAX_CPU_ISA": "avx512_core"}, False),  # below AVX512_CORE_BF16, any case
    (True, True, {"DNNL_MAX_CPU_ISA": "SSE41"}, False),  # oneDNN's older name for the mask
    (True, True, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"}, True),
    (True, True, {"ONEDNN_MAX_CPU_ISA": "ALL"}, True),
])
def test_bf16_kernels_need_the_probe_the_instructions_and_no_mask_below_them(monkeypatch, onednn, native, env,
                                                                            expected):
    _processor(monkeypatch, onednn=onednn, native=native)
    assert cpu_has_bf16_kernels(env) is expected


def test_this_machines_answer_is_torchs_and_the_environments_mask():
    """Unpatched: the mask alone decides where it is set; else torch's probe and the instructions do."""
    assert cpu_has_bf16_kernels({"ONEDNN_MAX_CPU_ISA": "AVX2"}) is False
    native = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    assert cpu_has_bf16_kernels({}) is bool(torch.ops.mkldnn._is_mkldnn_bf16_supported() and native)


def test_the_device_asked_for_or_a_one_line_refusal(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == resolve_device("cpu") == "cpu"
    with pytest.raises(DeviceError) as caught:
        resolve_device("cuda")
    assert "\n" not in str(caught.value) and str(caught.value).startswith("--device cuda: torch sees no CUDA GPU")
    with pytest.raises(DeviceError, match="--device 'gpu': must be one of auto, cuda, cpu"):
        resolve_device("gpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == resolve_device("cuda") == "cuda" and resolve_device("cpu") == "cpu"


def test_bf16_where_it_pays_fp32_elsewhere_and_why(monkeypatch):
    _processor(monkeypatch, onednn=False, native=False)
    off = choose_precision("cpu", True)
    assert (off.bf16, off.name) == (False, "fp32") and off.why.startswith("this CPU has no bf16 kernels; ")
    assert "15-60x slower than fp32" in off.why and off.summary().startswith("fp32 on cpu (bf16 off: ")
    assert choose_precision("cpu", False).why is None  # not wanted: nothing to explain
    _processor(monkeypatch, onednn=True, native=True)
    assert choose_precision("cpu", True) == module.Precision("cpu", True)
    masked = choose_precision("cpu", True, {"ONEDNN_MAX_CPU_ISA": "AVX2"})
    assert not masked.bf16 and "(ONEDNN_MAX_CPU_ISA=AVX2)" in masked.why
    # a GPU that emulates bf16 (before Ampere): torch says True only when emulation counts
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation)
    assert not choose_precision("cuda", True).bf16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    assert choose_precision("cuda", True) == module.Precision("cuda", True)


@pytest.mark.parametrize("mixed, dtype, kernels, summary", [
    ("no", torch.float32, False, "fp32 weights, no autocast (cpu)"),
    ("bf16", torch.float32, True, "fp32 weights, bf16 autocast (cpu)"),
    ("bf16", torch.float32, False, "fp32 weights, bf16 autocast (cpu); bf16 emulated: this CPU has no bf16 kernels"),
    ("no", torch.bfloat16, False, "bf16 weights, no autocast (cpu); bf16 emulated: this CPU has no bf16 kernels"),
])
def test_the_record_says_what_precision_ran(monkeypatch, mixed, dtype, kernels, summary):
    _processor(monkeypatch, onednn=kernels, native=kernels)
    accelerator = SimpleNamespace(device=torch.device("cpu"), mixed_precision=mixed)
    described = describe_precision(accelerator, torch.nn.Linear(2, 2).to(dtype))
    assert described == {"device": "cpu", "autocast": None if mixed == "no" else mixed,
                         "weights": "fp32" if dtype == torch.float32 else "bf16", "cpu_bf16_kernels": kernels,
                         "summary": summary}
