"""Reliability of long runs (issue #16): the output-dir guard, signals, atomic checkpoints, non-finite steps, Hub.

1. Preemption: ``countdown-rl train`` runs as a real process (``tests/helpers/fault_run.py``) and gets a real
   signal during generation (SIGTERM twice), backward (SIGINT) or a checkpoint save (SIGUSR1 twice). It exits 75
   with one line saying how to resume, its status says ``interrupted`` at the step it stopped, no step that
   finished is lost, and ``--resume true`` ends bit-identical to an uninterrupted run. A signal during the last
   step (or its save) stops nothing: the run finishes. A resume from a checkpoint at ``max_steps`` trains no step.
2. Atomic checkpoints: SIGKILL while checkpoint-4 is written (``save_total_limit: 1``) leaves checkpoint-2 whole;
   resuming uses it (bit-exact). A truncated or deleted file makes a checkpoint skipped with a one-line warning.
3. Non-finite: NaN gradients or a NaN loss stop the run at that step (one line, step and quantity; the last good
   checkpoint kept, nothing saved after it); ``non_finite: skip`` goes on and counts the skipped step.
4. The output directory: another run's folder is refused before anything loads, naming the keys that differ;
   a resume must match the saved recipe except the keys that may change; ``overwrite_output_dir`` starts afresh.
The Hub around a run: tests/runs/test_hub.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from countdown_rl.commands.train import main
from countdown_rl.runs.checkpoints import MANIFEST, STAGING, checkpoint_problem, last_complete_checkpoint
from tests.helpers.env import ROOT, crash_report, offline_env
from tests.helpers.fault_run import injected
from tests.helpers.train_runs import ERROR, SMOKE, assert_bit_identical, one_error, status, tensors

FAULT_RUN = ROOT / "tests" / "helpers" / "fault_run.py"


def train_argv(model_dir, puzzles, out: Path, *overrides: str) -> list[str]:
    """The fault runs' ``countdown-rl train`` arguments: the smoke recipe, ``overrides`` last."""
    return ["--config", str(SMOKE), "--model_name_or_path", str(model_dir), "--dataset_name", str(puzzles),
            "--output_dir", str(out), "--final_eval_size", "4", *overrides]


def run_result(code: int, stderr: str) -> SimpleNamespace:
    ours = [line for line in stderr.splitlines() if line.startswith("countdown-rl train:")]
    return SimpleNamespace(code=code, stderr=stderr, ours=ours)


def fault_run(fault: str, model_dir, puzzles, out: Path, *overrides: str) -> SimpleNamespace:
    """``countdown-rl train`` on the smoke recipe in a subprocess, with ``fault`` injected (fault_run.py)."""
    command = [sys.executable, str(FAULT_RUN), fault, "--", *train_argv(model_dir, puzzles, out, *overrides)]
    done = subprocess.run(command, cwd=ROOT, env=offline_env(), capture_output=True, text=True, timeout=300)
    return run_result(done.returncode, done.stderr)


def fault_run_here(fault: str, model_dir, puzzles, out: Path, *overrides: str, capfd=None) -> SimpleNamespace:
    """:func:`fault_run` in this process, for the faults that send no signal and kill nothing: the same command
    line, hooks and reward (fault_run.injected), without a process's ~10 s of imports (its stderr read through
    ``capfd`` where given). Signals and kills stay real processes."""
    if capfd is not None:
        capfd.readouterr()
    with injected(fault) as state:
        code = main([*train_argv(model_dir, puzzles, out, *overrides), "--reward_funcs", "toy_dense"])
    stderr = (capfd.readouterr().err if capfd is not None else "") + f"fault_run: {state['step']} steps generated\n"
    return run_result(code, stderr)





@pytest.fixture(scope="module")
def uninterrupted(tiny_model_dir, puzzles, tmp_path_factory):
    out = tmp_path_factory.mktemp("uninterrupted") / "run"
    # in this process: the slow tier's resumed processes end bit-identical to it all the same (one torch thread each)
    run = fault_run_here("none", tiny_model_dir, puzzles, out)
    assert run.code == 0, crash_report(run.stderr)
    assert status(out)["state"] == "finished" and status(out)["step"] == 4
    return out


