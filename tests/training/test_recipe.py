"""The recipe's precision check (``countdown_rl.training.recipe.check_precision``): bf16 asked for where it trains on a
CPU without bf16 kernels is one warning line naming the cost and the fix; the run still does what the recipe says.

torch's probes (CUDA, oneDNN's bf16, the processor's bf16 instructions) are the client boundary: set here to each
machine's answer.
"""

import logging
from types import SimpleNamespace

import pytest
import torch

from countdown_rl.training.recipe import check_precision, recipe_from_keys


def _recipe(**keys):
    script, training, model = recipe_from_keys({"output_dir": "/tmp/unused", "report_to": "none", **keys})
    return training, model


def _machine(monkeypatch, *, gpu: bool, kernels: bool) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: True)
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: kernels)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: kernels)
    # no oneDNN ISA limit: the one this process may run under (scripts/other_kernels.sh sets one) is not the machine's
    for name in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("keys, asked", [
    ({"use_cpu": True, "bf16": True}, "bf16: true"),
    ({"use_cpu": True}, "bf16: true"),  # TRL's GRPOConfig turns bf16 on unless the recipe says otherwise
    ({"use_cpu": True, "bf16": False, "dtype": "bfloat16"}, "dtype: bfloat16"),
])
def test_bf16_on_a_cpu_without_bf16_kernels_is_one_warning_line(monkeypatch, caplog, keys, asked):
    _machine(monkeypatch, gpu=False, kernels=False)
    training, model = _recipe(**keys)
    with caplog.at_level(logging.WARNING, logger="countdown_rl.training.recipe"):
        line = check_precision(training, model)
    assert [record.getMessage() for record in caplog.records] == [line]
    assert "\n" not in line and line.startswith(f"{asked} on a CPU without bf16 kernels: ")
    assert "15-60x slower than fp32" in line and "set bf16: false" in line
    assert training.bf16 is keys.get("bf16", True)  # what the recipe asked for is what runs


@pytest.mark.parametrize("gpu, kernels, keys", [
    (False, False, {"use_cpu": True, "bf16": False}),  # fp32 on the CPU
    (False, True, {"use_cpu": True, "bf16": True}),  # a CPU with bf16 kernels
    (True, False, {"use_cpu": False, "bf16": True}),  # on the GPU
])
def test_no_warning_where_bf16_pays_or_is_not_asked(monkeypatch, caplog, gpu, kernels, keys):
    _machine(monkeypatch, gpu=gpu, kernels=kernels)
    # the recipe's keys as parsed (transformers itself refuses use_cpu false with bf16 where it sees no bf16 GPU)
    training, model = SimpleNamespace(**keys), SimpleNamespace(dtype=None)
    with caplog.at_level(logging.WARNING, logger="countdown_rl.training.recipe"):
        assert check_precision(training, model) is None
    assert not caplog.records


def test_a_masked_isa_counts_as_no_kernels(monkeypatch):
    _machine(monkeypatch, gpu=False, kernels=True)
    line = check_precision(*_recipe(use_cpu=True, bf16=True), env={"ONEDNN_MAX_CPU_ISA": "AVX2"})
    assert line is not None and line.startswith("bf16: true on a CPU without bf16 kernels")


def test_the_modules_examples_hold_on_any_machine():
    """The module's ``>>>`` examples (``recipe_from_keys``'s says ``use_cpu``: without it TRL turns bf16 on, which
    transformers refuses on a machine with neither a GPU nor bf16 CPU kernels)."""
    import doctest

    from countdown_rl.training import recipe

    assert doctest.testmod(recipe).failed == 0
