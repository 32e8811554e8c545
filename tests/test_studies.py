"""The study scripts' ``--quick`` modes: ``benchmarks/gr_reinforce_study.py`` (the GR-REINFORCE study's
hyper-parameter sweep on format_copy) and ``benchmarks/normaliser_ablation.py`` (the MATH ablations' baseline and
normaliser variants on toy Countdown) run end to end on tiny settings, through ``countdown-rl sweep``, and their
tables hold the numbers of the runs' own files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.env import ROOT, crash_report, offline_env

# The slow tier: each study trains several runs as processes (about 30 s each on 2 cores).
pytestmark = pytest.mark.slow

ENV = offline_env()


def quick(script: str, out: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--quick", "--threads", "1",
                           "--output-dir", str(out)], cwd=out.parent, env=ENV, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + crash_report(done.stderr)
    return done


def final_accuracy(run_dir: Path) -> float:
    return json.loads((run_dir / "eval" / "eval.json").read_text())["results"][0]["accuracy"]


def test_gr_reinforce_study_quick(tmp_path):
    out = tmp_path / "study"
    done = quick("gr_reinforce_study.py", out)
    sweep = json.loads((out / "runs" / "micro_batch" / "sweep.json").read_text())
    assert [r["label"] for r in sweep["runs"]] == [
        "per_device_train_batch_size=2,gradient_accumulation_steps=8",
        "per_device_train_batch_size=16,gradient_accumulation_steps=1"]
    result = json.loads((out / "gr_reinforce_study.json").read_text())
    for run in sweep["runs"]:
        run_dir = Path(run["output_dir"]) if Path(run["output_dir"]).is_absolute() else out.parent / run["output_dir"]
        [numbers] = result["sweeps"]["micro_batch"][run["point"]]
        assert numbers["final"] == final_accuracy(run_dir)
    assert "## micro_batch" in done.stdout and (out / "gr_reinforce_study.md").read_text() in done.stdout
    assert list((out / "runs" / "micro_batch" / "report").glob("*.png"))


def test_normaliser_ablation_quick(tmp_path):
    out = tmp_path / "ablation"
    done = quick("normaliser_ablation.py", out)
    result = json.loads((out / "normaliser_ablation.json").read_text())
    sweep = json.loads((out / "runs" / "sweep.json").read_text())
    assert len(sweep["runs"]) == 2
    by_variant = {v["variant"]: v for v in result["variants"]}
    assert set(by_variant) == {"masked_mean_std", "constant_no_std"}
    for run in sweep["runs"]:
        run_dir = out.parent / run["output_dir"] if not Path(run["output_dir"]).is_absolute() else Path(run["output_dir"])
        variant = "masked_mean_std" if run["values"]["reduction"] == "masked_mean" else "constant_no_std"
        assert by_variant[variant]["toy_pct"] == [100 * final_accuracy(run_dir)]
    assert by_variant["masked_mean_std"]["reported_pct"] == 43.70
    assert "McNemar" in done.stdout