# ---------------------------------------------------------------------------------------------------------------
# 1. Preemption
# ---------------------------------------------------------------------------------------------------------------

SIGNAL_CASES = {
    # id: (fault, signal name, step the run stops at)
    "SIGTERM-twice-in-generation": ("signal:generation:3:TERM:2", "SIGTERM", 3),
    "SIGINT-in-backward": ("signal:backward:3:INT", "SIGINT", 3),
    "SIGUSR1-twice-in-save": ("signal:save:2:USR1:2", "SIGUSR1", 2),
}


@pytest.mark.comparison
@pytest.mark.slow  # three real signals, each a stopped run plus a resumed one as processes
@pytest.mark.parametrize("case", list(SIGNAL_CASES))
def test_a_signal_saves_a_checkpoint_and_the_resume_is_bit_exact(case, uninterrupted, tiny_model_dir, puzzles,
                                                                  tmp_path):
    fault, name, step = SIGNAL_CASES[case]
    out = tmp_path / "run"
    # --resume true from the start, as a requeued job's one command line would be: nothing to resume yet
    run = fault_run(fault, tiny_model_dir, puzzles, out, "--resume", "true")
    assert run.code == 75, crash_report(run.stderr)
    assert "Traceback" not in run.stderr
    [stopped] = [line for line in run.ours if "stopped:" in line]
    assert f"interrupted by {name} at step {step}" in stopped and "--resume true" in stopped
    assert f"fault_run: {step} steps generated" in run.stderr  # the step in flight finished; none is lost
    assert status(out) | {"message": None} == {"state": "interrupted", "step": step, "message": None,
                                               "signal": name, "checkpoint": str(out / f"checkpoint-{step}")}
    assert status(out)["message"] == f"interrupted at step {step}"
    assert checkpoint_problem(out / f"checkpoint-{step}") is None
    assert not (out / STAGING).exists() and not (out / "model.safetensors").exists()

    resumed = fault_run("none", tiny_model_dir, puzzles, out, "--resume", "true")
    assert resumed.code == 0, crash_report(resumed.stderr)
    assert f"fault_run: {4 - step} steps generated" in resumed.stderr  # only the remaining steps ran
    assert_bit_identical(uninterrupted / "model.safetensors", out / "model.safetensors")
    assert status(out)["state"] == "finished"
    assert json.loads((out / "run_info.json").read_text())["resumed_from"] == str(out / f"checkpoint-{step}")


LAST_STEP_SIGNALS = {
    # id: (fault, signal name), in the smoke recipe's last step (4 of 4; checkpoint-4 is a scheduled save)
    "SIGTERM-in-the-last-generation": ("signal:generation:4:TERM", "SIGTERM"),
    "SIGUSR1-in-the-last-save": ("signal:save:4:USR1", "SIGUSR1"),
}


@pytest.mark.comparison
@pytest.mark.slow  # real signals to real processes
@pytest.mark.parametrize("case", list(LAST_STEP_SIGNALS))
def test_a_signal_at_the_last_step_lets_the_run_finish(case, uninterrupted, tiny_model_dir, puzzles, tmp_path):
    """Training has no step left to stop at: the run is not recorded ``interrupted`` at step 4 (whose resume
    trained a step 5 of 4), it finishes as an uninterrupted run does, and says why the signal stopped nothing."""
    fault, name = LAST_STEP_SIGNALS[case]
    out = tmp_path / "run"
    run = fault_run(fault, tiny_model_dir, puzzles, out)
    assert run.code == 0, crash_report(run.stderr)
    assert "fault_run: 4 steps generated" in run.stderr
    assert not [line for line in run.ours if "stopped:" in line]
    [note] = [line for line in run.ours if ": note: " in line]
    assert f"training reached its last step (4 of 4) before {name} could stop it" in note
    assert status(out) == {"state": "finished", "step": 4, "message": None}
    assert (out / "eval" / "eval.json").is_file()  # the final evaluation ran
    assert_bit_identical(uninterrupted / "model.safetensors", out / "model.safetensors")


