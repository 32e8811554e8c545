"""``countdown-rl eval`` (countdown_rl.commands.evaluate): end to end on the tiny Qwen3, a LoRA adapter, the one-line
errors before any model loads, the default output folder. Through vLLM: tests/commands/test_evaluate_vllm.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from countdown_rl.commands import evaluate as eval_cli
from countdown_rl.data.jsonl import write_jsonl
from countdown_rl.data.prepare import prepare_dataset
from countdown_rl.evaluation.eval_files import read_eval, read_samples
from countdown_rl.evaluation.scoring import evaluate_rows
from countdown_rl.tasks import get_task
from countdown_rl.tasks.countdown.puzzles import generate_countdown


@pytest.fixture()
def dataset(tmp_path):
    path = tmp_path / "puzzles.jsonl"
    write_jsonl(generate_countdown(30, seed=7), path)
    return path


def _common(dataset, out) -> list[str]:
    return ["--dataset_name", str(dataset), "--test-size", "4", "--output-dir", str(out), "--no-progress",
            "--batch-size", "4"]


def test_eval_cli_end_to_end(tiny_model_dir, dataset, tmp_path, capsys):
    out = tmp_path / "eval"
    argv = ["--model_name_or_path", str(tiny_model_dir), "--max_completion_length", "8", "16", *_common(dataset, out)]
    assert eval_cli.main(argv) == 0
    data = read_eval(out)
    assert [r.max_tokens for r in data["results"]] == [8, 16]
    assert all(r.num_rows == 4 for r in data["results"])
    assert data["meta"]["split_seed"] == 42 and data["meta"]["backend"] == "transformers"
    samples = read_samples(out)
    assert len(samples) == 8 and {r["max_tokens"] for r in samples} == {8, 16}
    # Exactly the held-out split of training: same dedupe, same seed.
    _, test, _ = prepare_dataset(get_task("countdown"), str(dataset), test_size=4, seed=42)
    assert [(r["nums"], r["target"]) for r in samples[:4]] == [(r["nums"], r["target"]) for r in test]
    table = (out / "eval.md").read_text()
    assert "| 8 |" in table and "| 16 |" in table
    printed = capsys.readouterr().out
    assert "| max tokens |" in printed and str(out / "eval.json") in printed


def test_eval_cli_lora_adapter(tiny_model_dir, dataset, tmp_path):
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    config = LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    adapter = tmp_path / "adapter"
    get_peft_model(base, config).save_pretrained(adapter)  # no tokenizer saved: it comes from the base
    assert (adapter / "adapter_config.json").is_file() and not (adapter / "tokenizer.json").exists()

    merged, tokenizer = eval_cli.load_evaluated_model(str(adapter))
    assert not isinstance(merged, PeftModel)
    # Merged weights generate what base + adapter generate.
    unmerged = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model_dir), adapter)
    puzzles = generate_countdown(2, seed=4)
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    kwargs = dict(max_tokens=6, show_progress=False)
    assert evaluate_rows(merged, tokenizer, puzzles, **kwargs)[1] == evaluate_rows(unmerged, tok, puzzles,
                                                                                         **kwargs)[1]

    out = tmp_path / "adapter_eval"
    argv = ["--model_name_or_path", str(adapter), "--max-completion-length", "4", *_common(dataset, out)]
    assert eval_cli.main(argv) == 0
    assert read_eval(out)["results"][0].num_rows == 4


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--model_name_or_path", "./no/such/model"], "no such folder"),
        (["--max_completion_length", "0"], "budgets must be positive"),
        (["--num_samples", "2"], "needs --temperature > 0"),
        (["--num-rows", "0"], "must be positive"),
        (["--dataset_name", "EMPTY"], "no rows"),
        (["--vllm_enforce_eager", "--backend", "transformers"], "--vllm_enforce_eager: only for an engine of"),
    ],
)
def test_eval_cli_errors_before_loading_a_model(extra, message, tiny_model_dir, dataset, tmp_path, monkeypatch,
                                                capsys):
    def no_loading(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(eval_cli, "load_evaluated_model", no_loading)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    argv = ["--model_name_or_path", str(tiny_model_dir), *_common(dataset, tmp_path / "out"), *extra]
    argv = [str(empty) if a == "EMPTY" else a for a in argv]
    assert eval_cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("countdown-rl eval: error:") and message in err and "\n" not in err
    assert not (tmp_path / "out").exists()


def test_eval_dispatch_and_default_output_dir(tiny_model_dir):
    from countdown_rl.cli import main as cli_main

    assert cli_main(["eval", "--model_name_or_path", "/no/such/dir"]) == 2
    assert eval_cli.default_output_dir(str(tiny_model_dir)) == Path(tiny_model_dir) / "eval"
    assert eval_cli.default_output_dir("Qwen/Qwen3-1.7B") == Path("eval_results/Qwen__Qwen3-1.7B")


def test_eval_all_rows_scores_every_row_of_the_file_as_given(tiny_model_dir, tmp_path):
    """A file of puzzles scored whole: every row in the file's order, a repeated puzzle too (no dedupe, no
    hold-out), where a held-out split of the same size is refused (it must leave a training row)."""
    rows = generate_countdown(6, seed=7)
    rows.append(rows[0])
    path = tmp_path / "puzzles.jsonl"
    write_jsonl(rows, path)
    out = tmp_path / "eval"
    argv = ["--model_name_or_path", str(tiny_model_dir), "--dataset_name", str(path), "--max_completion_length", "2",
            "--output_dir", str(out), "--no_progress"]
    assert eval_cli.main([*argv, "--all_rows"]) == 0
    data = read_eval(out)
    assert data["results"][0].num_rows == 7
    assert data["meta"]["split_method"] == "all rows" and data["meta"]["test_size"] is None
    assert [(r["nums"], r["target"]) for r in read_samples(out)] == [(r["nums"], r["target"]) for r in rows]
    assert eval_cli.main([*argv, "--test_size", "6", "--output_dir", str(tmp_path / "split")]) == 2


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--test_size", "1024"], "--test_size"),  # the default value, given: still refused
        (["--eval_dataset_split", "train"], "--eval_dataset_split"),
        (["--split-method", "tinyzero", "--split_seed", "3"], "--split_method, --split_seed"),
    ],
)
def test_eval_all_rows_refuses_a_split_flag_in_one_line(extra, named, tiny_model_dir, dataset, tmp_path, capsys):
    argv = ["--model_name_or_path", str(tiny_model_dir), "--dataset_name", str(dataset), "--all_rows", *extra,
            "--output_dir", str(tmp_path / "out")]
    assert eval_cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"countdown-rl eval: error: --all_rows scores every row, with no held-out split: drop {named}"
    assert not (tmp_path / "out").exists()
