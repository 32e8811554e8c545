"""Every task through the task-independent core: registry, data loading and validation, training, evaluation.

Rows come from each task's own offline generator, written in the source dataset's layout; the model is the tiny
offline Qwen3 (tests/conftest.py). Nothing reaches the Hub.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from countdown_rl.tasks import TASKS, Outcome, get_task
from countdown_rl.tasks.base import Task
from countdown_rl.data.jsonl import write_jsonl
from countdown_rl.data.loading import load_rows
from countdown_rl.data.prepare import prepare_dataset

from tests.helpers.env import ROOT
SMOKE = ROOT / "recipes" / "smoke" / "cpu_tiny.yaml"
NAMES = sorted(TASKS)


@pytest.mark.parametrize("name", NAMES)
def test_every_registered_task_implements_the_interface(name):
    task = get_task(name)
    assert isinstance(task, Task) and task.name == name
    assert task.default_template in task.prompt_templates
    rewards = task.reward_funcs()
    assert set(task.default_reward_funcs) <= set(rewards)
    rows = task.generate(6, seed=0)
    assert rows == task.generate(6, seed=0) and rows != task.generate(6, seed=1)
    for raw in rows:
        row = task.prepare_row(raw)
        assert task.row_problem(row) is None and set(task.columns) <= set(row)
        prompt = task.prompt(row)
        assert isinstance(prompt, (str, list)) and prompt
        # A completion with no answer at all is never correct, and every reward scores it with a float.
        assert task.judge("I am not sure.", row).outcome is not Outcome.CORRECT
        for func in rewards.values():
            columns = {c: [row[c]] for c in task.columns}
            scored = func(completions=["I am not sure."], completion_ids=[[1, 2, 3]], **columns)
            assert len(scored) == 1 and isinstance(scored[0], float)


def test_unknown_task_and_options_are_one_line_errors():
    with pytest.raises(ValueError, match=r"^unknown task 'chess'; choose one of \['countdown'"):
        get_task("chess")
    with pytest.raises(ValueError, match=r"^task_options: unknown countdown option 'unary'; known: sampling, unary_minus$"):
        get_task("countdown", ["unary=true"])
    with pytest.raises(ValueError, match=r"^task_options: countdown option unary_minus='maybe': expected true or"):
        get_task("countdown", ["unary_minus=maybe"])
    with pytest.raises(ValueError, match="is not key=value"):
        get_task("countdown", ["unary_minus"])


@pytest.mark.parametrize("name", NAMES)
def test_loading_validates_every_row_with_the_task(name, tmp_path):
    task = get_task(name)
    rows = task.generate(20, seed=3)
    write_jsonl(rows, tmp_path / "good.jsonl")
    train, test, info = prepare_dataset(task, tmp_path / "good.jsonl", test_size=4)
    assert (info.task, info.train + info.test) == (name, len({task.dedupe_key(task.prepare_row(r)) for r in rows}))
    assert set(task.columns) | {"prompt"} <= set(train.column_names)
    # Break row 7: drop its first source column. The error names the file, the row and the line.
    broken = [dict(r) for r in rows]
    del broken[7][next(iter(rows[7]))]
    write_jsonl(broken, tmp_path / "bad.jsonl")
    with pytest.raises(ValueError) as err:
        load_rows(task, tmp_path / "bad.jsonl")
    message = str(err.value)
    assert message.startswith("row 7 of ") and "bad.jsonl (line 8)" in message and "\n" not in message
    kept, raw, dropped, _ = load_rows(task, tmp_path / "bad.jsonl", on_invalid="drop")
    assert (len(kept), raw, dropped) == (19, 20, 1)


@pytest.mark.parametrize("name", NAMES)
def test_generated_dataset_and_eval_split(name, tmp_path):
    task = get_task(name)
    train, test, info = prepare_dataset(task, "generated", num_generated=40, test_size=8, seed=1)
    assert len(test) == 8 and info.source.startswith("generated")
    keys = {task.dedupe_key(dict(r)) for r in train}
    assert not keys & {task.dedupe_key(dict(r)) for r in test}
    # A folder with train and test files: eval_split holds out (a sample of) the test file.
    rows = task.generate(30, seed=2)
    write_jsonl(rows[:24], tmp_path / "data" / "train.jsonl")
    write_jsonl(rows[20:], tmp_path / "data" / "test.jsonl")  # rows 20-23 in both: they leave training
    train, test, info = prepare_dataset(task, tmp_path / "data", eval_split="test", test_size=100)
    assert len(test) == len({task.dedupe_key(task.prepare_row(r)) for r in rows[20:]})
    assert not {task.dedupe_key(dict(r)) for r in train} & {task.dedupe_key(dict(r)) for r in test}
    assert info.split_method == "test split"
    # An evaluation-only source (MATH-500 has just a test split): every row held out, for `eval` only.
    train, test, _ = prepare_dataset(task, tmp_path / "data", split="test", eval_split="test", test_size=100,
                                     require_train=False)
    assert len(train) == 0 and len(test) == len({task.dedupe_key(task.prepare_row(r)) for r in rows[20:]})
    with pytest.raises(ValueError, match="no training rows left"):
        prepare_dataset(task, tmp_path / "data", split="test", eval_split="test", test_size=100)


def test_countdown_unary_minus_option_end_to_end():
    row = {"nums": [1, 72, 12], "target": 863}
    text = "<answer>-1 + 72 * 12</answer>"
    assert get_task("countdown").judge(text, row).outcome is Outcome.PARTIAL  # the default rule rejects it
    assert get_task("countdown", ["unary_minus=true"]).judge(text, row).outcome is Outcome.CORRECT
    reward = get_task("countdown", ["unary_minus=true"]).get_reward_funcs(["countdown"])[0]
    assert reward(completions=[text], nums=[row["nums"]], target=[row["target"]]) == [1.0]
    strict = get_task("countdown").get_reward_funcs(["countdown"])[0]
    assert strict(completions=[text], nums=[row["nums"]], target=[row["target"]]) == [0.1]
    cli = [sys.executable, "-m", "countdown_rl.cli", "verify", "--nums", "1", "72", "12", "--target", "863", text]
    strict_out = json.loads(subprocess.run(cli, capture_output=True, text=True, check=True, cwd=ROOT).stdout)
    loose_out = json.loads(subprocess.run([*cli, "--unary-minus"], capture_output=True, text=True, check=True,
                                          cwd=ROOT).stdout)
    assert (strict_out["outcome"], loose_out["outcome"], loose_out["value"]) == ("partial", "correct", "863")


def test_verify_command_judges_any_task():
    row = '{"question": "How many?", "gold": "1200"}'
    cli = [sys.executable, "-m", "countdown_rl.cli", "verify", "--task", "gsm8k", "--row", row,
           "so the answer is <answer>1,200</answer>"]
    out = json.loads(subprocess.run(cli, capture_output=True, text=True, check=True, cwd=ROOT).stdout)
    assert out == {"answer": out["answer"], "outcome": "correct", "reward": 1.0}
    bad = subprocess.run([*cli[:7], "{}", cli[-1]], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "gold" in bad.stderr


# Per task: (template, reward names) the smoke run uses on the tiny model.
SMOKE_RUNS = {
    "countdown": ("r1_zero", ["countdown", "graduated"]),
    "gsm8k": ("chat", ["gsm8k", "gsm8k_format"]),
    "math": ("r1_zero", ["r1_zero", "math_shaped"]),
    "format_copy": ("plain", ["format_copy"]),
    "reasoning_gym": ("chat", ["reasoning_gym"]),
}


@pytest.mark.parametrize("name", NAMES)  # about a second each: the default tier's train and eval of every task
def test_train_smoke_run_and_eval_of_every_task(name, tiny_model_dir, tmp_path):
    """`countdown-rl train` on each task's generated rows, then `countdown-rl eval` of the result."""
    from countdown_rl.commands.evaluate import main as eval_main
    from countdown_rl.commands.train import main as train_main
    from countdown_rl.runs.record import read_run_record

    template, rewards = SMOKE_RUNS[name]
    out = tmp_path / "run"
    code = train_main([
        "--config", str(SMOKE), "--model_name_or_path", str(tiny_model_dir), "--output_dir", str(out),
        "--task", name, "--dataset_name", "generated", "--num_generated_rows", "48", "--test_size", "8",
        "--prompt_template", template, "--reward_funcs", *rewards, "--max_steps", "2", "--save_steps", "2",
        "--final_eval_size", "4",
    ])
    assert code == 0
    record = read_run_record(out)
    assert (record.task, record.dataset, record.data["test"]) == (name, "generated", 8)
    evaluation = json.loads((out / "eval" / "eval.json").read_text())
    assert evaluation["meta"]["task"] == name and evaluation["results"][0]["num_rows"] == 4
    samples = [json.loads(line) for line in (out / "eval" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 4 and all(set(get_task(name).columns) <= set(s) for s in samples)
    card = (out / "README.md").read_text()
    assert f"- {name}\n" in card and f"| task | `{name}` |" in card
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    logged = [h for h in history if "loss" in h]
    assert len(logged) == 2
    assert all(h["outcomes/correct"] + h["outcomes/partial"] + h["outcomes/failed"] == pytest.approx(1.0)
               for h in logged)
    assert all(f"rewards/{fn.__name__}/mean" in logged[0] for fn in get_task(name).get_reward_funcs(rewards))

    code = eval_main([
        "--model_name_or_path", str(out), "--task", name, "--dataset_name", "generated", "--num_generated_rows", "48",
        "--test_size", "8", "--prompt_template", template, "--max_completion_length", "8", "16", "--output-dir",
        str(tmp_path / "eval"), "--no-progress", "--backend", "transformers",
    ])
    assert code == 0
    evaluation = json.loads((tmp_path / "eval" / "eval.json").read_text())
    assert evaluation["meta"]["task"] == name and [r["max_tokens"] for r in evaluation["results"]] == [8, 16]
    assert evaluation["results"][0]["num_rows"] == 8  # the same held-out rows the run held out
