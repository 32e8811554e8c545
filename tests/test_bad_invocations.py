"""Every user-facing command errs in one line: a table of bad invocations run as real subprocesses.

Each case runs ``python -m countdown_rl.cli COMMAND ...`` in a scratch folder holding a tiny model, puzzles, a
recipe and a few bad files, offline (``HF_HUB_OFFLINE=1``: no Hub request can leave). For each one:

1. the exit code is not 0;
2. stderr has exactly one error line, ``countdown-rl COMMAND: error: ...``, naming the thing (the words given
   below), and it is the last line; no traceback, no usage block, no other line that says "error". (Lines before
   it may only be ``countdown-rl train``'s INFO log records, for errors found after the data is read);
3. nothing was written or deleted: the scratch folder's listing, sizes and mtimes are the same before and after.

The cases run four at a time (a ``train`` process spends ~5-8 s CPU importing torch and TRL; the others are
fast). The output-directory guard and the Hub checks of ``train`` are tested in process in test_reliability.py.
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "recipes" / "smoke" / "cpu_tiny.yaml"
TRAIN = ["train", "--config", "recipe.yaml", "--model_name_or_path", "model", "--dataset_name", "puzzles.jsonl",
         "--output_dir", "out"]
EVAL = ["eval", "--model", "model", "--dataset", "puzzles.jsonl", "--test-size", "8"]

CASES = {
    # id: (argv, words the error line must contain)
    "train-missing-recipe": (["train", "--config", "nope.yaml"], ["nope.yaml"]),
    "train-recipe-is-a-folder": (["train", "--config", "folder"], ["folder"]),
    "train-bad-yaml": (["train", "--config", "bad.yaml"], ["bad.yaml", "YAML"]),
    "train-unknown-key-in-yaml": (["train", "--config", "unknown_key.yaml"], ["unknown_key.yaml", "no_such_key"]),
    "train-wrongly-typed-key": ([*TRAIN, "--learning_rate", "fast"], ["learning_rate", "command line"]),
    "train-zero-budget": ([*TRAIN, "--max_completion_length", "0"], ["max_completion_length"]),
    "train-negative-max-steps": ([*TRAIN, "--max_steps", "-5"], ["max_steps", "-5"]),
    "train-zero-batch": ([*TRAIN, "--per_device_train_batch_size", "0"], ["per_device_train_batch_size"]),
    "train-group-does-not-divide-batch": ([*TRAIN, "--per_device_train_batch_size", "6"],
                                          ["generation_batch_size", "num_generations"]),
    "train-hub-model-offline": ([*TRAIN, "--model_name_or_path", "nobody/no-such-model"],
                                ["model_name_or_path", "nobody/no-such-model", "offline"]),
    "train-model-is-a-file": ([*TRAIN, "--model_name_or_path", "a_file"], ["model_name_or_path", "a_file"]),
    "train-hub-dataset-offline": ([*TRAIN, "--dataset_name", "nobody/no-such-dataset"], ["nobody/no-such-dataset"]),
    "train-lora-target-matches-nothing": ([*TRAIN, "--use_peft", "true", "--lora_target_modules", "no_such_proj"],
                                          ["no_such_proj", "model"]),
    "train-missing-checkpoint": ([*TRAIN, "--resume_from_checkpoint", "no-run/checkpoint-3"],
                                 ["resume_from_checkpoint", "no-run/checkpoint-3"]),
    "train-budget-schedule-not-from-step-0": ([*TRAIN, "--budget_schedule", "5:16"],
                                              ["budget_schedule", "step 0", "[5, 16]", "command-line"]),
    "train-empty-after-filtering": ([*TRAIN, "--dataset_name", "invalid.jsonl", "--on_invalid_rows", "drop"],
                                    ["invalid.jsonl", "no valid rows"]),
    "eval-missing-model": (["eval", "--model", "./no-model"], ["--model", "no-model"]),
    "eval-model-is-a-file": (["eval", "--model", "a_file"], ["--model", "a_file", "not a folder"]),
    "eval-hub-model-offline": (["eval", "--model", "nobody/no-such-model"], ["nobody/no-such-model", "offline"]),
    "eval-zero-budget": ([*EVAL, "--max_tokens", "0"], ["--max_tokens"]),
    "eval-wrongly-typed-budget": ([*EVAL, "--max_tokens", "many"], ["--max_tokens", "many"]),
    "eval-missing-dataset": ([*EVAL, "--dataset", "nope.jsonl"], ["nope.jsonl"]),
    "eval-empty-after-filtering": ([*EVAL, "--dataset", "invalid.jsonl", "--on-invalid-rows", "drop"],
                                   ["invalid.jsonl", "no valid rows"]),
    "eval-output-dir-is-a-file": ([*EVAL, "--output-dir", "a_file"], ["--output_dir", "a_file"]),
    "report-missing-run": (["report", "no-run"], ["no-run"]),
    "report-run-is-a-file": (["report", "a_file"], ["a_file"]),
    "report-folder-without-a-run": (["report", "folder"], ["folder"]),
    "generate-zero": (["generate", "0", "--out", "new.jsonl"], ["n must be positive"]),
    "generate-out-is-a-folder": (["generate", "5", "--out", "folder"], ["--out", "folder"]),
    "verify-wrongly-typed-target": (["verify", "--nums", "1", "2", "--target", "x", "1+2"], ["--target", "'x'"]),
    "verify-missing-nums": (["verify", "--target", "3", "1+2"], ["--nums"]),
    "demo-output-dir-is-a-file": (["demo", "--quick", "--output-dir", "a_file"], ["a_file", "not a folder"]),
    "demo-zero-steps": (["demo", "--quick", "--grpo-steps", "0"], ["--grpo_steps"]),
    "push-missing-run": (["push", "no-run", "--hub-model-id", "me/x"], ["no-run"]),
}


def build_scratch(root: Path, model_dir: Path) -> Path:
    """The folder every case runs in: a tiny model, puzzles, a recipe, and the bad files the cases name."""
    from countdown_rl.tasks.countdown.puzzles import generate_countdown
    from countdown_rl.data.jsonl import write_jsonl

    shutil.copytree(model_dir, root / "model")
    write_jsonl(generate_countdown(64, seed=0), root / "puzzles.jsonl")
    shutil.copy(SMOKE, root / "recipe.yaml")
    (root / "bad.yaml").write_text(SMOKE.read_text().replace("seed: 42\n", "seed: [42\n"))
    (root / "unknown_key.yaml").write_text(SMOKE.read_text() + "no_such_key: 1\n")
    (root / "invalid.jsonl").write_text('{"nums": "x", "target": 1}\n' * 3)
    (root / "a_file").write_text("not a model\n")
    (root / "folder").mkdir()
    return root


@pytest.fixture(scope="module")
def scratch(tmp_path_factory, tiny_model_dir):
    return build_scratch(tmp_path_factory.mktemp("scratch"), tiny_model_dir)


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.pop("HF_TOKEN", None)
    return subprocess.run([sys.executable, "-m", "countdown_rl.cli", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def problems(case: str, done: subprocess.CompletedProcess) -> list[str]:
    """What is wrong with how ``case`` failed (empty: it failed in one line, as it should)."""
    argv, words = CASES[case]
    prefix = f"countdown-rl {argv[0]}: error: "
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    found = []
    if done.returncode == 0:
        found.append("exit code 0")
    errors = [line for line in lines if "error" in line.lower() or "Traceback" in line or "usage:" in line]
    if len(errors) != 1 or not errors[0].startswith(prefix):
        found.append(f"{len(errors)} error lines: {errors[:3]}")
    elif lines[-1] != errors[0]:
        found.append(f"the error is not the last line: {lines[-1]!r}")
    elif missing := [w for w in words if w not in errors[0]]:
        found.append(f"{missing} not in {errors[0]!r}")
    return found


def test_every_bad_invocation_is_one_line_and_touches_nothing(scratch):
    assert len(CASES) >= 25
    before = snapshot(scratch)
    # Each case its own output_dir: concurrent jobs on one folder are refused (runs.guard), which is not the point here
    def own_output_dir(case):
        return [f"out-{case}" if arg == "out" else arg for arg in CASES[case][0]]

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(CASES, pool.map(lambda case: run(own_output_dir(case), scratch), CASES)))
    failures = {case: found for case, done in results.items() if (found := problems(case, done))}
    assert not failures, "\n".join(f"{case}: {found}\n{results[case].stderr[-1500:]}"
                                   for case, found in failures.items())
    assert snapshot(scratch) == before, "a bad invocation wrote or deleted something"
