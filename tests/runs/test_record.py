"""The run record (``run_info.json``): one writer, one reader, the status; the guard and the demo read it alike."""

import json
from dataclasses import replace

import pytest

from countdown_rl.demo import stages as demo
from countdown_rl.demo.config import quick_config
from countdown_rl.demo.run_dir import DEMO_SOURCE
from countdown_rl.runs.guard import OutputDirError, check_output_dir
from countdown_rl.runs.record import RUN_INFO, RunRecord, read_run_record, set_status, update_extra, write_run_record
from countdown_rl.runs.reliability import plan_run


def test_a_record_round_trips_and_the_status_is_rewritten_in_place(tmp_path):
    record = RunRecord(task="gsm8k", algorithm="dr_grpo", model="m", recipe={"learning_rate": 0.1})
    write_run_record(tmp_path, record)
    set_status(tmp_path, "interrupted", step=7, message="interrupted at step 7", signal="SIGTERM")
    back = read_run_record(tmp_path)
    assert replace(back, status={}) == record  # the rest of the record is kept
    assert back.status == {"state": "interrupted", "step": 7, "message": "interrupted at step 7", "signal": "SIGTERM"}


def test_extra_keys_are_set_in_place_and_only_where_a_record_is(tmp_path):
    import doctest

    from countdown_rl.runs import record as module

    assert doctest.testmod(module).failed == 0
    assert update_extra(tmp_path, rollouts="compiled") is False and not (tmp_path / RUN_INFO).exists()
    write_run_record(tmp_path, RunRecord(task="math", extra={"rollouts": "compiled", "lora": False}))
    set_status(tmp_path, "running", step=0)
    assert update_extra(tmp_path, rollouts="transformers (compiled fell back: x)") is True
    back = read_run_record(tmp_path)
    assert back.extra == {"rollouts": "transformers (compiled fell back: x)", "lora": False}
    assert back.task == "math" and back.status["state"] == "running"


def test_keys_of_a_newer_version_are_kept_in_extra(tmp_path):
    (tmp_path / RUN_INFO).write_text(json.dumps({"task": "math", "shiny_new_key": [1, 2]}))
    record = read_run_record(tmp_path)
    assert record.task == "math" and record.extra == {"shiny_new_key": [1, 2]}


@pytest.mark.parametrize("text", ["[1, 2]", '"a string"', "{not json"])
def test_a_file_that_is_not_a_record_is_one_line_naming_it(tmp_path, text):
    (tmp_path / RUN_INFO).write_text(text)
    with pytest.raises(ValueError, match=rf"{tmp_path / RUN_INFO}: (expected a JSON object|not a readable)") as err:
        read_run_record(tmp_path)
    assert "\n" not in str(err.value)
    # the guard reads it through the same reader, and says how to go on
    with pytest.raises(OutputDirError, match="pass overwrite_output_dir: true to start afresh"):
        check_output_dir(tmp_path, {"seed": 0}, resume=False, overwrite=False)
    with pytest.raises(OutputDirError, match="pass overwrite_output_dir: true"):
        check_output_dir(tmp_path, {"seed": 0}, resume=True, overwrite=False)
    # overwriting does not need to read what it replaces
    assert check_output_dir(tmp_path, {"seed": 0}, resume=False, overwrite=True) is None


def test_the_guard_compares_the_recorded_recipe(tmp_path):
    write_run_record(tmp_path, RunRecord(recipe={"learning_rate": 0.1, "max_steps": 10, "output_dir": "x"},
                                         status={"state": "finished", "step": 10}))
    with pytest.raises(OutputDirError, match=r"holds a run with the same recipe, finished at step 10"):
        check_output_dir(tmp_path, {"learning_rate": 0.1, "max_steps": 10}, resume=False, overwrite=False)
    with pytest.raises(OutputDirError, match=r"cannot resume.*learning_rate: 0.1 -> 0.2"):
        plan_run(str(tmp_path), {"learning_rate": 0.2, "max_steps": 10}, resume=True, overwrite=False)
    plan = plan_run(str(tmp_path), {"learning_rate": 0.1, "max_steps": 20}, resume=True, overwrite=False)
    assert plan.checkpoint is None and not plan.overwrite  # max_steps may change; no checkpoint yet: start


def test_a_demo_stage_is_done_only_with_a_finished_record_of_the_same_settings(tmp_path):
    config = quick_config(output_dir=str(tmp_path))
    stage = demo.sft_record(config)
    sft = tmp_path / "sft"
    assert not demo.sft_stage_done(sft, config)
    record = RunRecord(algorithm="sft", source=DEMO_SOURCE, extra={"demo_stage": stage})
    write_run_record(sft, replace(record, status={"state": "running"}))
    assert not demo.sft_stage_done(sft, config)  # not finished
    write_run_record(sft, replace(record, status={"state": "finished"}))
    assert demo.sft_stage_done(sft, config)
    assert not demo.sft_stage_done(sft, replace(config, sft_steps=config.sft_steps + 1))  # other settings
    assert not demo.sft_stage_done(sft, replace(config, sft_bf16=True))  # trained in fp32: not a bf16 stage
    assert "bf16" not in stage  # fp32 adds no key: a folder made before sft_bf16 existed still resumes
    write_run_record(sft, replace(record, source="countdown-rl train", status={"state": "finished"}))
    assert not demo.sft_stage_done(sft, config)  # not a demo stage
    (sft / RUN_INFO).write_text("[]")
    assert not demo.sft_stage_done(sft, config)  # unreadable: not done, trained again


def test_the_demo_trains_through_the_guard_and_resumes_from_the_newest_complete_checkpoint(
        tiny_model_dir, tmp_path, capsys, one_torch_thread):
    from countdown_rl.runs.checkpoints import MANIFEST
    from countdown_rl.tasks.countdown.puzzles import generate_countdown

    puzzles = [{"nums": list(p["nums"]), "target": int(p["target"])} for p in generate_countdown(10, seed=0)]
    rows, held_out = puzzles[:8], puzzles[8:]
    run = tmp_path / "grpo"
    config = quick_config(output_dir=str(tmp_path), prompts_per_step=2, num_generations=2,
                               max_completion_length=8, save_steps=1, in_training_eval=0)

    def train(**settings):
        recipe = demo.rl_recipe(replace(config, **settings), tiny_model_dir, run, num_eval=2, final_eval=False)
        record = demo.demo_record(tiny_model_dir, "puzzles", {"sft": [], "rl": rows, "eval": held_out})
        return demo.train_rl(recipe, rows, held_out, record=record, show_progress=False).trained

    train(max_steps=2)
    record = read_run_record(run)
    assert record.source == DEMO_SOURCE and record.recipe["max_steps"] == 2  # the record train writes
    assert sorted(p.name for p in run.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]
    # the newest checkpoint loses a file: a resume starts from checkpoint-1 and says which one it skipped
    damaged = run / "checkpoint-2"
    victim = next(name for name in json.loads((damaged / MANIFEST).read_text())["files"] if "optimizer" in name)
    (damaged / victim).unlink()
    resumed = train(max_steps=3, resume=True)
    assert resumed.resumed_from == str(run / "checkpoint-1") and resumed.global_step == 3
    assert f"skipping incomplete checkpoint {damaged}" in capsys.readouterr().err
    # a resume with another recipe is refused before anything loads
    with pytest.raises(OutputDirError, match=r"cannot resume.*learning_rate"):
        train(max_steps=4, resume=True, grpo_learning_rate=0.5)
