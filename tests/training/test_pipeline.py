"""The one training pipeline (countdown_rl.training.pipeline): its short progress line; recipes run end to end
through it in tests/commands/test_train.py (``countdown-rl train``) and tests/demo/ (the demos)."""

import pytest

from countdown_rl.runs.guard import release_all_output_dirs
from countdown_rl.training.pipeline import RecipeError, run_recipe
from countdown_rl.training.recipe import recipe_from_keys
from tests.helpers.train_runs import SMOKE


def test_progress_lines_estimate_the_time_left_from_this_runs_pace(monkeypatch, capsys):
    """The short progress line (train and the demo): the time left is the pace of the steps this process made
    (a resumed run counts from its first step) times the steps to go."""
    import time

    from transformers import TrainerControl, TrainerState, TrainingArguments

    from countdown_rl.training.pipeline import progress_callback

    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    args, control = TrainingArguments(output_dir="unused", report_to="none"), TrainerControl()
    logs = {"loss": 0.1, "reward": 0.5, "outcomes/correct": 0.25, "completions/mean_length": 40.0}

    callback, state = progress_callback(every=2), TrainerState(global_step=0, max_steps=10)
    callback.on_train_begin(args, state, control)
    clock[0], state.global_step = 160.0, 2  # 30 s a step, 8 steps to go
    callback.on_log(args, state, control, logs=logs)
    callback.on_log(args, state, control, logs={"eval_accuracy": 0.3})
    state.global_step = 3  # not a multiple of `every`: no line
    callback.on_log(args, state, control, logs=logs)

    resumed, state = progress_callback(every=1), TrainerState(global_step=5, max_steps=10)
    resumed.on_train_begin(args, state, control)
    clock[0], state.global_step = 170.0, 6  # 10 s for its one step, 4 to go
    resumed.on_log(args, state, control, logs={"loss": 0.2})
    assert capsys.readouterr().out.splitlines() == [
        "  step 2/10: reward 0.500, sampled correct 25.0%, mean length 40.0 tokens, about 4 min left",
        "  step 2/10: held-out accuracy 30.0% (greedy, in-training subset)",
        "  step 6/10: loss 0.200, under a minute left",
    ]

    # logged every 7 steps, a line every 15: one at the first logged step past each multiple of 15, and the last
    sft, state = progress_callback(every=15), TrainerState(global_step=0, max_steps=150)
    sft.on_train_begin(args, state, control)
    for step in [*range(7, 150, 7), 150]:
        state.global_step = step
        sft.on_log(args, state, control, logs={"loss": 0.1})
    printed = [int(line.split()[1].split("/")[0]) for line in capsys.readouterr().out.splitlines()]
    assert printed == [21, 35, 49, 63, 77, 91, 105, 126, 140, 150]  # past 15, 30, ..., 135; then the last


def test_a_recipe_run_in_code_reports_a_bad_data_file_before_the_model_loads(tmp_path, no_loading):
    """The demos' way in (the recipe's keys in code, no argv) finds what ``countdown-rl train`` finds, as a one-line
    RecipeError, before any model or tokenizer loads."""
    import yaml

    keys = {**yaml.safe_load(SMOKE.read_text()), "dataset_name": str(tmp_path / "absent.jsonl"),
            "model_name_or_path": str(tmp_path / "no-model"), "output_dir": str(tmp_path / "out")}
    try:
        with pytest.raises(RecipeError, match="absent.jsonl"):
            run_recipe(*recipe_from_keys(keys))
    finally:
        release_all_output_dirs()
