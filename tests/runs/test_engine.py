"""The distributed engine (``countdown_rl.runs.engine``): the engine asked for runs or is refused.

1. The launch check: what the launcher's environment asks for against what would run, as a table; the engine's
   one-line summary.
2. Real launches on the CPU (slow tier): FSDP2 over two gloo processes through the shipped
   ``accelerate_configs/fsdp.yaml`` trains, evaluates in training and at the end (7 rows over 2 processes), saves
   a full checkpoint, stops on a signal and resumes bit-exactly; its weights equal DDP's on the same launch (DDP's
   equal one process's at the same global batch: tests/training/test_trainer.py); the final ``eval/`` equals a
   one-process ``countdown-rl eval`` of the saved model on the same rows. LoRA under FSDP2. DDP's stop and resume.
   Launches that would run something else are refused in one line with no model written.

DeepSpeed is not installed here (its launcher needs the package, and ZeRO does not run on the CPU): its refusal
is tested through accelerate's own launcher (which stops first) and, with the environment accelerate's DeepSpeed
launcher would hand over, through ours.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from countdown_rl.runs.engine import Engine, LaunchError, check_launch
from tests.helpers.env import ROOT, crash_report, offline_env, run_or_dump
from tests.helpers.train_runs import DDP_LAUNCH, FAULT_RUN, FSDP2_LAUNCH, accelerate_launch, free_port

SMOKE = ROOT / "recipes" / "smoke" / "cpu_tiny.yaml"
SMOKE_LORA = ROOT / "recipes" / "smoke" / "cpu_tiny_lora.yaml"
ERROR = "countdown-rl train: error: "
REFUSED = {
    # id: (use_cpu, launcher environment, words of the one line)
    "processes-that-would-each-train-alone": (False, {"WORLD_SIZE": "2", "LOCAL_RANK": "0"},
                                              ["2 processes were launched", "--use_cpu true"]),
    "slurm-tasks-that-are-not-one-job": (True, {"SLURM_STEP_NUM_TASKS": "2"},
                                         ["one of 2 SLURM tasks", "job of 1 process", "torchrun per node"]),
    "deepspeed-on-the-cpu": (True, {"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": "3",
                                    "WORLD_SIZE": "2", "LOCAL_RANK": "0"}, ["DeepSpeed cannot run on the CPU", "DDP"]),
    "fsdp1-on-the-cpu": (True, {"ACCELERATE_USE_FSDP": "true", "FSDP_VERSION": "1", "WORLD_SIZE": "2"},
                         ["FSDP1 on the CPU", "fsdp_version: 2"]),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_launches_that_would_run_something_else_are_refused_in_one_line(case):
    use_cpu, env, words = REFUSED[case]
    with pytest.raises(LaunchError) as caught:
        check_launch(use_cpu, env, has_gpu=False)
    message = str(caught.value)
    assert "\n" not in message and all(w in message for w in words), message


@pytest.mark.parametrize("env, has_gpu, summary", [
    ({}, False, "one process (cpu)"),
    ({"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "LOCAL_RANK": "0"}, False,
     "DDP over 2 processes on 1 node (gloo, cpu)"),
    ({"ACCELERATE_USE_FSDP": "true", "FSDP_VERSION": "2", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2",
      "LOCAL_RANK": "0", "SLURM_STEP_NUM_TASKS": "2"}, False, "FSDP2 over 4 processes on 2 nodes (gloo, cpu)"),
    ({"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": "3", "WORLD_SIZE": "8",
      "LOCAL_WORLD_SIZE": "8", "LOCAL_RANK": "0"}, True, "DeepSpeed ZeRO-3 over 8 processes on 1 node (nccl, cuda)"),
])
def test_the_planned_engine_names_what_runs(env, has_gpu, summary):
    engine = check_launch(not has_gpu, env, has_gpu=has_gpu)
    assert isinstance(engine, Engine) and engine.summary() == summary


def fault_run(launcher, fault, model, puzzles, out, *extra):
    return accelerate_launch(launcher, [str(FAULT_RUN), fault, "--"], "--config", str(SMOKE),
                             "--model_name_or_path", str(model), "--dataset_name", str(puzzles), "--output_dir",
                             str(out), "--eval_strategy", "steps", "--eval_steps", "2", "--eval_subset_size", "5",
                             "--final_eval_size", "7", *extra)


def weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


def completions(folder: Path) -> list[tuple]:
    rows = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    return [(tuple(r["nums"]), r["target"], r["completion"]) for r in rows]


@pytest.fixture(scope="module")
def fsdp2_runs(tiny_model_dir, puzzles, tmp_path_factory):
    """FSDP2 uninterrupted (``shared_prompt_forward`` unset: the plain pass, said); FSDP2 stopped by SIGTERM at step 3
    and resumed; DDP on the same launch shape with the plain pass too (``false``), so the two differ by the sharding
    alone; FSDP2 with ``shared_prompt_forward`` false (the update the fallback must equal) and true (refused)."""
    base = tmp_path_factory.mktemp("fsdp2")
    full, resumed, ddp = base / "full", base / "resumed", base / "ddp"
    runs = {"full": fault_run(FSDP2_LAUNCH, "none", tiny_model_dir, puzzles, full),
            "plain": fault_run(FSDP2_LAUNCH, "none", tiny_model_dir, puzzles, base / "plain",
                               "--shared_prompt_forward", "false"),
            "asked": fault_run(FSDP2_LAUNCH, "none", tiny_model_dir, puzzles, base / "asked",
                               "--shared_prompt_forward", "true"),
            "stopped": fault_run(FSDP2_LAUNCH, "signal:generation:3:TERM", tiny_model_dir, puzzles, resumed),
            "ddp": fault_run(DDP_LAUNCH, "none", tiny_model_dir, puzzles, ddp, "--shared_prompt_forward", "false")}
    runs["resumed"] = fault_run(FSDP2_LAUNCH, "none", tiny_model_dir, puzzles, resumed, "--resume", "true")
    return runs, full, resumed, ddp


@pytest.mark.slow
def test_fsdp2_on_the_cpu_trains_evaluates_saves_and_says_so(fsdp2_runs):
    runs, full, _, _ = fsdp2_runs
    assert runs["full"].returncode == 0, crash_report(runs["full"].stderr)
    first = next(line for line in runs["full"].stderr.splitlines() if "countdown_rl" in line)
    assert "engine: FSDP2 over 2 processes on 1 node (gloo, cpu)" in first  # the log's first line of ours
    # neither rank imported vLLM (none of this run generates with it): countdown_rl.generation.vllm_import
    assert runs["full"].stderr.count("vLLM: not imported into this process (use_vllm is false)") == 2
    assert "reducer" not in runs["full"].stderr  # no DDP reducer: the model was not wrapped in DDP
    info = json.loads((full / "run_info.json").read_text())
    assert info["engine"]["kind"] == "FSDP" and info["engine"]["version"] == 2
    assert info["num_processes"] == 2 and info["status"]["state"] == "finished"
    # in-training evaluation at step 2 and 4 (5 rows over 2 ranks), final evaluation of 7 rows over 2 ranks
    history = json.loads((full / "trainer_state.json").read_text())["log_history"]
    assert [h["step"] for h in history if "eval_accuracy" in h] == [2, 4]
    final = json.loads((full / "eval" / "eval.json").read_text())
    assert final["results"][0]["num_rows"] == 7 and len(completions(full / "eval")) == 7
    assert len(set(completions(full / "eval"))) == 7  # every row once
    # a full checkpoint: an ordinary HF model (plus the FSDP optimizer), loadable by transformers
    assert (full / "checkpoint-4" / "model.safetensors").is_file()


@pytest.mark.comparison
@pytest.mark.slow
def test_fsdp2_resumes_bit_exactly_and_equals_ddp(fsdp2_runs):
    runs, full, resumed, ddp = fsdp2_runs
    assert runs["stopped"].returncode != 0 and "interrupted by SIGTERM at step 3" in runs["stopped"].stderr
    assert runs["resumed"].returncode == 0, crash_report(runs["resumed"].stderr)
    assert runs["resumed"].stderr.count("fault_run: 1 steps generated") == 2  # both ranks ran only step 4
    a, b = weights(full), weights(resumed)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert runs["ddp"].returncode == 0, crash_report(runs["ddp"].stderr)
    c = weights(ddp)  # FSDP2 also saves the tied lm_head; DDP's keys are a subset
    moved = [k for k in c if not torch.equal(c[k], weights(full / "checkpoint-2")[k])]
    assert moved, "training must move the weights for the comparison to mean anything"
    for key in c:  # same sampled rollouts per rank, same all-reduced gradients: equal to float rounding
        torch.testing.assert_close(a[key], c[key], rtol=1e-5, atol=1e-7)
    assert completions(full / "eval") == completions(ddp / "eval")


@pytest.mark.slow
def test_prompt_once_under_fsdp2_runs_the_plain_pass_and_says_why(fsdp2_runs):
    """FSDP2 frees the sharded parameters after each forward; the prompt pass's backward would find them gone
    (measured: "storage of size 0"). Unset, the flag falls back: the plain pass runs, the log and the run record say
    why, and the update is the flag-off one; asked for explicitly, the run refuses in one line."""
    runs, full, _, _ = fsdp2_runs
    assert runs["full"].returncode == 0, crash_report(runs["full"].stderr)
    assert "shared_prompt_forward: the plain log-prob pass runs instead (sharded parameters" in runs["full"].stderr
    ran = json.loads((full / "run_info.json").read_text())["extra"]["log_prob_pass"]
    assert ran.startswith("plain (sharded parameters")
    a, b = weights(full), weights(full.parent / "plain")
    assert all(torch.equal(a[key], b[key]) for key in a)
    asked = runs["asked"]
    assert asked.returncode != 0
    said = [line for line in asked.stderr.splitlines() if line.startswith("countdown-rl train: error:")]
    assert said and all("shared_prompt_forward: true cannot run here: sharded parameters" in line for line in said)
    assert not (full.parent / "asked" / "model.safetensors").exists()


@pytest.mark.comparison
@pytest.mark.slow
def test_fsdp2_final_evaluation_equals_one_process_eval_of_the_saved_model(fsdp2_runs, puzzles, tmp_path):
    _, full, _, _ = fsdp2_runs
    out = tmp_path / "eval"
    done = subprocess.run(
        [sys.executable, "-m", "countdown_rl.commands.evaluate", "--model_name_or_path", str(full),
         "--dataset_name", str(puzzles),
         "--test_size", "16", "--split_seed", "42", "--prompt_template", "r1_zero", "--num_rows", "7",
         "--max_completion_length", "16", "--output_dir", str(out), "--no_progress"],
        cwd=ROOT, env=offline_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, crash_report(done.stderr)
    assert completions(out) == completions(full / "eval")


@pytest.mark.slow
def test_lora_under_fsdp2(tiny_model_dir, puzzles, tmp_path):
    out = tmp_path / "lora"
    done = accelerate_launch(FSDP2_LAUNCH, ["-m", "countdown_rl.commands.train"], "--config", str(SMOKE_LORA),
                             "--model_name_or_path", str(tiny_model_dir), "--dataset_name", str(puzzles),
                             "--output_dir", str(out), "--max_steps", "2", "--final_eval_size", "3")
    assert done.returncode == 0, crash_report(done.stderr)
    info = json.loads((out / "run_info.json").read_text())
    assert info["engine"]["summary"].startswith("FSDP2") and info["use_peft"] and info["status"]["state"] == "finished"
    assert (out / "adapter_model.safetensors").is_file() and (out / "merged" / "model.safetensors").is_file()


@pytest.mark.comparison
@pytest.mark.slow
def test_two_ddp_processes_stop_together_and_resume_bit_exactly(tiny_model_dir, puzzles, tmp_path):
    """The resume that transformers 5.17 broke on the CPU (optimizer.pt mapped to 'cpu:0'), fixed in the trainer."""
    full, resumed = tmp_path / "full", tmp_path / "resumed"
    done = fault_run(DDP_LAUNCH, "none", tiny_model_dir, puzzles, full, "--eval_strategy", "no")
    assert done.returncode == 0, crash_report(done.stderr)
    stopped = fault_run(DDP_LAUNCH, "signal:generation:3:TERM", tiny_model_dir, puzzles, resumed,
                        "--eval_strategy", "no")
    assert "interrupted by SIGTERM at step 3" in stopped.stderr, crash_report(stopped.stderr)
    done = fault_run(DDP_LAUNCH, "none", tiny_model_dir, puzzles, resumed, "--eval_strategy", "no", "--resume", "true")
    assert done.returncode == 0, crash_report(done.stderr)
    a, b = weights(full), weights(resumed)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert json.loads((resumed / "run_info.json").read_text())["engine"]["summary"].startswith("DDP over 2")


@pytest.mark.slow
def test_a_rank_that_crashes_leaves_its_python_stack_in_the_failure_output(tiny_model_dir, puzzles, tmp_path):
    """Rank 1 of a DDP launch dies of SIGSEGV in step 2's reward call: the launch fails, and the test's failure
    message (``crash_report``) opens with that rank's fault-handler dump, down to the line that crashed."""
    done = fault_run(DDP_LAUNCH, "segv:2:1", tiny_model_dir, puzzles, tmp_path / "crashed", "--eval_strategy", "no")
    assert done.returncode != 0
    report = crash_report(done.stderr).splitlines()
    assert report[0] == "crash: Fatal Python error: Segmentation fault", "\n".join(report[:40])
    stack = "\n".join(line for line in report if line.startswith("crash: "))
    assert 'fault_run.py", line' in stack and "in toy_dense_reward" in stack, stack[-3000:]
    assert not (tmp_path / "crashed" / "model.safetensors").exists()


