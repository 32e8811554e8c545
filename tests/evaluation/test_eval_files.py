"""The eval files (countdown_rl.evaluation.eval_files): eval.json, eval.md and samples.jsonl written and read back."""

from __future__ import annotations

import json

from countdown_rl.evaluation.eval_files import read_eval, read_samples, write_eval_outputs
from countdown_rl.evaluation.scoring import BudgetResult, markdown_table, score_samples, summarise
from countdown_rl.generation.sampling import Completion
from tests.helpers.countdown_rows import PUZZLES


def test_write_and_read_eval_outputs(tmp_path):
    rows = score_samples(PUZZLES[:2], ["a", "b"], [[Completion("<answer>(65 - 7) - 7</answer>", 4, False)],
                                                   [Completion("x", 8, True)]])
    results = [summarise(rows, 8), summarise(rows, 16)]
    write_eval_outputs(tmp_path / "out", results, {8: rows, 16: rows}, {"model": "m", "dataset": "d"})
    data = read_eval(tmp_path / "out")
    assert data["results"] == results
    assert data["meta"]["model"] == "m" and "version" in data["meta"] and "date" in data["meta"]
    assert [r["max_tokens"] for r in read_samples(tmp_path / "out")] == [8, 8, 16, 16]
    assert len(read_samples(tmp_path / "out", max_tokens=16)) == 2
    md = (tmp_path / "out" / "eval.md").read_text()
    assert markdown_table(results) in md and "| 16 | 50.0% |" in md
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["eval.json", "eval.md", "samples.jsonl"]
    assert BudgetResult.from_dict(json.loads(json.dumps(results[0].to_dict()))) == results[0]


def test_an_eval_json_written_before_num_rows_still_reads(tmp_path):
    """``num_puzzles`` was ``num_rows``'s name (results and meta): such files still read, in every reader."""
    from countdown_rl.evaluation.model_card import render_model_card
    from countdown_rl.evaluation.report import load_run, result_row
    from countdown_rl.runs.record import RunRecord

    rows = score_samples(PUZZLES[:2], ["a", "b"], [[Completion("<answer>(65 - 7) - 7</answer>", 4, False)],
                                                   [Completion("x", 8, True)]])
    result = summarise(rows, 8)
    run = tmp_path / "run"
    write_eval_outputs(run / "eval", [result], {8: rows}, {"model": "m", "num_rows": 2})
    file = run / "eval" / "eval.json"
    data = json.loads(file.read_text())
    data["meta"]["num_puzzles"] = data["meta"].pop("num_rows")
    data["results"][0]["num_puzzles"] = data["results"][0].pop("num_rows")
    file.write_text(json.dumps(data))
    (run / "run_info.json").write_text(json.dumps({"algorithm": "grpo", "max_completion_length": 8}))

    old = read_eval(file)
    assert old["results"] == [result] and old["results"][0].num_rows == 2
    assert old["meta"]["num_rows"] == 2 and "num_puzzles" not in old["meta"]
    assert BudgetResult.from_dict(data["results"][0]) == result
    assert "2 held-out problems" in render_model_card(RunRecord(task="countdown", algorithm="grpo"), old)
    assert result_row(load_run(run, "run"))["num_rows"] == 2  # the report, and so the sweep report
