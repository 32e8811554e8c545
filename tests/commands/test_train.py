"""``countdown-rl train`` (``countdown_rl.commands.train.main``) end to end on the CPU smoke recipes.

1. Errors: everything wrong in a recipe is ONE line on stderr (``countdown-rl train: error: ...``, exit code 2, no
   traceback) before anything is loaded; a bad dataset is one line before the model is loaded. The proof is a
   tripwire on the external loaders (``AutoModelForCausalLM`` / ``AutoTokenizer.from_pretrained``) and, for recipe
   errors, a dataset path that does not exist (loading it would report that instead). Our own code is not mocked.
2. Resume: a run that crashes in step 3 (its reward function raises) and is resumed from checkpoint-2 ends
   bit-identical to an uninterrupted run (weights and log history), for full fine-tuning and LoRA, and keeps what
   the crashed run wrote (checkpoint, completions, TensorBoard events); the final evaluation and card are written.
3. LoRA: the output is an adapter; ``merge_adapter`` writes ``merged/``, a full model whose logits equal
   base + adapter.
4. Hub: ``push_to_hub`` / ``hub_model_id`` / ``hub_strategy`` with the Hub cut at the client boundary.
5. Two processes: ``accelerate launch --multi_gpu --num_processes 2`` on the CPU (gloo).
6. ``report_to: tensorboard`` and ``log_completions: true`` on the CPU (folded into the resume runs).

A random tiny model scores 0 on the Countdown reward, so every advantage and gradient is zero and its weights
never move: the training runs here (tests/helpers/train_runs.py) add a dense toy reward to the registry
(``toy_dense``) so that resuming is tested on weights that change. Torch runs on one thread here: on a shared 2-core
machine two threads are many times slower.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from countdown_rl.commands.train import main
from countdown_rl.generation.vllm_import import vllm_left_out
from countdown_rl.runs.reliability import resolve_resume
from countdown_rl.training.recipe import parse_args
from tests.helpers.train_runs import (
    DDP_LAUNCH,
    SMOKE,
    SMOKE_LORA,
    accelerate_launch,
    assert_bit_identical,
    check_resume,
    resume_runs,
    tensors,
    train,
)

ERROR_PREFIX = "countdown-rl train: error: "

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: tiny models, one thread


# ---------------------------------------------------------------------------------------------------------------
# 1. Errors before loading
# ---------------------------------------------------------------------------------------------------------------


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith(ERROR_PREFIX)]
    assert len(lines) == 1, err
    return lines[0][len(ERROR_PREFIX):]


def recipe_copy(tmp_path, old: str, new: str) -> Path:
    text = SMOKE.read_text()
    assert old in text
    path = tmp_path / "edited.yaml"
    path.write_text(text.replace(old, new))
    return path


RECIPE_ERRORS = {
    # id: (recipe edit (old, new) or None, command-line overrides, words the one line must contain)
    "unknown-key-in-yaml": (("seed: 42\n", "seed: 42\nnot_a_real_key: 3\n"), [], ["not_a_real_key", "edited.yaml"]),
    "key-trl-removed-in-yaml": (("seed: 42\n", "seed: 42\nmax_prompt_length: 256\n"), [],
                                ["max_prompt_length", "edited.yaml"]),
    "invalid-yaml": (("seed: 42\n", "seed: [42\n"), [], ["edited.yaml", "YAML"]),
    "unknown-key-on-command-line": (None, ["--not_a_real_key", "3"], ["not_a_real_key", "command line"]),
    "batch-not-divisible-by-group": (None, ["--per_device_train_batch_size", "6"],
                                     ["generation_batch_size", "num_generations"]),
    "max-completion-length-zero": (None, ["--max_completion_length", "0"], ["max_completion_length"]),
    "max-completion-length-negative-in-yaml": (("max_completion_length: 16", "max_completion_length: -8"), [],
                                               ["max_completion_length"]),
    "max-completion-length-not-an-int": (None, ["--max_completion_length", "many"],
                                         ["max_completion_length", "command line"]),
    "max-steps-negative": (None, ["--max_steps", "-5"], ["max_steps", "-5"]),
    "batch-zero": (None, ["--per_device_train_batch_size", "0"], ["per_device_train_batch_size"]),
    "budget-schedule-not-from-step-0": (None, ["--budget_schedule", "5:16"],
                                        ["budget_schedule", "step 0", "[5, 16]", "command-line"]),
    "bad-choice-in-yaml": (("algorithm: grpo", "algorithm: ppo"), [], ["algorithm", "edited.yaml"]),
    "unknown-reward": (None, ["--reward_funcs", "countdown", "no_such_reward"], ["no_such_reward", "countdown"]),
    "reward-funcs-not-a-list": (("reward_funcs:\n  - countdown", "reward_funcs: countdown"), [], ["reward_funcs"]),
    "reward-weights-mismatch": (None, ["--reward_weights", "1.0", "0.5"], ["reward_weights"]),
    "merge-adapter-without-peft": (None, ["--merge_adapter", "true"], ["merge_adapter", "use_peft"]),
    "resume-without-checkpoint": (None, ["--resume_from_checkpoint", "true"], ["resume_from_checkpoint"]),
    "resume-from-missing-path": (None, ["--resume_from_checkpoint", "/no/such/checkpoint-2"],
                                 ["resume_from_checkpoint", "/no/such/checkpoint-2"]),
    # the task's evaluation computes eval_accuracy etc.; TRL's eval_reward only with trl_eval_metrics
    "best-metric-never-computed": (None, ["--metric_for_best_model", "eval_reward"],
                                   ["metric_for_best_model", "eval_reward", "trl_eval_metrics"]),
}


@pytest.mark.parametrize("case", list(RECIPE_ERRORS))
def test_a_recipe_error_is_one_line_before_anything_is_loaded(case, tmp_path, capsys, no_loading):
    edit, overrides, words = RECIPE_ERRORS[case]
    recipe = recipe_copy(tmp_path, *edit) if edit else SMOKE
    code = main([
        "--config", str(recipe), "--model_name_or_path", str(tmp_path / "no-model"),
        # A dataset that does not exist: had main() loaded it, that would be the error reported.
        "--dataset_name", str(tmp_path / "no-data.jsonl"), "--output_dir", str(tmp_path / "out"), *overrides,
    ])
    assert code == 2
    message = one_error_line(capsys)
    for word in words:
        assert word in message, message
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_use_vllm_without_vllm_says_how_to_install_it(tmp_path, capsys, no_loading):
    code = main(["--config", str(SMOKE), "--use_vllm", "true", "--dataset_name", str(tmp_path / "no-data.jsonl"),
                 "--output_dir", str(tmp_path / "out")])
    assert code == 2
    message = one_error_line(capsys)
    assert "use_vllm" in message and "pip install -e '.[vllm]'" in message


@pytest.mark.parametrize("name", ["nope.yaml", "folder"])
def test_a_recipe_that_is_no_file_is_one_line(name, tmp_path, capsys, no_loading):
    (tmp_path / "folder").mkdir()
    assert main(["--config", str(tmp_path / name)]) == 2
    assert str(tmp_path / name) in one_error_line(capsys)


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_dataset_errors_are_one_line_before_the_model_is_loaded(tmp_path, capsys, no_loading):
    good = [{"nums": [1, 2, 3], "target": 6 + i} for i in range(40)]
    cases = {
        "missing columns": (write_rows(tmp_path / "columns.jsonl", [{"numbers": [1, 2], "goal": 3}] * 40),
                            ["columns.jsonl", "missing column", "nums", "target"]),
        "a bad row": (write_rows(tmp_path / "rows.jsonl", good[:7] + [{"nums": [1, 2], "target": "x"}] + good[7:]),
                      ["rows.jsonl", "row 7"]),
        "no such file": (tmp_path / "absent.jsonl", ["absent.jsonl"]),
        "a Hub id, offline": ("nobody/no-such-countdown-dataset", ["nobody/no-such-countdown-dataset"]),
    }
    for name, (dataset, words) in cases.items():
        code = main(["--config", str(SMOKE), "--dataset_name", str(dataset), "--output_dir", str(tmp_path / "out"),
                     "--model_name_or_path", str(tmp_path / "no-model")])
        assert code == 2, name
        message = one_error_line(capsys)
        assert all(word in message for word in words), (name, message)


def test_model_errors_are_one_line_before_training(tmp_path, tiny_model_dir, puzzles, capsys):
    """A model that is a file or an offline Hub id, LoRA targets the model lacks, a dataset no row of which is valid
    (``on_invalid_rows: drop``): one line each, nothing trained or written. (As processes: the slow tier's
    tests/commands/test_bad_invocations.py.)"""
    a_file = tmp_path / "a_file"
    a_file.write_text("not a model\n")
    invalid = write_rows(tmp_path / "invalid.jsonl", [{"nums": "x", "target": 1}] * 3)
    cases = {
        "model is a file": (["--model_name_or_path", str(a_file)], ["model_name_or_path", str(a_file)]),
        "Hub model, offline": (["--model_name_or_path", "nobody/no-such-model"],
                               ["model_name_or_path", "nobody/no-such-model", "offline"]),
        "LoRA target matches nothing": (["--use_peft", "true", "--lora_target_modules", "no_such_proj"],
                                        ["no_such_proj", "model"]),
        "no valid row left": (["--dataset_name", str(invalid), "--on_invalid_rows", "drop"],
                              ["invalid.jsonl", "no valid rows"]),
    }
    for name, (overrides, words) in cases.items():
        out = tmp_path / "out"
        code = main(["--config", str(SMOKE), "--model_name_or_path", str(tiny_model_dir), "--dataset_name",
                     str(puzzles), "--output_dir", str(out), *overrides])
        assert code == 2, name
        message = one_error_line(capsys)
        assert all(word in message for word in words), (name, message)
        assert not (out / "model.safetensors").exists() and not list(out.glob("checkpoint-*")), name


def test_resume_from_checkpoint_is_parsed_as_a_string_and_resolved(tmp_path):
    out = tmp_path / "out"
    for step in (2, 10, 4):  # the least a checkpoint without a manifest needs: trainer state and weights
        (out / f"checkpoint-{step}").mkdir(parents=True)
        (out / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
        (out / f"checkpoint-{step}" / "model.safetensors").write_bytes(b"")
    _, training_args, _ = parse_args(["--config", str(SMOKE), "--output_dir", str(out),
                                      "--resume_from_checkpoint", "true"])
    assert training_args.resume_from_checkpoint == "true"  # TrainingArguments types it `str | None`
    assert resolve_resume(False, training_args.resume_from_checkpoint, str(out)) == str(out / "checkpoint-10")
    assert resolve_resume(False, True, str(out)) == str(out / "checkpoint-10")  # YAML `true` is a bool
    assert resolve_resume(False, str(out / "checkpoint-2"), str(out)) == str(out / "checkpoint-2")
    for off in (None, False, "false"):
        assert resolve_resume(False, off, str(out)) is None


# ---------------------------------------------------------------------------------------------------------------
# Training runs (in process; a few seconds each)
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def full_runs(tiny_model_dir, puzzles, tmp_path_factory):
    """Full fine-tuning, resumed with ``--resume_from_checkpoint true``; TensorBoard and completion logs on."""
    return resume_runs(SMOKE, tiny_model_dir, puzzles, tmp_path_factory.mktemp("full"), lambda out: "true",
                       "--report_to", "tensorboard", "--log_completions", "true")


@pytest.fixture(scope="module")
def lora_runs(tiny_model_dir, puzzles, tmp_path_factory):
    """LoRA (the recipe merges the adapter), resumed from an explicit checkpoint path."""
    return resume_runs(SMOKE_LORA, tiny_model_dir, puzzles, tmp_path_factory.mktemp("lora"),
                       lambda out: str(out / "checkpoint-2"))


@pytest.mark.comparison
def test_full_fine_tuning_resumes_bit_exactly(full_runs):
    check_resume(full_runs, "model.safetensors")
    # main() called inside this process (not its entry point) left vLLM importable: countdown_rl.generation.vllm_import
    assert not vllm_left_out()
    # the run record says which log-prob pass and rollouts ran (the smoke recipe leaves both at their defaults)
    extra = json.loads((full_runs.full / "run_info.json").read_text())["extra"]
    assert (extra["log_prob_pass"], extra["rollouts"]) == ("prompt-once", "transformers")  # TRL's plain generate


@pytest.mark.comparison
def test_lora_resumes_bit_exactly(lora_runs):
    check_resume(lora_runs, "adapter_model.safetensors")


def test_tensorboard_and_completion_logs_on_cpu(full_runs):
    for out in (full_runs.full, full_runs.resumed):
        events = list((out / "runs").rglob("events.out.tfevents.*"))
        assert events and all(e.stat().st_size > 0 for e in events)
        steps = sorted(p.name for p in (out / "completions").glob("completions_*.parquet"))
        assert steps == [f"completions_{s:05d}.parquet" for s in (1, 2, 3, 4)]
    # the crashed run's event file is kept next to the resumed run's
    assert len(list((full_runs.resumed / "runs").rglob("events.out.tfevents.*"))) == 2

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    scalars = set()
    for path in (full_runs.full / "runs").rglob("events.out.tfevents.*"):
        accumulator = EventAccumulator(str(path))
        accumulator.Reload()
        scalars |= set(accumulator.Tags()["scalars"])
    assert {"train/loss", "train/reward", "train/rewards/toy_dense_reward/mean"} <= scalars


# ---------------------------------------------------------------------------------------------------------------
# 3. LoRA adapter and merge
# ---------------------------------------------------------------------------------------------------------------


def test_lora_saves_an_adapter_only(lora_runs):
    out = lora_runs.full
    assert (out / "adapter_config.json").is_file() and (out / "adapter_model.safetensors").is_file()
    assert not list(out.glob("model*.safetensors")), "full model weights next to the adapter"
    adapter = tensors(out / "adapter_model.safetensors")
    assert adapter and all("lora_" in key for key in adapter)
    assert any(key.endswith("lora_B.weight") and t.abs().max() > 0 for key, t in adapter.items()), "untrained"
    assert json.loads((out / "adapter_config.json").read_text())["base_model_name_or_path"]


@pytest.mark.comparison
def test_merged_model_equals_base_plus_adapter(lora_runs, tiny_model_dir):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = lora_runs.full
    merged_dir = out / "merged"
    assert (merged_dir / "config.json").is_file() and (merged_dir / "model.safetensors").is_file()
    assert not (merged_dir / "adapter_config.json").exists()
    # merge_and_unload ran on the unwrapped PeftModel: plain Qwen3 keys, no LoRA or PEFT wrapper prefixes
    keys = tensors(merged_dir / "model.safetensors").keys()
    assert not [k for k in keys if "lora" in k or k.startswith("base_model.")]
    assert (merged_dir / "tokenizer_config.json").is_file()

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    ids = tokenizer(["Using the numbers [3, 7, 25], create an equation that equals 46."], return_tensors="pt")
    with torch.no_grad():
        base = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
        base_logits = base(**ids).logits
        adapted = PeftModel.from_pretrained(base, str(out)).eval()
        adapted_logits = adapted(**ids).logits
        merged_logits = AutoModelForCausalLM.from_pretrained(merged_dir).eval()(**ids).logits
    torch.testing.assert_close(merged_logits, adapted_logits, rtol=1e-4, atol=1e-5)
    assert not torch.allclose(merged_logits, base_logits, atol=1e-4), "the adapter changes nothing"


# ---------------------------------------------------------------------------------------------------------------
# 4. Hub
# ---------------------------------------------------------------------------------------------------------------


def test_push_to_hub_uploads_the_adapter_and_our_card(tiny_model_dir, puzzles, tmp_path, monkeypatch):
    """push_to_hub, hub_model_id and hub_strategy as TRL/transformers implement them; the Hub is cut at the client
    boundary: ``huggingface_hub.HfApi.create_repo`` and ``upload_folder`` (the two calls transformers' Trainer makes:
    init_hf_repo, _push_from_checkpoint, push_to_hub) record their arguments and a copy of what would be uploaded.
    Any other Hub call fails (HF_HUB_OFFLINE=1); the checks made before loading see the client's constants
    ``HF_HUB_OFFLINE`` set to False and a made-up ``HF_TOKEN``.
    """
    from huggingface_hub import HfApi, constants
    from huggingface_hub.utils import filter_repo_objects

    repos, uploads = [], []

    def create_repo(self, repo_id, **kwargs):
        repos.append((repo_id, kwargs))
        return SimpleNamespace(repo_id=repo_id)

    def upload_folder(self, *, repo_id, folder_path, path_in_repo=None, commit_message=None, run_as_future=False,
                      ignore_patterns=None, **kwargs):
        folder = Path(folder_path)
        files = list(filter_repo_objects(
            [p.relative_to(folder).as_posix() for p in sorted(folder.rglob("*")) if p.is_file()],
            ignore_patterns=ignore_patterns,
        ))
        copy = tmp_path / "uploads" / str(len(uploads))
        for name in files:
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(folder / name, copy / name)
        uploads.append(SimpleNamespace(repo_id=repo_id, folder=folder, path_in_repo=path_in_repo,
                                       message=commit_message, files=set(files), copy=copy))
        if not run_as_future:
            return SimpleNamespace(commit_url=f"https://huggingface.co/{repo_id}/commit/0")
        future = concurrent.futures.Future()
        future.set_result(None)
        return future

    monkeypatch.setattr(HfApi, "create_repo", create_repo)
    monkeypatch.setattr(HfApi, "upload_folder", upload_folder)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")

    out = tmp_path / "out"
    code = train(SMOKE_LORA, tiny_model_dir, puzzles, out, "--max_steps", "2", "--push_to_hub", "true",
                 "--hub_model_id", "someone/countdown-tiny-lora", "--hub_strategy", "checkpoint")
    assert code == 0

    assert [repo for repo, _ in repos] == ["someone/countdown-tiny-lora"]
    assert repos[0][1].get("exist_ok") is True
    assert uploads and {u.repo_id for u in uploads} == {"someone/countdown-tiny-lora"}
    # hub_strategy "checkpoint": each save pushes output_dir and the checkpoint as last-checkpoint/
    checkpoint_pushes = [u for u in uploads if u.path_in_repo == "last-checkpoint"]
    assert [u.folder.name for u in checkpoint_pushes] == ["checkpoint-2"]
    assert {"adapter_model.safetensors", "optimizer.pt", "trainer_state.json"} <= checkpoint_pushes[0].files

    # one commit per save and one at the end: no extra "Model save" commit (save_model's own push) in between
    assert [u.message for u in uploads if u.path_in_repo is None] == ["Training in progress, step 2",
                                                                        "End of training"]
    final = uploads[-1]
    assert final.folder == out and final.path_in_repo is None and final.message == "End of training"
    assert {"README.md", "adapter_config.json", "adapter_model.safetensors", "tokenizer.json"} <= final.files
    assert not [f for f in final.files if f.startswith(("checkpoint-", "merged/")) or f.startswith("model")]
    # the uploaded adapter is the trained one (the merge, which empties it in place, comes after the push)
    assert_bit_identical(final.copy / "adapter_model.safetensors", out / "adapter_model.safetensors")
    assert tensors(final.copy / "adapter_model.safetensors")
    assert (out / "merged" / "model.safetensors").is_file()

    card = (final.copy / "README.md").read_text()
    front = card.split("---")[1]
    assert f"base_model: {tiny_model_dir}" in front and str(puzzles) in front
    assert "- countdown-rl" in front and "- grpo" in front
    assert "| algorithm | GRPO (`grpo`) |" in card
    assert "| max completion length | 16 tokens |" in card
    assert "Held-out evaluation" in card and "4 held-out problems" in card
    assert "No final evaluation was run." not in card
    assert "|" in card.split("## Held-out evaluation")[1], "no results table"


# ---------------------------------------------------------------------------------------------------------------
# 5. Two processes on the CPU
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_two_process_cpu_launch(tiny_model_dir, puzzles, tmp_path):
    out = tmp_path / "out"
    result = accelerate_launch(DDP_LAUNCH, ["-m", "countdown_rl.commands.train"], "--config", str(SMOKE),
                               "--model_name_or_path", str(tiny_model_dir), "--dataset_name", str(puzzles),
                               "--output_dir", str(out), "--final_eval_size", "8", timeout=600)
    logs = result.stdout + result.stderr
    assert result.returncode == 0, logs[-5000:]

    assert "process 0 of 2" in logs and "process 1 of 2" in logs
    assert json.loads((out / "run_info.json").read_text())["num_processes"] == 2
    state = json.loads((out / "trainer_state.json").read_text())
    assert state["global_step"] == 4
    assert (out / "checkpoint-4").is_dir() and (out / "model.safetensors").is_file()
    final = json.loads((out / "eval" / "eval.json").read_text())
    assert final["meta"]["num_rows"] == 8  # both processes' shards gathered
    assert "Held-out evaluation" in (out / "README.md").read_text()
    assert "No final evaluation was run." not in (out / "README.md").read_text()
