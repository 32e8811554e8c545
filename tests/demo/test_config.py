"""The demo's settings: where they run (device and precision), and a config recorded before the renames."""

from countdown_rl.demo.config import DemoConfig, placed, placement_line, quick_config, with_current_field_names
from countdown_rl.demo.stages import rl_recipe


def _processor(monkeypatch, kernels: bool) -> None:
    """torch's bf16 probes (the client boundary) answering as a CPU with or without bf16 kernels."""
    import torch

    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: True)
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: kernels)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: kernels)


def test_the_demos_bf16_follows_the_processor(monkeypatch):
    """The real-model demo wants bf16 (autocast for RL and, when asked, SFT): fp32 on a CPU without bf16 kernels,
    saying why; bf16 with them; bf16 on a GPU whatever the CPU settings say."""
    from countdown_rl.demo.pretrained import pretrained_config

    wants = pretrained_config("smollm2", sft_bf16=True, device="cpu")
    assert wants.bf16 and wants.sft_bf16
    _processor(monkeypatch, kernels=False)
    config, placement = placed(wants)
    assert (config.bf16, config.sft_bf16, config.device) == (False, False, "cpu")
    assert placement["rl"]["why"].startswith("this CPU has no bf16 kernels") and placement["sft"]["bf16"] is False
    assert rl_recipe(config, "sft", "grpo", num_eval=8)["bf16"] is False
    line = placement_line(placement)
    assert line.startswith("on cpu: RL fp32, SFT fp32 (bf16 off: this CPU has no bf16 kernels")
    assert line.count("bf16 off") == 1  # one reason, said once
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")  # the kernels there, but masked
    _processor(monkeypatch, kernels=True)
    assert not placed(wants)[0].bf16
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")
    assert placed(wants)[0].bf16 and placed(wants)[1]["rl"] == {
        "device": "cpu", "bf16": True, "why": None, "summary": "bf16 on cpu"}
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    on_gpu, placement = placed(quick_config())  # the tiny demo's fp32 wish is the CPU's
    assert on_gpu.device == "cuda" and on_gpu.bf16 and on_gpu.sft_bf16 and placement["rl"]["summary"] == "bf16 on cuda"


def test_a_config_recorded_before_the_renames_is_the_same_config():
    from dataclasses import asdict

    current = asdict(DemoConfig())
    old_names = {"max_steps": "grpo_steps", "model_name_or_path": "model", "prompt_template": "template"}
    recorded = {old_names.get(key, key): value for key, value in current.items()}
    assert set(old_names.values()) <= set(recorded) and with_current_field_names(recorded) == current


def test_a_config_recorded_before_the_task_fields_is_the_same_countdown_config():
    import json
    from dataclasses import asdict

    current = json.loads(json.dumps(asdict(DemoConfig())))  # as a record holds it
    recorded = {key: value for key, value in current.items() if key not in ("task", "task_options")}
    assert with_current_field_names(recorded) == current
