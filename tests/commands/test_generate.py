"""``countdown-rl generate``: rows in the task's layout, the sampling chosen by name, and the pool's blind share."""

import json
import re

import pytest

from countdown_rl.commands import generate as generate_cli
from countdown_rl.tasks.countdown.blind import best_blind_rule


@pytest.mark.parametrize("options, at_most", [(["sampling=balanced"], 6.0), ([], 100.0)])
def test_generate_prints_the_share_the_best_blind_rule_solves(tmp_path, capsys, options, at_most):
    out = tmp_path / "rows.jsonl"
    assert generate_cli.main(["400", "--output_file", str(out), "--seed", "2", "--task_options", *options]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    printed = capsys.readouterr().out
    share = float(re.search(r"best target-blind rule: .*, solves ([0-9.]+)% of them", printed).group(1))
    assert share == pytest.approx(100 * best_blind_rule(rows).accuracy, abs=0.05) and share <= at_most
    if not options:  # today's sampling: sums and differences well above the balanced cap
        assert share > 15


def test_a_task_without_a_blind_rule_prints_none(tmp_path, capsys):
    assert generate_cli.main(["3", "--output_file", str(tmp_path / "r.jsonl"), "--task", "gsm8k"]) == 0
    assert "target-blind" not in capsys.readouterr().out


def test_an_unknown_sampling_is_one_line_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "rows.jsonl"
    with pytest.raises(SystemExit) as exit_:
        generate_cli.main(["5", "--output_file", str(out), "--task_options", "sampling=uniform"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(err.splitlines()) == 1 and "sampling='uniform'" in err
    assert not out.exists()