def test_a_resume_from_a_checkpoint_at_max_steps_trains_no_step(uninterrupted, tiny_model_dir, puzzles, tmp_path,
                                                                capfd):
    """checkpoint-4 of a 4-step run, the run not finished: what a signal in the last step left before it let the
    run finish, and what a kill during the final evaluation still leaves. transformers' loop would train a step 5
    of 4 before checking its stop flag; the resume trains none, then saves, evaluates and records the run."""
    from countdown_rl.runs.record import set_status

    out = tmp_path / "run"
    shutil.copytree(uninterrupted, out)
    (out / "model.safetensors").unlink()
    shutil.rmtree(out / "eval")
    set_status(out, "interrupted", step=4, message="interrupted at step 4", signal="SIGTERM",
               checkpoint=str(out / "checkpoint-4"))
    run = fault_run_here("none", tiny_model_dir, puzzles, out, "--resume", "true", capfd=capfd)
    assert run.code == 0, crash_report(run.stderr)
    assert "fault_run: 0 steps generated" in run.stderr  # no rollout: no step 5
    assert json.loads((out / "run_info.json").read_text())["resumed_from"] == str(out / "checkpoint-4")
    assert status(out) == {"state": "finished", "step": 4, "message": None}
    state = json.loads((out / "trainer_state.json").read_text())
    assert state["global_step"] == 4 and [h["step"] for h in state["log_history"] if "loss" in h] == [1, 2, 3, 4]
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-4"]
    assert_bit_identical(uninterrupted / "model.safetensors", out / "model.safetensors")
    assert (out / "eval" / "eval.json").is_file()


@pytest.mark.slow
def test_two_processes_stop_at_the_same_step_when_one_gets_the_signal(tiny_model_dir, puzzles, tmp_path):
    """``accelerate launch --multi_gpu --num_processes 2`` on the CPU (gloo); SIGTERM reaches rank 0 only.
    (Their resume: tests/runs/test_engine.py.)"""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "run"
    env = offline_env()
    command = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
               "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port",
               str(port), str(FAULT_RUN), "signal:generation:3:TERM", "--", "--config", str(SMOKE),
               "--model_name_or_path", str(tiny_model_dir), "--dataset_name", str(puzzles), "--output_dir", str(out)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode != 0  # the launcher reports the children's exit code 75 as a failure of its own
    assert done.stderr.count("fault_run: 3 steps generated") == 2, crash_report(done.stderr)  # both ranks, step 3
    assert done.stderr.count("countdown-rl train: stopped: interrupted by SIGTERM at step 3") == 1  # rank 0 says it
    assert status(out)["state"] == "interrupted" and status(out)["step"] == 3
    assert checkpoint_problem(out / "checkpoint-3") is None
    assert {"rng_state_0.pth", "rng_state_1.pth"} <= {p.name for p in (out / "checkpoint-3").iterdir()}


# ---------------------------------------------------------------------------------------------------------------
# 2. Atomic checkpoints
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.comparison
@pytest.mark.slow  # a killed run and its resume, as processes
def test_a_kill_mid_save_keeps_the_previous_checkpoint_and_resume_uses_it(uninterrupted, tiny_model_dir, puzzles,
                                                                          tmp_path):
    out = tmp_path / "run"
    run = fault_run("kill-in-save:4", tiny_model_dir, puzzles, out, "--save_total_limit", "1")
    assert run.code == -9
    # checkpoint-4 never appeared: its files are in the staging folder; checkpoint-2 was not rotated away
    assert (out / STAGING / "checkpoint-4" / "optimizer.pt").read_bytes() == b"partial"
    assert [p.name for p in out.glob("checkpoint-*")] == ["checkpoint-2"]
    assert checkpoint_problem(out / "checkpoint-2") is None
    resumed = fault_run("none", tiny_model_dir, puzzles, out, "--resume", "true", "--save_total_limit", "1")
    assert resumed.code == 0, crash_report(resumed.stderr)
    assert "fault_run: 2 steps generated" in resumed.stderr
    assert_bit_identical(uninterrupted / "model.safetensors", out / "model.safetensors")
    assert [p.name for p in out.glob("checkpoint-*")] == ["checkpoint-4"] and not (out / STAGING).exists()


