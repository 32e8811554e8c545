"""``countdown-rl report`` on two hand-built run directories: the table must repeat the runs' own eval files, every
plot must be a real PNG, and missing pieces must be named in the notes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from countdown_rl.commands import report as report_cli
from countdown_rl.evaluation import report as report
from countdown_rl.evaluation.eval_files import read_eval, write_eval_outputs
from countdown_rl.evaluation.scoring import Completion, score_samples, summarise

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PUZZLE = {"nums": [7, 7, 65], "target": 51}
GOOD, PARTIAL, NONE = "<answer>(65 - 7) - 7</answer>", "<answer>65 + 7 + 7</answer>", "I give up"


def _write_eval(folder: Path, model: str, budgets_and_texts: dict[int, list[str]]) -> None:
    """An eval folder made with the real writer, from completions whose outcomes we know."""
    results, samples = [], {}
    for budget, texts in budgets_and_texts.items():
        completions = [[Completion(text, min(budget, 3 + 2 * i), False)] for i, text in enumerate(texts)]
        rows = score_samples([PUZZLE] * len(texts), ["prompt"] * len(texts), completions)
        results.append(summarise(rows, budget))
        samples[budget] = rows
    write_eval_outputs(folder, results, samples, {"model": model, "dataset": "toy.jsonl"})


def _trainer_state(folder: Path, eval_key: str) -> None:
    history = []
    for step in (1, 2, 3, 4):
        history.append({"step": step, "loss": 0.1, "reward": 0.1 * step, "completions/mean_length": 10.0 + step,
                        "outcomes/mean_length_correct": 8.0 + step,
                        "outcomes/mean_length_incorrect": 12.0 + step})
        if step % 2 == 0:
            history.append({"step": step, eval_key: 0.2 * step, "eval_loss": 0.0})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 4, "log_history": history}))


@pytest.fixture()
def runs(tmp_path):
    grpo, dr = tmp_path / "grpo_run", tmp_path / "drgrpo_run"
    # GRPO: HF-style "eval_accuracy", zero-shot at the same budget.
    _trainer_state(grpo, "eval_accuracy")
    (grpo / "run_info.json").write_text(json.dumps({"algorithm": "grpo", "max_completion_length": 16,
                                                    "model": "tiny-base", "dataset": "toy.jsonl"}))
    _write_eval(grpo / "eval", str(grpo), {16: [GOOD, GOOD, PARTIAL, NONE]})
    _write_eval(grpo / "zero_shot", "tiny-base", {16: [GOOD, PARTIAL, NONE, NONE]})
    # Dr.GRPO: "eval/accuracy" keys, trained eval at two budgets, no zero-shot.
    _trainer_state(dr, "eval/accuracy")
    (dr / "run_info.json").write_text(json.dumps({"algorithm": "dr_grpo", "max_completion_length": 32,
                                                  "model": "tiny-base", "dataset": "toy.jsonl"}))
    _write_eval(dr / "eval", str(dr), {16: [GOOD, NONE, NONE, NONE], 32: [GOOD, GOOD, GOOD, PARTIAL]})
    return grpo, dr


def _check_png(path: Path) -> None:
    from matplotlib.image import imread

    data = path.read_bytes()
    assert len(data) > 0 and data.startswith(PNG_SIGNATURE), path
    image = imread(path)
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100


def test_report_tables_plots_and_samples(runs, tmp_path, capsys):
    grpo, dr = runs
    out = tmp_path / "report"
    assert report_cli.main([str(grpo), str(dr), "--output_dir", str(out)]) == 0

    with open(out / "results.csv", newline="") as f:
        rows = {row["run"]: row for row in csv.DictReader(f)}
    assert set(rows) == {"grpo_run", "drgrpo_run"}
    for run, budget in ((grpo, 16), (dr, 32)):
        trained = next(r for r in read_eval(run / "eval")["results"] if r.max_tokens == budget)
        row = rows[run.name]
        assert int(row["max_tokens"]) == budget
        assert float(row["trained_accuracy_pct"]) == pytest.approx(100 * trained.accuracy)
        assert (int(row["correct"]), int(row["partial"]), int(row["failed"])) == (
            trained.correct, trained.partial, trained.failed)
        assert float(row["mean_output_tokens"]) == pytest.approx(trained.mean_tokens)
        assert float(row["utilisation_pct"]) == pytest.approx(100 * trained.utilisation)
    zero = read_eval(grpo / "zero_shot")["results"][0]
    assert float(rows["grpo_run"]["zero_shot_accuracy_pct"]) == pytest.approx(100 * zero.accuracy) == 25.0
    assert float(rows["grpo_run"]["improvement_points"]) == pytest.approx(25.0)  # 50% trained - 25% zero-shot
    assert rows["drgrpo_run"]["zero_shot_accuracy_pct"] == "" and rows["drgrpo_run"]["algorithm"] == "dr_grpo"

    md = (out / "results.md").read_text()
    assert "| grpo_run | grpo | 16 | 4 | 25.0% | 50.0% | +25.0 | 2 | 1 | 1 |" in md
    assert "| drgrpo_run | dr_grpo | 32 | 4 | — | 75.0% | — |" in md
    assert "drgrpo_run: no zero_shot/eval.json" in md  # a missing piece is named, not dropped

    for name in report.PLOTS.values():
        assert f"]({name})" in md
        _check_png(out / name)

    samples = (out / "samples.md").read_text()
    assert "## grpo_run" in samples and "### Successes" in samples and "### Failures" in samples
    assert GOOD in samples and PARTIAL in samples
    assert "results.md" in capsys.readouterr().out


def test_series_reads_both_eval_prefixes():
    history = [{"step": 1, "eval_accuracy": 0.5}, {"step": 2, "reward": 1.0}, {"step": 3, "eval/accuracy": 0.75}]
    assert report.series(history, "accuracy", eval_metric=True) == ([1, 3], [0.5, 0.75])
    assert report.series(history, "reward") == ([2], [1.0])


def test_budget_line_follows_the_logged_schedule(runs):
    """A run that logged ``completion_budget`` (a budget_schedule) is drawn at those budgets; one that did not, at
    its max_completion_length; the steps are those that logged a completion length."""
    grpo, _ = runs
    state = json.loads((grpo / "trainer_state.json").read_text())
    for entry in state["log_history"]:
        if "loss" in entry:
            entry["completion_budget"] = 8 if entry["step"] < 3 else 16
    (grpo / "trainer_state.json").write_text(json.dumps(state))
    assert report.budget_over_steps(report.load_run(grpo)) == ([1, 2, 3, 4], [8.0, 8.0, 16.0, 16.0])
    _, dr = runs
    assert report.budget_over_steps(report.load_run(dr)) == ([1, 2, 3, 4], [32, 32, 32, 32])


def test_run_without_run_info_or_top_level_state(tmp_path):
    run = tmp_path / "run"
    _trainer_state(run / "checkpoint-2", "eval_accuracy")
    _trainer_state(run / "checkpoint-10", "eval_accuracy")
    _write_eval(run / "eval", str(run), {64: [GOOD, NONE]})
    loaded = report.load_run(run)
    assert loaded.info["algorithm"] == "unknown" and loaded.info["max_completion_length"] == 64
    assert len(loaded.log_history) == 6
    notes = " ".join(loaded.notes)
    assert "checkpoint-10" in notes and "no run_info.json" in notes and "assumed 64" in notes
    assert "no zero_shot/eval.json" in notes

    out = tmp_path / "report"
    report.write_report([run], out)
    for name in report.PLOTS.values():
        _check_png(out / name)


def test_eval_only_run_draws_empty_curves(tmp_path):
    run = tmp_path / "eval_only"
    _write_eval(run / "eval", "m", {8: [GOOD]})
    out = tmp_path / "report"
    assert report_cli.main([str(run), "--output_dir", str(out)]) == 0
    md = (out / "results.md").read_text()
    assert "no trainer_state.json" in md and "Plots without data" in md
    for name in report.PLOTS.values():
        _check_png(out / name)


def test_report_errors(tmp_path, capsys):
    assert report_cli.main([str(tmp_path / "missing"), "--output_dir", str(tmp_path / "r")]) == 2
    assert "no such run directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert report_cli.main([str(tmp_path / "empty"), "--output_dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("countdown-rl report: error:") and "neither trainer_state.json" in err
    assert not (tmp_path / "r").exists()


def test_the_examples_hold_and_long_curves_are_smoothed():
    """The docstring examples (series, budget_over_steps, smooth, smoothing_window) hold; a 450-step curve is drawn
    as a 15-step moving average whose last point is the mean of the last 15 logged values."""
    import doctest

    assert doctest.testmod(report).failed == 0
    values = [float(i % 7) for i in range(450)]
    window = report.smoothing_window(len(values))
    assert window == 15 and report.smoothing_window(60) == 1
    assert report.smooth(values, window)[-1] == pytest.approx(sum(values[-15:]) / 15)
