"""``countdown-rl warmup`` end to end, short: the tiny offline model saved as the base, then a two-step SFT on a
task's generated rows, saved beside it (the start of the CPU recipes; ``benchmarks/seed002_study.py`` runs it long
in the slow tier)."""

from __future__ import annotations

import torch
from safetensors.torch import load_file

from countdown_rl.cli import main


def test_warmup_writes_the_base_and_the_warmed_up_model(tmp_path, capsys):
    out, base = tmp_path / "warm", tmp_path / "warm-base"
    assert main(["warmup", "--task", "format_copy", "--out", str(out), "--steps", "2", "--rows", "16",
                 "--size", "test"]) == 0
    assert f"wrote the warmed-up format_copy model to {out} (base model: {base})" in capsys.readouterr().out
    for folder in (base, out):
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            assert (folder / name).is_file(), folder / name
    before, after = load_file(base / "model.safetensors"), load_file(out / "model.safetensors")
    assert before.keys() == after.keys()
    assert any(not torch.equal(before[key], after[key]) for key in before), "the SFT steps changed no weight"