@pytest.mark.parametrize("damage", ["truncate", "delete"])
def test_an_incomplete_checkpoint_is_skipped_with_one_warning(uninterrupted, tmp_path, capsys, damage, monkeypatch):
    from countdown_rl.tasks.countdown.rewards import REWARD_FUNCS

    out = tmp_path / "run"
    shutil.copytree(uninterrupted, out)
    assert last_complete_checkpoint(out) == out / "checkpoint-4"
    victim = out / "checkpoint-4" / ("model.safetensors" if damage == "truncate" else "optimizer.pt")
    if damage == "truncate":
        os.truncate(victim, victim.stat().st_size // 2)
    else:
        victim.unlink()
    assert last_complete_checkpoint(out) == out / "checkpoint-2"
    [warning] = capsys.readouterr().err.splitlines()
    assert warning.startswith("countdown-rl train: warning: skipping incomplete checkpoint")
    assert str(out / "checkpoint-4") in warning and victim.name in warning
    # an explicit path to it is refused in one line, before loading
    monkeypatch.setitem(REWARD_FUNCS, "toy_dense", lambda completions, **kwargs: [0.0] * len(completions))
    assert main(saved_run_argv(out, "--resume_from_checkpoint", str(out / "checkpoint-4"))) == 2
    assert f"resume_from_checkpoint: {out / 'checkpoint-4'} is incomplete ({victim.name}" in one_error(capsys)
    (out / "checkpoint-2" / MANIFEST).unlink()  # a checkpoint from before manifests: checked for the basics
    assert checkpoint_problem(out / "checkpoint-2") is None


# ---------------------------------------------------------------------------------------------------------------
# 3. Non-finite steps
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault,quantity", [("nan-grad:3", "grad_norm"), ("nan-loss:3", "loss")])
def test_a_non_finite_step_stops_the_run_and_keeps_the_last_good_checkpoint(fault, quantity, tiny_model_dir,
                                                                            puzzles, tmp_path, capfd):
    out = tmp_path / "run"
    run = fault_run_here(fault, tiny_model_dir, puzzles, out, capfd=capfd)
    assert run.code == 1 and "Traceback" not in run.stderr
    [line] = [line for line in run.ours if line.startswith(ERROR)]
    assert f"step 3: {quantity} is nan" in line and str(out / "checkpoint-2") in line
    assert [p.name for p in out.glob("checkpoint-*")] == ["checkpoint-2"]
    assert not (out / "model.safetensors").exists()
    assert status(out)["state"] == "failed" and status(out)["step"] == 2


def test_non_finite_skip_goes_on_and_counts(tiny_model_dir, puzzles, tmp_path, capfd):
    out = tmp_path / "run"
    run = fault_run_here("nan-grad:3", tiny_model_dir, puzzles, out, "--non_finite", "skip", "--save_steps", "1",
                         "--save_total_limit", "4", capfd=capfd)
    assert run.code == 0, crash_report(run.stderr)
    logs = [h for h in json.loads((out / "trainer_state.json").read_text())["log_history"] if "loss" in h]
    assert [h["non_finite_skipped"] for h in logs] == [0, 0, 1, 1]
    # the skipped step changed no weight
    assert all(torch.equal(a, tensors(out / "checkpoint-3" / "model.safetensors")[k])
               for k, a in tensors(out / "checkpoint-2" / "model.safetensors").items())


# ---------------------------------------------------------------------------------------------------------------
# 4. The output directory (errors before anything is loaded)
# ---------------------------------------------------------------------------------------------------------------



def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


GUARD_CASES = {
    # id: (overrides, words the one line must contain)
    "same-recipe": ([], ["holds a run with the same recipe", "finished at step 4", "--resume true",
                         "--overwrite_output_dir true"]),
    "different-recipe": (["--learning_rate", "0.5", "--seed", "7"],
                         ["different recipe", "learning_rate: 0.0001 -> 0.5", "seed: 42 -> 7"]),
    "resume-different-recipe": (["--resume", "true", "--num_generations", "2"],
                                ["cannot resume", "num_generations: 4 -> 2", "max_steps"]),
    "trl-resume-different-recipe": (["--resume_from_checkpoint", "true", "--beta", "0.1"],
                                    ["cannot resume", "beta: 0.0 -> 0.1"]),
    "resume-and-overwrite": (["--resume", "true", "--overwrite_output_dir", "true"], ["choose one"]),
}


def saved_run_argv(out: Path, *overrides: str) -> list[str]:
    """The command line of the run recorded in ``out`` (its model and puzzles), plus ``overrides``."""
    saved = json.loads((out / "run_info.json").read_text())["recipe"]
    return ["--config", str(SMOKE), "--model_name_or_path", saved["model_name_or_path"], "--dataset_name",
            saved["dataset_name"], "--output_dir", str(out), "--final_eval_size", "4", "--reward_funcs", "toy_dense",
            *overrides]


@pytest.mark.parametrize("case", list(GUARD_CASES))
def test_another_runs_folder_is_refused_in_one_line(case, uninterrupted, capsys, no_loading, monkeypatch):
    from countdown_rl.tasks.countdown.rewards import REWARD_FUNCS

    monkeypatch.setitem(REWARD_FUNCS, "toy_dense", lambda completions, **kwargs: [0.0] * len(completions))
    overrides, words = GUARD_CASES[case]
    before = snapshot(uninterrupted)
    assert main(saved_run_argv(uninterrupted, *overrides)) == 2
    message = one_error(capsys)
    assert message.startswith(f"output_dir {uninterrupted}: ") or case == "resume-and-overwrite"
    for word in words:
        assert word in message, message
    assert snapshot(uninterrupted) == before


def test_folders_that_are_not_runs(tmp_path, capsys, no_loading):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for out, words in [(foreign, ["not empty", "run_info.json", "--overwrite_output_dir true"]),
                       (a_file, ["not a folder"])]:
        assert main(["--config", str(SMOKE), "--output_dir", str(out)]) == 2
        message = one_error(capsys)
        assert str(out) in message and all(w in message for w in words), message
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]