def test_a_launch_that_hangs_leaves_every_process_stack_in_the_failure_output():
    """A process that outlives its timeout, and the one it started (as a launcher and its rank), each print where
    they wait: the test's failure message holds both stacks (run_or_dump: SIGABRT, then the fault handler)."""
    rank = "import time\ndef wait_for_the_other_rank():\n    time.sleep(600)\nwait_for_the_other_rank()\n"
    launcher = (f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {rank!r}])\n"
                "def wait_for_the_rank():\n    time.sleep(600)\nwait_for_the_rank()\n")
    with pytest.raises(AssertionError) as failure:
        run_or_dump([sys.executable, "-c", launcher], timeout=3, env=offline_env())
    message = str(failure.value)
    assert message.startswith("still running after 3 s, so each of its 2 processes was sent SIGABRT"), message
    assert message.count("crash: Fatal Python error: Aborted") == 2, message
    assert "in wait_for_the_rank" in message and "in wait_for_the_other_rank" in message, message


@pytest.mark.slow
def test_real_launches_that_would_run_something_else_are_refused(tiny_model_dir, puzzles, tmp_path):
    args = ["--config", str(SMOKE), "--model_name_or_path", str(tiny_model_dir), "--dataset_name", str(puzzles)]
    # use_cpu false without a GPU: two one-process runs in one folder, were it not refused
    out = tmp_path / "alone"
    done = accelerate_launch(FSDP2_LAUNCH, ["-m", "countdown_rl.commands.train"], *args, "--output_dir", str(out),
                             "--use_cpu", "false", timeout=200)
    errors = [line for line in done.stderr.splitlines() if line.startswith(ERROR)]
    assert done.returncode != 0 and len(errors) == 1 and "each would train alone" in errors[0], crash_report(
        done.stderr, 2000)
    assert not out.exists()
    # DeepSpeed (ZeRO-3) on the CPU, with the environment accelerate's DeepSpeed launcher hands to each process
    out = tmp_path / "zero3"
    env = offline_env(ACCELERATE_USE_DEEPSPEED="true", ACCELERATE_DEEPSPEED_ZERO_STAGE="3")
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
                str(free_port()), "-m", "countdown_rl.commands.train"]
    done = subprocess.run([*torchrun, *args, "--output_dir", str(out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=200)
    errors = [line for line in done.stderr.splitlines() if line.startswith(ERROR)]
    assert done.returncode != 0 and len(errors) == 1 and "DeepSpeed cannot run on the CPU" in errors[0]
    assert not out.exists()
    # the shipped ZeRO-3 config: accelerate's launcher stops first without the deepspeed package
    if not _has_deepspeed():
        zero3 = ["--config_file", str(ROOT / "accelerate_configs" / "zero3.yaml"), "--num_processes", "2"]
        done = accelerate_launch(zero3, ["-m", "countdown_rl.commands.train"], *args, "--output_dir", str(out),
                                 timeout=200)
        assert done.returncode != 0 and "DeepSpeed is not installed" in done.stderr and not out.exists()


def _has_deepspeed() -> bool:
    import importlib.util

    return importlib.util.find_spec("deepspeed") is not None
