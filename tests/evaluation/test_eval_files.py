"""The eval files (countdown_rl.evaluation.eval_files): eval.json, eval.md and samples.jsonl written and read back."""

from __future__ import annotations

import json

import pytest

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


def _blind_case(tmp_path):
    """Three puzzles, two of them sums (the best blind rule: add the numbers); the model gets one sum and the
    other puzzle right, at two budgets."""
    puzzles = [{"nums": [1, 2, 3], "target": 6}, {"nums": [2, 3, 4], "target": 9}, {"nums": [5, 6, 7], "target": 47}]
    texts = ["<answer>1 + 2 + 3</answer>", "<answer>2 + 3</answer>", "<answer>6 * 7 + 5</answer>"]
    rows = score_samples(puzzles, ["p"] * 3, [[Completion(t, 5, False)] for t in texts], task="countdown")
    short = score_samples(puzzles, ["p"] * 3, [[Completion(t, 5, False)] for t in texts[:2] + ["<answer>"]],
                          task="countdown")
    results = [summarise(short, 4), summarise(rows, 8)]
    out = tmp_path / "run" / "eval"
    write_eval_outputs(out, results, {4: short, 8: rows}, {"task": "countdown", "model": "m"})
    return out, results


def test_eval_files_carry_the_best_target_blind_rule_on_the_same_rows(tmp_path):
    out, results = _blind_case(tmp_path)
    blind = read_eval(out)["blind_rule"]
    assert blind["accuracy"] == 2 / 3 and (blind["solved"], blind["total"]) == (2, 3)
    assert blind["rule"] == "3 numbers: x1 + (x2 + x3)"
    assert blind["by_budget"] == {"4": {"correct_on_solved": 1, "correct_on_rest": 0},
                                  "8": {"correct_on_solved": 1, "correct_on_rest": 1}}
    md = (out / "eval.md").read_text()
    assert "| best target-blind rule (3 numbers: x1 + (x2 + x3)) | 66.7% | 2 | 0 |" in md
    assert "| max tokens 8 | 66.7% | 1 | 1 |" in md and "| max tokens 4 | 33.3% | 1 | 0 |" in md


def test_the_report_and_the_model_card_show_the_blind_rule(tmp_path):
    from countdown_rl.evaluation.model_card import write_model_card
    from countdown_rl.evaluation.report import load_run, result_row
    from countdown_rl.runs.record import RunRecord, write_run_record

    out, _ = _blind_case(tmp_path)
    run = out.parent
    write_run_record(run, RunRecord(task="countdown", algorithm="grpo", max_completion_length=8))
    row = result_row(load_run(run, "run"))
    assert row["blind_rule_accuracy_pct"] == pytest.approx(100 * 2 / 3) and row["trained_correct_beyond_rule"] == 1
    assert row["zero_shot_correct_beyond_rule"] is None  # no zero-shot evaluation: unknown, not 0
    card = write_model_card(run).read_text()
    assert "| best target-blind rule (3 numbers: x1 + (x2 + x3)) | 66.7% | 2 | 0 |" in card


def test_a_task_without_a_blind_rule_writes_none(tmp_path):
    rows = score_samples([{"question": "1 + 1?", "gold": "2"}], ["p"], [[Completion("#### 2", 3, False)]],
                         task="gsm8k")
    write_eval_outputs(tmp_path, [summarise(rows, 8)], {8: rows}, {"task": "gsm8k", "model": "m"})
    assert read_eval(tmp_path)["blind_rule"] is None
    assert "blind" not in json.loads((tmp_path / "eval.json").read_text())
    assert "target-blind" not in (tmp_path / "eval.md").read_text()


def test_the_eval_page_names_the_task_options(tmp_path):
    """What the rows are (reasoning-gym's dataset and its config) is on the page, not only where they came from."""
    rows = score_samples(PUZZLES[:1], ["a"], [[Completion("<answer>(65 - 7) - 7</answer>", 4, False)]])
    options = ["datasets=chain_sum", 'config={"chain_sum": {"max_terms": 2}}']
    write_eval_outputs(tmp_path / "with", [summarise(rows, 8)], {8: rows}, {"model": "m", "task_options": options})
    md = (tmp_path / "with" / "eval.md").read_text()
    assert 'task options: `datasets=chain_sum` `config={"chain_sum": {"max_terms": 2}}`' in md
    write_eval_outputs(tmp_path / "without", [summarise(rows, 8)], {8: rows}, {"model": "m", "task_options": []})
    assert "task options" not in (tmp_path / "without" / "eval.md").read_text()