def test_keys_that_may_change_on_resume_pass_the_guard(uninterrupted):
    from countdown_rl.runs.guard import check_output_dir, effective_recipe
    from countdown_rl.training.recipe import parse_args

    argv = saved_run_argv(uninterrupted, "--max_steps", "10", "--logging_steps", "5", "--save_steps", "3",
                          "--save_total_limit", "1", "--eval_steps", "2", "--report_to", "tensorboard",
                          "--final_eval_size", "0")
    argv[argv.index("--output_dir") + 1] = "/elsewhere"
    recipe = effective_recipe(*parse_args(argv))
    assert check_output_dir(uninterrupted, recipe, resume=True, overwrite=False).status["state"] == "finished"


def test_overwrite_starts_afresh(uninterrupted, tiny_model_dir, puzzles, tmp_path, capfd):
    out = tmp_path / "run"
    shutil.copytree(uninterrupted, out)
    run = fault_run_here("none", tiny_model_dir, puzzles, out, "--overwrite_output_dir", "true", "--max_steps", "2",
                         capfd=capfd)
    assert run.code == 0, crash_report(run.stderr)
    assert [p.name for p in out.glob("checkpoint-*")] == ["checkpoint-2"]  # the old checkpoint-4 is gone
    info = json.loads((out / "run_info.json").read_text())
    assert info["recipe"]["max_steps"] == 2 and info["status"] == {"state": "finished", "step": 2, "message": None}
