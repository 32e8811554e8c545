"""``countdown-rl train`` runs for tests: the smoke recipes, a toy dense reward that can crash a run mid-training,
an uninterrupted run beside a crashed-then-resumed one, and the checks that they end bit-identical.

A random tiny model scores 0 on the Countdown reward, so every advantage and gradient is zero and its weights never
move: these runs add a dense toy reward to the registry (``toy_dense``) so that resuming is tested on weights that
change.
"""

from __future__ import annotations

import hashlib
import json
import random
import socket
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from countdown_rl.commands.train import main
from countdown_rl.runs.guard import LOCK_FILE
from countdown_rl.tasks.countdown.rewards import REWARD_FUNCS, completion_text
from tests.helpers.env import ROOT, hang_guard, offline_env, run_or_dump

SMOKE = ROOT / "recipes" / "smoke" / "cpu_tiny.yaml"
SMOKE_LORA = ROOT / "recipes" / "smoke" / "cpu_tiny_lora.yaml"
FAULT_RUN = ROOT / "tests" / "helpers" / "fault_run.py"
LOGGED_PER_STEP = ("loss", "grad_norm", "learning_rate", "reward", "reward_std", "entropy", "num_tokens")


class SimulatedCrash(Exception):
    """Raised by the toy reward to stop a run mid-training, as a crash or a killed job would."""


def toy_reward(crash_in_call: int | None = None):
    """A dense reward (distinct characters per character) that varies between random completions.

    Called once per optimizer step here (one generation per step); raises ``SimulatedCrash`` in call
    ``crash_in_call``, i.e. while generating that step, after the previous steps' checkpoints are written.
    """

    def toy_dense_reward(completions, **kwargs):
        toy_dense_reward.calls += 1
        if toy_dense_reward.calls == crash_in_call:
            raise SimulatedCrash(f"simulated crash in step {crash_in_call}")
        texts = [completion_text(c) for c in completions]
        return [len(set(text)) / (1 + len(text)) for text in texts]

    toy_dense_reward.calls = 0
    return toy_dense_reward


