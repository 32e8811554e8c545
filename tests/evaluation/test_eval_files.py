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
