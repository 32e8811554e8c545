"""`countdown-rl demo`: the quick version end to end, its files, its table, resuming, and the report on its run."""

import contextlib
import io
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from countdown_rl.commands import demo as demo_cli
from countdown_rl.commands import report as report_cli
from countdown_rl.demo import stages as demo
from countdown_rl.demo.config import DemoConfig, gpu_config, placement_line, quick_config
from countdown_rl.demo.puzzles import demo_puzzles
from countdown_rl.demo.run_dir import (
    DEMO_SOURCE,
    FINAL_EXPRESSION_DIR,
    FINAL_SAMPLED_DIR,
    RESULTS_FILE,
    RL_DATA_DIR,
    ZERO_SHOT_EXPRESSION_DIR,
    ZERO_SHOT_SAMPLED_DIR,
)
from countdown_rl.evaluation.eval_files import read_eval
from countdown_rl.evaluation.scoring import format_number, format_percent


def _run(argv):
    """Run ``countdown-rl demo`` in-process at one torch thread; returns (exit code, stdout). One thread, as every
    test runs: the demo's default two, in a process whose OpenMP threads spin (torch was loaded before the demo could
    make them wait passively), beside the other worker's test, made the quick runs 2-3x slower."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = demo_cli.main([*argv, "--num_threads", "1"])
    return code, out.getvalue()


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory):
    """One quick demo to 2 RL steps, then ``--resume`` to 4: (output dir, first run, resumed run)."""
    import torch

    threads = torch.get_num_threads()  # the demo sets its own: later tests keep the suite's
    out = tmp_path_factory.mktemp("demo") / "out"
    first = _run(["--quick", "--output-dir", str(out), "--max-steps", "2"])
    first_files = {
        "results": json.loads((out / "grpo" / RESULTS_FILE).read_text()),
        "trained_eval": json.loads((out / "grpo" / "eval" / "eval.json").read_text()),
    }
    resumed = _run(["--quick", "--output-dir", str(out), "--max-steps", "4", "--resume"])
    torch.set_num_threads(threads)
    return out, (first, first_files), resumed


EXPRESSION_TABLE = "held-out puzzles of the expression pool"  # the line above the demo's second table


def _table_rows(stdout: str, expression: bool = False) -> list[list[str]]:
    """The SFT and RL rows of the demo's table (``expression``: of its second table, on the expression pool)."""
    before, _, after = stdout.partition(EXPRESSION_TABLE)
    rows = [line for line in (after if expression else before).splitlines()
            if line.startswith("| SFT warm-up") or line.startswith("| after ")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def test_quick_demo_writes_every_file(quick_runs):
    out, ((code, _), _), _ = quick_runs
    assert code == 0
    run = out / "grpo"
    for path in [
        out / "base" / "config.json", out / "base" / "tokenizer.json",
        out / "sft" / "model.safetensors", out / "sft" / "run_info.json",
        *(out / "zero_shot" / name for name in ("eval.json", "eval.md", "samples.jsonl")),
        *(run / "eval" / name for name in ("eval.json", "eval.md", "samples.jsonl")),
        *(folder / name for folder in (out / ZERO_SHOT_SAMPLED_DIR, run / FINAL_SAMPLED_DIR,
                                       out / ZERO_SHOT_EXPRESSION_DIR, run / FINAL_EXPRESSION_DIR)
          for name in ("eval.json", "samples.jsonl")),
        run / "zero_shot" / "eval.json", run / "run_info.json", run / "trainer_state.json",
        run / "model.safetensors", run / "checkpoint-2" / "trainer_state.json", run / RESULTS_FILE,
    ]:
        assert path.is_file(), path
    info = json.loads((run / "run_info.json").read_text())
    assert info["algorithm"] == "grpo" and info["max_completion_length"] == DemoConfig().max_completion_length
    assert info["source"] == DEMO_SOURCE


def test_the_record_results_and_table_say_which_device_and_precision_ran(quick_runs):
    """The quick tiny demo asks for fp32 on a CPU (bf16 on a GPU): what ran is in the trainer's record
    (``extra.precision``), the demo's choice beside it (``extra.placement``), demo_results.json and the table."""
    import torch

    out, ((_, stdout), files), _ = quick_runs
    device = "cuda" if torch.cuda.is_available() else "cpu"
    info = json.loads((out / "grpo" / "run_info.json").read_text())
    results, placement = files["results"], info["extra"]["placement"]
    assert results["device"] == placement["device"] == info["extra"]["precision"]["device"] == device
    assert results["precision"] == placement and placement["rl"]["bf16"] is (device == "cuda")
    assert info["extra"]["precision"]["autocast"] == ("bf16" if device == "cuda" else None)
    assert info["recipe"]["use_cpu"] is (device == "cpu") and results["config"]["device"] == device
    assert f"held-out puzzles; trained {placement_line(placement)})" in stdout
    assert placement_line(placement).startswith(f"on {device}: RL {'bf16' if device == 'cuda' else 'fp32'}")


def test_device_cuda_without_a_gpu_is_one_line_before_anything_is_written(tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a machine without a GPU, as this one
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as stopped:
        demo_cli.main(["--quick", "--device", "cuda", "--output-dir", str(out)])
    assert stopped.value.code == 2 and not out.exists()
    err = capsys.readouterr().err.strip()
    assert err.startswith("countdown-rl demo: error: --device cuda: torch sees no CUDA GPU") and "\n" not in err


def test_on_a_gpu_the_demos_write_a_cuda_recipe_sized_for_it(monkeypatch):
    """The CUDA branch cannot run here (no GPU): the configs and the recipe it would run, with the device given, and
    the command line's choice with torch's CUDA probe answering yes."""
    import torch

    from countdown_rl.demo.pretrained import GPU_SIZED, TASK_GPU_SIZED, choose_backends, pretrained_config
    from countdown_rl.generation.backends import get_backend

    gpu = gpu_config()
    recipe = demo.rl_recipe(gpu, "sft", "grpo", num_eval=300)
    assert recipe["use_cpu"] is False and recipe["bf16"] is True and gpu.sft_bf16
    assert recipe["per_device_train_batch_size"] == 16 * 8 and recipe["max_steps"] == 1000
    cpu = demo.rl_recipe(DemoConfig(device="cpu"), "sft", "grpo", num_eval=300)
    assert cpu["use_cpu"] is True and cpu["per_device_train_batch_size"] == 4 * 8 and cpu["max_steps"] == 500
    smol = pretrained_config("smollm2", device="cuda")
    assert {key: getattr(smol, key) for key in GPU_SIZED} == GPU_SIZED
    cpu_smol = pretrained_config("smollm2", device="cpu")  # the rest stays the CPU demo's
    assert replace(smol, device="cpu", **{key: getattr(cpu_smol, key) for key in GPU_SIZED}) == cpu_smol
    assert pretrained_config("smollm2", quick=True, device="cuda").max_steps == 2  # --quick stays the smoke run
    # another task: its tuned recipe (steps, rate, prompts a step) at a GPU's batch sizes, not the CPU's micro-batches
    task_gpu = pretrained_config("smollm2", task="reasoning_gym", device="cuda")
    task_cpu = pretrained_config("smollm2", task="reasoning_gym", device="cpu")
    assert {key: getattr(task_gpu, key) for key in TASK_GPU_SIZED} == TASK_GPU_SIZED
    assert replace(task_gpu, device="cpu", **{key: getattr(task_cpu, key) for key in TASK_GPU_SIZED}) == task_cpu
    task_recipe = demo.rl_recipe(task_gpu, "sft", "grpo", num_eval=400)
    assert task_recipe["per_device_train_batch_size"] == task_gpu.prompts_per_step * task_gpu.num_generations
    assert task_recipe["max_steps"] == task_cpu.max_steps and task_recipe["use_cpu"] is False
    expected = "vllm" if get_backend("vllm").installed() else "compiled"
    assert choose_backends("model", device="cuda")[0] == expected
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    parse = demo_cli.build_parser().parse_args
    assert demo_cli.config_from_args(parse([])) == gpu
    assert demo_cli.config_from_args(parse(["--device", "cpu"])) == DemoConfig(device="cpu")
    assert demo_cli.config_from_args(parse(["--quick"])).device == "cuda"


def test_table_and_results_match_the_eval_files(quick_runs):
    out, ((_, stdout), files), _ = quick_runs
    first = files["results"]
    zero = json.loads((out / "zero_shot" / "eval.json").read_text())["results"][0]
    trained = files["trained_eval"]["results"][0]
    [before, after] = _table_rows(stdout)
    blinds = [json.loads((out / d / "eval.json").read_text())["blind_rule"] for d in ("zero_shot", "grpo/eval")]
    budget = str(zero["max_tokens"])
    for row, expected, blind in ((before, zero, blinds[0]), (after, trained, blinds[1])):
        assert row[1] == format_percent(expected["accuracy"])
        assert row[2] == f"{expected['correct']} / {expected['partial']} / {expected['failed']}"
        assert row[3] == str(blind["by_budget"][budget]["correct_on_rest"])
        assert blind["by_budget"][budget]["correct_on_solved"] + int(row[3]) == expected["correct"]
        assert row[4] == format_number(expected["mean_tokens"])
        assert row[5] == (f"{format_number(expected['mean_tokens_correct'])} / "
                          f"{format_number(expected['mean_tokens_incorrect'])}")
    # pass@1 / pass@k of the sampled evaluations: quick_config's pass_k samples a puzzle at temperature 1.0
    k = quick_config().pass_k
    folders = {"sft_sampled": out / ZERO_SHOT_SAMPLED_DIR, "trained_sampled": out / "grpo" / FINAL_SAMPLED_DIR}
    for row, (key, folder) in zip((before, after), folders.items()):
        evaluation = json.loads((folder / "eval.json").read_text())
        assert evaluation["meta"]["num_samples"] == k and evaluation["meta"]["temperature"] == 1.0
        [result] = evaluation["results"]
        assert result["num_rows"] == quick_config().puzzles.num_eval and first[key] == result
        assert row[6] == f"{format_percent(result['pass_at_k']['1'])} / {format_percent(result['pass_at_k'][str(k)])}"
        rows = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
        # pass@k from the samples themselves: a puzzle counts if any of its k samples is correct
        solved = {(tuple(r["nums"]), r["target"]) for r in rows if r["outcome"] == "correct"}
        assert len(rows) == k * result["num_rows"]
        assert result["pass_at_k"][str(k)] == pytest.approx(len(solved) / result["num_rows"])
    # The best target-blind rule on the same puzzles heads the table; both evaluations saw the same puzzles.
    assert blinds[0]["rule"] == blinds[1]["rule"]
    assert first["blind_rule"] == {**{k: v for k, v in blinds[0].items() if k != "by_budget"},
                                   "by_model": {"sft": blinds[0]["by_budget"], "trained": blinds[1]["by_budget"]}}
    [rule_row] = [line for line in stdout.partition(EXPRESSION_TABLE)[0].splitlines()
                  if line.startswith("| best target-blind rule")]
    assert f"| {format_percent(blinds[0]['accuracy'])} |" in rule_row
    # RL against SFT, paired on the same puzzles, from the samples themselves.
    samples = [[json.loads(line)["outcome"] == "correct"
                for line in (out / d / "samples.jsonl").read_text().splitlines()] for d in ("zero_shot", "grpo/eval")]
    only_rl = sum(a and not b for b, a in zip(*samples))
    only_sft = sum(b and not a for b, a in zip(*samples))
    assert (first["paired_test"]["only_a"], first["paired_test"]["only_b"]) == (only_rl, only_sft)
    assert f"McNemar p = {first['paired_test']['p_value']:.3g}" in stdout
    assert first["sft"] == zero and first["trained"] == trained
    assert read_eval(out / "grpo" / "zero_shot")["results"][0].to_dict() == zero
    assert first["gain_points"] == pytest.approx(100 * (first["trained"]["accuracy"] - first["sft"]["accuracy"]))
    assert first["num_eval_puzzles"] == zero["num_rows"] == quick_config().puzzles.num_eval
    assert "after GRPO (2 steps)" in stdout


def test_resume_continues_from_the_newest_checkpoint(quick_runs):
    out, _, (code, stdout) = quick_runs
    assert code == 0
    results = json.loads((out / "grpo" / RESULTS_FILE).read_text())
    assert Path(results["resumed_from"]).name == "checkpoint-2"
    assert results["global_step"] == 4
    assert "reusing" in stdout  # the finished SFT stage is not trained again
    assert f"sampled evaluation: reusing {out / ZERO_SHOT_SAMPLED_DIR}" in stdout  # nor its pass@k sampled
    state = json.loads((out / "grpo" / "trainer_state.json").read_text())
    assert state["global_step"] == 4
    # Steps 1-2 come from the checkpoint's history, 3-4 from the resumed run: one log entry each.
    assert [h["step"] for h in state["log_history"] if "loss" in h] == [1, 2, 3, 4]
    assert (out / "grpo" / "checkpoint-4").is_dir()
    # The final files are the resumed run's: results, eval files and table agree.
    trained = json.loads((out / "grpo" / "eval" / "eval.json").read_text())["results"][0]
    assert results["trained"] == trained
    [_, after] = _table_rows(stdout)
    assert after[1] == format_percent(trained["accuracy"])


def test_the_expression_pool_table_is_the_two_models_on_unseen_expression_puzzles(quick_runs):
    """The second table: the SFT and RL models on held-out puzzles of the expression pool, none in any of the demo's
    parts, the same puzzles before and after; its cells, its McNemar test and its blind rule from the eval files. The
    resumed run (read here) reused the SFT model's evaluation and wrote the RL model's anew."""
    from countdown_rl.evaluation.eval_files import read_samples
    from countdown_rl.evaluation.paired import paired_counts
    from countdown_rl.tasks.countdown.blind import best_blind_rule

    out, _, (code, stdout) = quick_runs
    assert code == 0
    config = quick_config()
    results = json.loads((out / "grpo" / RESULTS_FILE).read_text())["expression"]
    folders = (out / ZERO_SHOT_EXPRESSION_DIR, out / "grpo" / FINAL_EXPRESSION_DIR)
    assert results["paths"] == {"zero_shot": str(folders[0]), "eval": str(folders[1])}
    assert f"zero-shot evaluation: reusing {folders[0]}" in stdout
    budget = config.max_completion_length
    samples = [read_samples(folder, budget) for folder in folders]
    puzzles = [(tuple(r["nums"]), r["target"]) for r in samples[0]]
    assert puzzles == [(tuple(r["nums"]), r["target"]) for r in samples[1]]
    assert len(set(puzzles)) == results["num_puzzles"] == config.expression_eval
    parts = demo_puzzles(config.puzzles, seed=0)
    seen = {(p["target"], tuple(sorted(p["nums"]))) for part in parts.values() for p in part}
    assert not seen & {(target, tuple(sorted(nums))) for nums, target in puzzles}
    assert "(expression)" in results["dataset"]
    # the pool's bias shows: its blind rule solves more than the balanced parts' cap
    rule = best_blind_rule([{"nums": list(nums), "target": target} for nums, target in puzzles])
    assert results["blind_rule"]["rule"] == rule.describe() and results["blind_rule"]["accuracy"] == rule.accuracy
    correct = [[r["outcome"] == "correct" for r in rows] for rows in samples]
    assert results["paired_test"] == paired_counts(correct[1], correct[0])
    for key, folder in zip(("sft", "trained"), folders):
        assert results[key] == read_eval(folder)["results"][0].to_dict()
    assert results["gain_points"] == pytest.approx(100 * (results["trained"]["accuracy"] - results["sft"]["accuracy"]))
    [before, after] = _table_rows(stdout, expression=True)
    assert (before[1], after[1]) == (format_percent(results["sft"]["accuracy"]),
                                     format_percent(results["trained"]["accuracy"]))
    [rule_row] = [line for line in stdout.partition(EXPRESSION_TABLE)[2].splitlines()
                  if line.startswith("| best target-blind rule")]
    assert f"| {format_percent(rule.accuracy)} |" in rule_row
    assert f"McNemar p = {results['paired_test']['p_value']:.3g}); the best target-blind rule solves" in stdout


@pytest.mark.parametrize("argv, message", [
    (["--expression_eval", "-1"], "--expression_eval must be 0 (none) or a number of puzzles, got -1"),
    (["--expression_eval", "5", "--sampling", "expression"], "--expression_eval needs --sampling balanced"),
    (["--expression_eval", "5", "--model_name_or_path", "smollm2"], "--expression_eval is the tiny demo's"),
])
def test_bad_expression_eval_is_one_line_before_anything_loads(argv, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        demo_cli.config_from_args(demo_cli.build_parser().parse_args(argv))


def test_report_reads_the_run_with_its_zero_shot(quick_runs, tmp_path):
    from countdown_rl.evaluation import report as report

    out, _, _ = quick_runs
    with contextlib.redirect_stdout(io.StringIO()):
        assert report_cli.main([str(out / "grpo"), "--output_dir", str(tmp_path / "report")]) == 0
    markdown = (tmp_path / "report" / "results.md").read_text()
    assert "zero_shot/eval.json" not in markdown and "no trainer_state.json" not in markdown
    row = (tmp_path / "report" / "results.csv").read_text().splitlines()[1].split(",")
    zero = json.loads((out / "zero_shot" / "eval.json").read_text())["results"][0]["accuracy"]
    assert float(row[4]) == pytest.approx(100 * zero, abs=1e-3)  # zero_shot_accuracy_pct is filled in


# ----------------------------------------------------------------------------------------------------------------
# Fast pieces
# ----------------------------------------------------------------------------------------------------------------


def test_flags_override_the_presets():
    args = demo_cli.build_parser().parse_args(["--quick", "--max-steps", "7", "--num-eval", "12", "--algorithm",
                                               "dr_grpo"])
    config = demo_cli.config_from_args(args)
    assert config.quick and config.max_steps == 7 and config.puzzles.num_eval == 12 and config.algorithm == "dr_grpo"
    assert config.sft_steps == quick_config().sft_steps
    full = demo_cli.config_from_args(demo_cli.build_parser().parse_args([]))
    import torch

    # the full demo as measured on the CPU; sized for the GPU where one runs it
    assert full == (gpu_config() if torch.cuda.is_available() else DemoConfig(device="cpu"))
    assert not full.quick and full.trace == "solver"
    assert demo_cli.config_from_args(demo_cli.build_parser().parse_args(["--trace", "search"])).trace == "search"
    with pytest.raises(SystemExit):
        demo_cli.main(["--max-steps", "0"])


def test_gradient_checkpointing_is_asked_for_and_reaches_the_rl_recipe():
    """Off unless asked (the measured figures were made without it); asked, the RL recipe takes TRL's field (the
    warm-up's: tests/commands/test_warmup.py, whose trainer is shown to recompute)."""
    off = demo_cli.config_from_args(demo_cli.build_parser().parse_args(["--quick"]))
    on = demo_cli.config_from_args(demo_cli.build_parser().parse_args(["--quick", "--gradient_checkpointing"]))
    assert (off.gradient_checkpointing, on.gradient_checkpointing) == (False, True)
    assert demo.rl_recipe(off, "sft", "run", num_eval=4)["gradient_checkpointing"] is False
    assert demo.rl_recipe(on, "sft", "run", num_eval=4)["gradient_checkpointing"] is True


def test_bad_trace_settings_fail_before_anything_is_written(tmp_path):
    for bad in ({"trace": "beam"}, {"trace": "search", "max_failed": -1}, {"min_failed": 2, "max_failed": 1}):
        config = quick_config(output_dir=str(tmp_path / "out"), **bad)
        with pytest.raises(ValueError, match="trace must be one of"):
            demo.run_demo(config)
    assert not (tmp_path / "out").exists()
    with pytest.raises(SystemExit):
        demo_cli.main(["--trace", "beam"])


def test_the_cli_lists_the_demo():
    from countdown_rl.cli import COMMANDS

    assert COMMANDS["demo"][0] == "countdown_rl.commands.demo:main"
    assert re.search(r"GRPO", COMMANDS["demo"][1])


def test_dr_grpo_runs_next_to_grpo_reusing_the_sft_stage(quick_runs):
    out, _, _ = quick_runs
    code, stdout = _run(["--quick", "--output-dir", str(out), "--algorithm", "dr_grpo", "--max-steps", "1",
                         "--resume"])
    assert code == 0 and "SFT warm-up: reusing" in stdout and "after Dr.GRPO (1 steps)" in stdout
    info = json.loads((out / "dr_grpo" / "run_info.json").read_text())
    assert info["algorithm"] == "dr_grpo" and info["reduction"] == "masked_mean_drgrpo"
    assert json.loads((out / "dr_grpo" / RESULTS_FILE).read_text())["algorithm"] == "dr_grpo"
    # The GRPO run is left as it was: its model, its evaluation and its results (4 steps, after the resume).
    grpo = json.loads((out / "grpo" / RESULTS_FILE).read_text())
    assert grpo["algorithm"] == "grpo" and grpo["global_step"] == 4
    assert grpo["trained"] == read_eval(out / "grpo" / "eval")["results"][0].to_dict()


def test_an_output_dir_that_is_a_file_is_a_one_line_error(tmp_path, capsys):
    target = tmp_path / "taken"
    target.write_text("not a folder")
    assert demo_cli.main(["--quick", "--output-dir", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"countdown-rl demo: error: --output_dir {target} exists and is not a folder"


def test_the_rl_stage_is_a_train_recipe(tmp_path):
    """The RL stage's recipe, written to ``<run>/recipe.yaml``, parses with ``countdown-rl train``'s parser into the
    same three objects the demo runs: a demo run is a ``train`` run."""
    import yaml

    from countdown_rl.runs.guard import effective_recipe
    from countdown_rl.training.recipe import parse_args, recipe_from_keys

    config = quick_config(budget_schedule=((0, 32), (2, 48)))
    recipe = demo.rl_recipe(config, tmp_path / "sft", tmp_path / "grpo", num_eval=32)
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    assert effective_recipe(*parse_args(["--config", str(path)])) == effective_recipe(*recipe_from_keys(recipe))
    assert recipe["reward_funcs"] == ["countdown"] and recipe["eval_subset_size"] == config.in_training_eval
    assert recipe["dataset_name"] == str(tmp_path / "grpo" / RL_DATA_DIR)




def test_per_device_train_batch_size_splits_the_rl_step_into_whole_groups():
    """``per_device_train_batch_size``: the RL step's completions in micro-batches with accumulated gradients (TRL's
    keys), so one optimiser step still sees prompts_per_step x num_generations completions; a size that splits a
    group or does not divide the step is one line."""
    from countdown_rl.training.recipe import recipe_from_keys

    config = quick_config(prompts_per_step=4, num_generations=4)
    whole = demo.rl_recipe(config, "sft", "run", num_eval=4)
    split = demo.rl_recipe(replace(config, per_device_train_batch_size=8), "sft", "run", num_eval=4)
    assert (whole["per_device_train_batch_size"], whole["gradient_accumulation_steps"]) == (16, 1)
    assert (split["per_device_train_batch_size"], split["gradient_accumulation_steps"]) == (8, 2)
    _, args, _ = recipe_from_keys(split)
    assert args.generation_batch_size == 16  # one generation of the whole step, trained in two halves
    for bad in (6, 12, 0):
        with pytest.raises(ValueError, match=f"--per_device_train_batch_size {bad} must divide the step's 16 "):
            demo.rl_recipe(replace(config, per_device_train_batch_size=bad), "sft", "run", num_eval=4)
