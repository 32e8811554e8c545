"""``countdown_rl.sweeps.report``: the sweep's table equals the numbers in the runs' own files; the figures are
valid PNGs."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest

from tests.helpers.sweeps import ENV


@pytest.mark.slow
def test_the_report_table_is_the_runs_own_numbers(swept):
    second, root, runs = swept["second"], swept["root"], swept["runs"]
    assert "report: " in second.stdout
    rows = {r["point"]: r for r in __import__("csv").DictReader((root / "report" / "sweep.csv").open())}
    assert set(rows) == {r.point for r in runs}
    for point in {r.point for r in runs}:
        mine = [r for r in runs if r.point == point]
        row = rows[point]
        assert row["seeds"] == "2"
        evals = []
        rewards = []
        for run in mine:
            file = root / run.name / "eval" / "eval.json"
            if not file.is_file():
                continue
            evals.append(100 * json.loads(file.read_text())["results"][0]["accuracy"])
            samples = [json.loads(x) for x in (root / run.name / "eval" / "samples.jsonl").read_text().splitlines()]
            rewards.append(statistics.fmean(s["reward"] for s in samples))
        assert row["finished"] == str(len(evals))
        if evals:
            assert float(row["accuracy_mean_pct"]) == pytest.approx(statistics.fmean(evals), abs=1e-4)
            assert float(row["accuracy_sd_pct"]) == pytest.approx(statistics.stdev(evals), abs=1e-4)
            assert float(row["eval_reward_mean"]) == pytest.approx(statistics.fmean(rewards), abs=1e-4)
        else:
            assert row["accuracy_mean_pct"] == ""
    md = (root / "report" / "sweep.md").read_text()
    assert "not finished" in md or "no training files" in md  # the failed runs are named, not silently dropped


@pytest.mark.slow
def test_the_report_figures_are_valid_pngs(swept, tmp_path):
    from matplotlib.image import imread

    root = swept["root"]
    figures = sorted((root / "report").glob("*.png"))
    assert [f.name for f in figures] == ["axis_num_iterations+dataset_name.png"]
    image = imread(figures[0])
    assert image.shape[0] > 300 and image.shape[1] > 1500 and image.std() > 0.01  # drawn, not blank
    # `countdown-rl report <sweep dir> --output_dir` writes the same files elsewhere
    done = subprocess.run([sys.executable, "-m", "countdown_rl.cli", "report", str(root), "--output_dir", str(tmp_path / "r")],
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "r" / "sweep.csv").read_text() == (root / "report" / "sweep.csv").read_text()
    assert imread(tmp_path / "r" / figures[0].name).shape == image.shape