def train(recipe: Path, model_dir, puzzles, out: Path, *overrides: str, reward=None) -> int:
    """``countdown-rl train`` on a smoke recipe: the toy reward, 4 held-out puzzles in the final evaluation."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(REWARD_FUNCS, "toy_dense", reward or toy_reward())
        return main([
            "--config", str(recipe), "--model_name_or_path", str(model_dir), "--dataset_name", str(puzzles),
            "--output_dir", str(out), "--reward_funcs", "toy_dense", "--final_eval_size", "4", *overrides,
        ])


def tensors(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(path))


def assert_bit_identical(a: Path, b: Path) -> None:
    ta, tb = tensors(a), tensors(b)
    assert ta.keys() == tb.keys()
    different = [key for key in ta if not torch.equal(ta[key], tb[key])]
    assert not different, f"{len(different)} tensors differ, e.g. {different[:3]}"


def step_logs(out: Path) -> list[dict]:
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    return [{key: h.get(key) for key in ("step", *LOGGED_PER_STEP)} for h in history if "loss" in h]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def resume_runs(recipe: Path, model_dir, puzzles, base: Path, resume_arg, *extra: str) -> SimpleNamespace:
    """An uninterrupted run, and a run that crashes in step 3 then resumes (``resume_arg(out)``) into its folder."""
    full, resumed = base / "uninterrupted", base / "resumed"
    assert train(recipe, model_dir, puzzles, full, *extra) == 0
    with pytest.raises(SimulatedCrash):
        train(recipe, model_dir, puzzles, resumed, *extra, reward=toy_reward(crash_in_call=3))
    assert (resumed / "checkpoint-2").is_dir() and not (resumed / "checkpoint-4").exists()
    assert not (resumed / "trainer_state.json").exists() and not (resumed / "eval").exists()
    before = {p.relative_to(resumed): digest(p) for p in resumed.rglob("*") if p.is_file()}
    reward = toy_reward()
    code = train(recipe, model_dir, puzzles, resumed, *extra, "--resume_from_checkpoint", resume_arg(resumed),
                 reward=reward)
    assert code == 0
    return SimpleNamespace(full=full, resumed=resumed, before=before, resumed_steps=reward.calls)


def check_resume(runs: SimpleNamespace, weights: str) -> None:
    full, resumed = runs.full, runs.resumed
    # It resumed: only steps 3 and 4 ran (a seeded restart from scratch would also end bit-identical).
    assert runs.resumed_steps == 2
    # Bit-exact final weights, and they are not trivially equal: training moved them after checkpoint-2.
    assert_bit_identical(full / weights, resumed / weights)
    at_step_2 = tensors(full / "checkpoint-2" / weights)
    assert any(not torch.equal(t, at_step_2[key]) for key, t in tensors(full / weights).items())
    # The same log history, step by step (the resumed run's steps 1-2 come from checkpoint-2's state).
    logs = step_logs(full)
    assert [h["step"] for h in logs] == [1, 2, 3, 4]
    assert any(h["loss"] != 0 or h["grad_norm"] for h in logs), "the toy reward should give non-zero gradients"
    assert step_logs(resumed) == logs
    # The resumed run finishes like any run: final evaluation (the same, greedy, same weights) and model card.
    assert json.loads((resumed / "eval" / "eval.json").read_text())["results"] == json.loads(
        (full / "eval" / "eval.json").read_text())["results"]
    card = (resumed / "README.md").read_text()
    assert "No final evaluation was run." not in card and "Held-out evaluation" in card
    info = json.loads((resumed / "run_info.json").read_text())
    assert Path(info["resumed_from"]) == resumed / "checkpoint-2"
    # Nothing the crashed run wrote is lost; all but the two files every run rewrites are unchanged.
    # (and the output directory's lock, which names its current owner: runs.guard.LOCK_FILE)
    rewritten = {Path("run_info.json"), Path("README.md"), Path(LOCK_FILE)}
    for path, sha in runs.before.items():
        assert (resumed / path).is_file(), f"{path} was lost"
        if path not in rewritten and path.parts[0] != "runs":  # an open event file may still be flushed
            assert digest(resumed / path) == sha, f"{path} was rewritten"
    assert (resumed / "checkpoint-2").is_dir() and (resumed / "checkpoint-4").is_dir()


def free_port() -> int:
    """A TCP port free now for a launch's rendezvous, below the kernel's ephemeral range (32768-60999 on Linux).

    A port the kernel picks (``bind(0)``) comes from the range it also hands to every outgoing connection, gloo's
    between the ranks of another test among them, so it could be taken before the launcher binds it. Ports here are
    never handed out by the kernel; one is picked at random (its own generator: tests seed the global one) above
    the local SLURM's daemons and its jobs' rendezvous ports (20000 + job id)."""
    rng = random.Random()
    for _ in range(100):
        port = rng.randrange(24000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free TCP port in 24000-32000")


ERROR = "countdown-rl train: error: "


def one_error(capsys) -> str:
    """The one ``countdown-rl train: error:`` line on stderr (no traceback), without its prefix."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith(ERROR)]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0][len(ERROR):]


def status(out: Path) -> dict:
    """The run's status in ``run_info.json``."""
    return json.loads((out / "run_info.json").read_text())["status"]


# Two gloo processes on the CPU: `accelerate launch --cpu --num_processes 2` silently starts ONE process;
# --multi_gpu with the recipe's use_cpu (gloo) starts two.
DDP_LAUNCH = ["--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no",
              "--dynamo_backend", "no"]
# FSDP2 over two gloo processes through the shipped config (its mixed precision bf16 is the GPU's; fp32 here).
FSDP2_LAUNCH = ["--config_file", str(ROOT / "accelerate_configs" / "fsdp.yaml"), "--num_processes", "2",
                "--mixed_precision", "no"]


def accelerate_launch(launcher: list[str], script: list[str], *train_args: str, timeout: int = 400):
    """``accelerate launch <launcher> <script> <train_args>`` as a process on a free port, offline; its result."""
    command = [sys.executable, "-m", "accelerate.commands.launch", *launcher, "--main_process_port", str(free_port()),
               *script, *train_args]
    return run_or_dump(command, hang_guard(timeout), cwd=ROOT, env=offline_env())

