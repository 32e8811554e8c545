"""Several demo runs at once (``countdown-rl demo --seeds ... --algorithm ...``) and their combined table.

1. The combining over demo_results.json files in the demo's layout (per run: the rule, before/after, points,
   McNemar p; per algorithm: mean, sample sd, range), a missing run named, a misplaced file refused; the same over
   another task's results (``--task``: the constant answer, the reading without the tags, the format rate, the
   setting held out of training), runs of two tasks refused.
2. The scheduling (default tier, in seconds): the processes are a stand-in script (the demo process cut at its
   boundary: it prints, writes its RL recipe and exits), so the test sees when each started, with which arguments,
   and that a seed's second algorithm waits for its first one's RL stage.
3. The command for real (slow tier): ``--quick`` at two seeds, GRPO and Dr.GRPO, the combined table against each
   run's own demo_results.json.
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from countdown_rl.commands import demo as demo_cli
from countdown_rl.demo import seeds
from countdown_rl.demo.run_dir import RECIPE_FILE, RESULTS_FILE
from countdown_rl.demo.table import blind_rule_by_model
from countdown_rl.evaluation.paired import paired_counts
from tests.helpers.env import ROOT, crash_report, offline_env


def _sampled(pass_1: float, pass_16: float) -> dict:
    """A sampled evaluation's result as demo_results.json holds it (JSON's string pass@k keys)."""
    return {"num_samples": 16, "pass_at_k": {"1": pass_1, "2": pass_1, "16": pass_16}}


def _write_results(folder: Path, seed: int, algorithm: str, before: list[bool], after: list[bool]) -> dict:
    """A run's demo_results.json with the keys the demo writes, its numbers from these per-puzzle outcomes; pass@16
    0.6 + seed / 100 after SFT, 2 points less after RL."""
    rule = {"rule": "x1 + (x2 + x3)", "accuracy": 0.1, "solved": len(before) // 10, "total": len(before),
            "by_budget": {"48": {"correct_on_rest": 1}}}
    results = {
        "command": "countdown-rl demo", "algorithm": algorithm, "num_eval_puzzles": len(before),
        "sft": {"accuracy": sum(before) / len(before)}, "trained": {"accuracy": sum(after) / len(after)},
        "gain_points": 100 * (sum(after) - sum(before)) / len(before), "paired_test": paired_counts(after, before),
        "blind_rule": blind_rule_by_model({"sft": rule, "trained": rule}), "global_step": 4,
        "config": {"seed": seed, "algorithm": algorithm},
        "sft_sampled": _sampled(0.1, 0.6 + seed / 100), "trained_sampled": _sampled(0.15, 0.58 + seed / 100),
        # on 100 expression-pool puzzles: SFT 30 + seed correct, RL 4 more (only RL solved 4)
        "expression": {"num_puzzles": 100, "sft": {"accuracy": (30 + seed) / 100},
                       "trained": {"accuracy": (34 + seed) / 100}, "gain_points": 4.0,
                       "paired_test": paired_counts(_outcomes(34 + seed), _outcomes(30 + seed)),
                       "blind_rule": {**rule, "accuracy": 0.21}},
    }
    (folder / algorithm).mkdir(parents=True, exist_ok=True)
    (folder / algorithm / RESULTS_FILE).write_text(json.dumps(results))
    return results


def _outcomes(correct: int, total: int = 100) -> list[bool]:
    return [i < correct for i in range(total)]


def test_combine_tabulates_each_run_then_mean_and_spread(tmp_path):
    runs = seeds.plan_runs(tmp_path, [0, 1, 2], ["grpo", "dr_grpo"], lambda *_: ())
    # seed s: SFT 20 + s correct of 100; GRPO adds 10, 8, 3; Dr.GRPO's seed 2 has no results yet
    gains = {0: 10, 1: 8, 2: 3}
    written = {}
    for run in runs:
        if run.label == "seed 2 dr_grpo":
            continue
        before = _outcomes(20 + run.seed)
        written[run.label] = _write_results(run.output_dir, run.seed, run.algorithm, before,
                                            _outcomes(20 + run.seed + gains[run.seed]))
    combined = seeds.combine(runs)
    assert combined["missing"] == ["seed 2 dr_grpo"]
    assert [(r["seed"], r["algorithm"]) for r in combined["runs"]] == [
        (0, "grpo"), (0, "dr_grpo"), (1, "grpo"), (1, "dr_grpo"), (2, "grpo")]
    grpo = combined["summary"]["grpo"]
    assert grpo["seeds"] == [0, 1, 2]
    assert grpo["gain_points"]["mean"] == pytest.approx(7.0)
    assert grpo["gain_points"]["sd"] == pytest.approx(statistics.stdev([10, 8, 3]))
    assert (grpo["gain_points"]["min"], grpo["gain_points"]["max"]) == pytest.approx((3, 10))
    # only-RL counts of 10, 8 and 3 against 0: p = 2 / 2^n; 3 is not significant
    assert [r["p_value"] for r in combined["runs"] if r["algorithm"] == "grpo"] == pytest.approx(
        [2 / 2**10, 2 / 2**8, 2 / 2**3])
    assert grpo["significant"] == 2
    # after RL - the rule (10%): 30 - 10, 29 - 10, 25 - 10
    assert grpo["above_rule_points"]["min"] == pytest.approx(15.0)
    assert combined["summary"]["dr_grpo"]["seeds"] == [0, 1]
    lines = combined["table"].splitlines()
    assert lines[0].startswith("| seed | algorithm | held-out puzzles | best target-blind rule | after SFT | after RL")
    assert ("| 0 | GRPO | 100 | 10.0% (x1 + (x2 + x3)) | 20.0% | 30.0% | +10.0 | 0.00195 (10 / 0) | +20.0 | "
            "10.0% / 60.0% -> 15.0% / 58.0% | 30.0% -> 34.0% (+4.0, p 0.125; rule 21.0%) |") in lines
    assert lines[0].endswith("| pass@1 / pass@16, SFT -> RL (sampled) | expression pool held out: SFT -> RL (points, "
                             "McNemar p; best target-blind rule) |")
    assert grpo["pass_k_change_points"]["mean"] == pytest.approx(-2.0)
    assert grpo["expression_gain_points"]["mean"] == pytest.approx(4.0)
    assert any(line.startswith("| mean of 3 | GRPO |") and line.endswith(
        "| pass@k -2.0 (sd 0.0; -2.0 to -2.0) points | +4.0 (sd 0.0; +4.0 to +4.0) points |") for line in lines)
    assert any(line.startswith("| mean of 3 | GRPO |") and "+7.0 (sd 3.6; +3.0 to +10.0)" in line
               and "2 of 3 below 0.05" in line for line in lines)
    # another task's readings are not Countdown's
    assert all((r["task"], r["content"], r["format"], r["transfer"]) == ("countdown", None, None, None)
               for r in combined["runs"])
    assert (grpo["content_gain_points"], grpo["transfer_gain_points"]) == (None, None)
    written_md = seeds.write_combined(tmp_path, combined)
    assert "No results (not finished): seed 2 dr_grpo." in written_md.read_text()
    assert json.loads((tmp_path / "seeds.json").read_text())["summary"]["grpo"]["significant"] == 2


def test_combine_refuses_a_results_file_of_another_run(tmp_path):
    [run] = seeds.plan_runs(tmp_path, [1], ["grpo"], lambda *_: ())
    _write_results(run.output_dir, 0, "grpo", _outcomes(5, 10), _outcomes(6, 10))  # seed 0's file in seed-1/
    with pytest.raises(ValueError, match=r"seed-1/grpo/demo_results.json: holds grpo at seed 0, not grpo at seed 1"):
        seeds.combine([run])


def _write_task_results(folder: Path, seed: int, algorithm: str, gain: int, content_gain: int,
                        transfer_gain: int | None, options: tuple[str, ...] = ("datasets=chain_sum",)) -> dict:
    """Another task's demo_results.json (the keys the demo writes for ``--task``): on 50 held-out rows SFT solves 20
    and RL ``gain`` more; read without the tags SFT 22 and RL ``content_gain`` more; on 40 rows of the held-out
    setting SFT 10 and RL ``transfer_gain`` more (None: no such setting). Seed 1's constant answer is long."""
    def reading(before, after, extra):
        return {"sft": {"accuracy": sum(before) / len(before), **extra},
                "trained": {"accuracy": sum(after) / len(after), **extra},
                "gain_points": 100 * (sum(after) - sum(before)) / len(before),
                "paired_test": paired_counts(after, before)}

    strict = reading(_outcomes(20, 50), _outcomes(20 + gain, 50), {"num_rows": 50})
    content = reading(_outcomes(22, 50), _outcomes(22 + content_gain, 50), {"rows": 50})
    answer = "7" if seed == 0 else "the quick brown fox jumps"
    results = {
        "command": "countdown-rl demo", "task": "reasoning_gym", "task_options": list(options),
        "algorithm": algorithm, "config": {"seed": seed, "algorithm": algorithm, "task": "reasoning_gym"},
        "global_step": 6, "num_eval_rows": 50, "base": {"accuracy": 0.02, "num_rows": 50}, **strict,
        "constant_answer": {"answer": answer, "accuracy": 0.08, "correct": 4, "rows": 50},
        "content": {"base": {"accuracy": 0.1, "correct": 5, "rows": 50}, **content},
        "format_rate": {"base": 0.1, "sft": 0.9, "trained": 0.96},
        "sft_sampled": _sampled(0.3, 0.7), "trained_sampled": _sampled(0.4, 0.68),
        "transfer_setting": None if transfer_gain is None else {
            "options": [*options, "difficulty=hard"], "rows": 40,
            **reading(_outcomes(10, 40), _outcomes(10 + transfer_gain, 40), {}),
            "constant_answer": {"answer": "3", "accuracy": 0.05, "correct": 2, "rows": 40}},
    }
    (folder / algorithm).mkdir(parents=True, exist_ok=True)
    (folder / algorithm / RESULTS_FILE).write_text(json.dumps(results))
    return results


def test_combine_tabulates_another_tasks_runs(tmp_path):
    runs = seeds.plan_runs(tmp_path, [0, 1], ["grpo", "dr_grpo"], lambda *_: ())
    # GRPO: +10 and +14 points (+6 and +8 without the tags, +5 and +10 on the held-out setting); Dr.GRPO's seed 1
    # has no held-out setting
    for run in runs:
        _write_task_results(run.output_dir, run.seed, run.algorithm, gain=5 + 2 * run.seed,
                            content_gain=3 + run.seed, transfer_gain=None if run.label == "seed 1 dr_grpo"
                            else 2 + 2 * run.seed)
    combined = seeds.combine(runs)
    first, second = combined["runs"][0], combined["runs"][2]
    assert (first["seed"], first["algorithm"], first["task"], first["puzzles"]) == (0, "grpo", "reasoning_gym", 50)
    assert (first["rule"], first["rule_accuracy"]) == ("constant answer 7", 0.08)
    assert second["rule"] == "constant answer the quick brown f..."  # cut as the demo's own table cuts it
    assert (first["sft_accuracy"], first["trained_accuracy"], first["gain_points"]) == pytest.approx((0.4, 0.5, 10))
    assert (first["p_value"], first["only_rl"], first["only_sft"]) == (2 / 2**5, 5, 0)
    assert first["above_rule_points"] == pytest.approx(42.0)
    assert first["content"] == pytest.approx({"sft_accuracy": 0.44, "trained_accuracy": 0.5, "gain_points": 6.0,
                                              "p_value": 2 / 2**3})
    assert first["format"] == {"sft": 0.9, "trained": 0.96}
    assert first["transfer"] == pytest.approx({"rows": 40, "sft_accuracy": 0.25, "trained_accuracy": 0.3,
                                               "gain_points": 5.0, "p_value": 2 / 2**2})
    assert (first["pass_k"], first["sft_pass@k"], first["trained_pass@1"], first["expression"]) == (16, 0.7, 0.4, None)
    assert combined["runs"][3]["transfer"] is None
    grpo, dr_grpo = combined["summary"]["grpo"], combined["summary"]["dr_grpo"]
    assert (grpo["gain_points"]["mean"], grpo["gain_points"]["sd"]) == pytest.approx((12.0, statistics.stdev([10, 14])))
    assert grpo["content_gain_points"]["mean"] == pytest.approx(7.0)
    assert grpo["transfer_gain_points"]["mean"] == pytest.approx(7.5)
    assert dr_grpo["transfer_gain_points"] is None and dr_grpo["content_gain_points"]["mean"] == pytest.approx(7.0)
    assert grpo["pass_k_change_points"]["mean"] == pytest.approx(-2.0) and grpo["expression_gain_points"] is None
    lines = combined["table"].splitlines()
    assert lines[0] == ("| seed | algorithm | held-out rows | best constant answer | after SFT | after RL | "
                        "RL - SFT, points | McNemar p (only RL / only SFT) | read without the tags: SFT -> RL (points, "
                        "McNemar p) | answer format: SFT -> RL | pass@1 / pass@16, SFT -> RL (sampled) | setting held "
                        "out of training: SFT -> RL (points, McNemar p) |")
    assert lines[2] == ("| 0 | GRPO | 50 | 8.0% (7) | 40.0% | 50.0% | +10.0 | 0.0625 (5 / 0) | 44.0% -> 50.0% "
                        "(+6.0, p 0.25) | 90.0% -> 96.0% | 30.0% / 70.0% -> 40.0% / 68.0% | 25.0% -> 30.0% "
                        "(+5.0, p 0.5) |")
    assert lines[4].startswith("| 1 | GRPO | 50 | 8.0% (the quick brown f...) |")
    assert lines[4].endswith("| 25.0% -> 35.0% (+10.0, p 0.125) |")
    assert lines[5].startswith("| 1 | Dr.GRPO |") and "| 44.0% -> 52.0% (+8.0, p 0.125) |" in lines[5]
    assert lines[5].endswith("| 30.0% / 70.0% -> 40.0% / 68.0% | — |")  # no setting held out
    [grpo_mean] = [line for line in lines if line.startswith("| mean of 2 | GRPO |")]
    assert "| +12.0 (sd 2.8; +10.0 to +14.0) | 1 of 2 below 0.05 | +7.0 (sd 1.4; +6.0 to +8.0) points |" in grpo_mean
    assert grpo_mean.endswith("| pass@k -2.0 (sd 0.0; -2.0 to -2.0) points | +7.5 (sd 3.5; +5.0 to +10.0) points |")
    assert [line for line in lines if line.startswith("| mean of 2 | Dr.GRPO |")][0].endswith("points | — |")
    assert "expression pool" not in combined["table"] and "target-blind rule" not in combined["table"]
    seeds.write_combined(tmp_path, combined)
    assert json.loads((tmp_path / "seeds.json").read_text())["runs"][0]["content"]["gain_points"] == 6.0


def test_combine_refuses_runs_of_two_tasks_in_one_line(tmp_path):
    countdown, task = seeds.plan_runs(tmp_path, [0], ["grpo", "dr_grpo"], lambda *_: ())
    _write_results(countdown.output_dir, 0, "grpo", _outcomes(5, 10), _outcomes(6, 10))
    _write_task_results(task.output_dir, 0, "dr_grpo", gain=2, content_gain=1, transfer_gain=None)
    with pytest.raises(ValueError) as refused:
        seeds.combine([countdown, task])
    assert str(refused.value) == ("seed 0 grpo ran countdown but seed 0 dr_grpo ran reasoning_gym "
                                  "(datasets=chain_sum): one combined table holds one task's runs")
    # one task in two settings does not average either
    _write_task_results(countdown.output_dir, 0, "grpo", 2, 1, None, options=("datasets=basic_arithmetic",))
    with pytest.raises(ValueError, match=r"^seed 0 grpo ran reasoning_gym \(datasets=basic_arithmetic\) but seed 0 "
                                         r"dr_grpo ran reasoning_gym \(datasets=chain_sum\)"):
        seeds.combine([countdown, task])


def test_combine_names_the_key_a_tasks_results_file_lacks(tmp_path):
    [run] = seeds.plan_runs(tmp_path, [0], ["grpo"], lambda *_: ())
    results = _write_task_results(run.output_dir, 0, "grpo", gain=2, content_gain=1, transfer_gain=1)
    del results["content"]["paired_test"]
    run.results_file.write_text(json.dumps(results))
    with pytest.raises(ValueError, match=r"seed-0/grpo/demo_results.json: not a demo_results.json \(missing key "
                                         r"'paired_test'\)"):
        seeds.combine([run])


# A stand-in for one demo process: the arguments it got and when, a line of output, its RL recipe after a pause (the
# SFT stages), then its exit code (seed 1's Dr.GRPO fails).
STAND_IN = textwrap.dedent("""
    import json, pathlib, sys, time
    argv = sys.argv[1:]
    out = pathlib.Path(argv[argv.index("--output_dir") + 1]); algorithm = argv[argv.index("--algorithm") + 1]
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{algorithm}.args.json").write_text(json.dumps({"argv": argv, "started": time.time()}))
    print("== SFT warm-up ==", flush=True)
    print("| a table row |", flush=True)
    time.sleep(0.6)
    (out / algorithm).mkdir(exist_ok=True)
    (out / algorithm / "recipe.yaml").write_text("x: 1")
    time.sleep(0.3)
    sys.exit(3 if (algorithm == "dr_grpo" and "seed-1" in str(out)) else 0)
""")


def test_run_all_waits_for_the_first_algorithms_rl_stage_and_reports_each_exit(tmp_path):
    runs = seeds.plan_runs(tmp_path, [0, 1], ["grpo", "dr_grpo"], lambda seed, algorithm, folder: (
        "--seed", str(seed), "--algorithm", algorithm, "--output_dir", str(folder)))
    console = io.StringIO()
    codes = seeds.run_all(runs, jobs=4, command=[sys.executable, "-c", STAND_IN], console=console, poll_seconds=0.05)
    assert codes == {"seed 0 grpo": 0, "seed 0 dr_grpo": 0, "seed 1 grpo": 0, "seed 1 dr_grpo": 3}
    assert seeds.exit_code(codes) == 1
    for seed in (0, 1):
        folder = seeds.seed_dir(tmp_path, seed)
        first = json.loads((folder / "grpo.args.json").read_text())
        second = json.loads((folder / "dr_grpo.args.json").read_text())
        assert "--resume" not in first["argv"] and second["argv"][-1] == "--resume"  # it reuses the SFT stages
        assert second["started"] >= (folder / "grpo" / RECIPE_FILE).stat().st_mtime
        assert "== SFT warm-up ==" in (folder / "dr_grpo.log").read_text()
    # both seeds' first runs started together
    starts = [json.loads((seeds.seed_dir(tmp_path, s) / "grpo.args.json").read_text())["started"] for s in (0, 1)]
    assert abs(starts[0] - starts[1]) < 0.5
    text = console.getvalue()
    assert "[seed 1 grpo] == SFT warm-up ==" in text and "a table row" not in text
    assert "[seed 1 dr_grpo] failed (exit 3)" in text and "[seed 0 dr_grpo] finished" in text


def test_run_all_one_at_a_time(tmp_path):
    runs = seeds.plan_runs(tmp_path, [0, 1], ["grpo"], lambda seed, algorithm, folder: (
        "--seed", str(seed), "--algorithm", algorithm, "--output_dir", str(folder)))
    started = time.time()
    codes = seeds.run_all(runs, jobs=1, command=[sys.executable, "-c", STAND_IN], console=io.StringIO(),
                          poll_seconds=0.05)
    assert codes == {"seed 0 grpo": 0, "seed 1 grpo": 0}
    first, second = (json.loads((seeds.seed_dir(tmp_path, s) / "grpo.args.json").read_text())["started"]
                     for s in (0, 1))
    assert second - first >= 0.9 and first >= started  # the second waited for the first to end


def test_a_real_models_runs_go_one_at_a_time_unless_jobs_says_otherwise():
    # one SmolLM2 run takes every core and 12.1-18.9 GB on the machines measured (docs/demo.md, "Time and memory of
    # the real-model demo"): two at once would not fit a 24 GB machine
    assert seeds.jobs_at_once(6, None, real_model=True) == 1
    assert seeds.jobs_at_once(6, None, real_model=False) == 6
    assert seeds.jobs_at_once(6, 3, real_model=True) == 3
    with pytest.raises(ValueError, match="--jobs must be positive"):
        seeds.jobs_at_once(2, 0, real_model=True)


def _cli(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stopped:
        demo_cli.main(argv)
    return stopped.value.code, err.getvalue()


@pytest.mark.parametrize(("argv", "message"), [
    (["--seed", "1", "--seeds", "0", "1"], "--seed and --seeds: give one of them"),
    (["--seeds", "0", "0"], "--seeds: a seed is given twice"),
    (["--seeds", "0", "-1"], "argument --seeds: a seed is a whole number >= 0, got -1"),
    (["--seed", "x"], "argument --seed: a seed is a whole number >= 0, got 'x'"),
    (["--seeds", "0", "1", "--jobs", "0"], "--jobs must be positive"),
    (["--jobs", "2"], "--jobs: only with --seeds or several --algorithm values"),
    (["--seeds", "0", "--num_threads", "0"], "seed 0 grpo: --num_threads must be positive"),
    (["--seeds", "0", "--lora"], "seed 0 grpo: --lora needs --model_name_or_path"),
    (["--seeds", "0", "--dynamic_sampling", "--dynamic_sampling_max_rounds", "0"],
     "seed 0 grpo: --dynamic_sampling_max_rounds must be at least 1, got 0"),
    (["--seeds", "0", "--no_dynamic_sampling", "--dynamic_sampling_max_rounds", "2"],
     "seed 0 grpo: --dynamic_sampling_max_rounds needs dynamic sampling on (--dynamic_sampling)"),
    (["--seeds", "0", "--temperature", "0"], "seed 0 grpo: --temperature must be positive, got 0"),
])
def test_bad_several_run_arguments_are_one_line_before_anything_runs(tmp_path, argv, message):
    code, err = _cli([*argv, "--output_dir", str(tmp_path / "out")])
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_each_run_gets_the_options_given_and_its_own_seed_algorithm_folder_and_threads():
    parser = demo_cli.build_parser()
    args = parser.parse_args(["--quick", "--seeds", "3", "--algorithm", "grpo", "dr_grpo", "--max_steps", "2",
                              "--sampling", "expression", "--resume", "--jobs", "2", "--temperature", "1.0",
                              "--dynamic_sampling", "--dynamic_sampling_max_rounds", "3"])
    argv = demo_cli.child_argv(parser, args, seed=3, algorithm="dr_grpo", output_dir="o/seed-3", num_threads=4)
    assert argv == ["--max_steps", "2", "--temperature", "1.0", "--dynamic_sampling", "--dynamic_sampling_max_rounds",
                    "3", "--sampling", "expression", "--quick", "--seed", "3", "--algorithm", "dr_grpo",
                    "--output_dir", "o/seed-3", "--num_threads", "4"]
    config = demo_cli.config_from_args(parser.parse_args(argv))
    assert (config.seed, config.algorithm, config.max_steps, config.num_threads, config.puzzles.sampling) == (
        3, "dr_grpo", 2, 4, "expression")
    assert (config.temperature, config.dynamic_sampling, config.dynamic_sampling_max_rounds) == (1.0, True, 3)


def test_dynamic_sampling_is_on_by_default_and_no_dynamic_sampling_is_passed_on_to_each_run():
    parser = demo_cli.build_parser()
    default = demo_cli.config_from_args(parser.parse_args([]))
    assert (default.dynamic_sampling, default.temperature) == (True, 0.3)
    args = parser.parse_args(["--seeds", "3", "4", "--no_dynamic_sampling", "--temperature", "0.7"])
    argv = demo_cli.child_argv(parser, args, seed=4)
    assert argv == ["--temperature", "0.7", "--no_dynamic_sampling", "--seed", "4"]
    config = demo_cli.config_from_args(parser.parse_args(argv))
    assert (config.seed, config.dynamic_sampling, config.temperature) == (4, False, 0.7)
    assert demo_cli.config_from_args(parser.parse_args(["--dynamic_sampling"])).dynamic_sampling is True


@pytest.mark.slow
def test_quick_demo_at_two_seeds_and_two_algorithms_prints_the_combined_table(tmp_path):
    """The real command: 4 quick demos, 2 at a time, with dynamic sampling at temperature 1.0 (passed on to every
    run); the table's rows are the runs' own demo_results.json, and each run's record says what dynamic sampling did."""
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "countdown_rl.cli", "demo", "--quick", "--seeds", "0", "1",
                           "--algorithm", "grpo", "dr_grpo", "--jobs", "2", "--max_steps", "2",
                           "--dynamic_sampling", "--dynamic_sampling_max_rounds", "3", "--temperature", "1.0",
                           "--output_dir", str(out)], cwd=ROOT, env=offline_env(), capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + crash_report(done.stderr)
    assert "4 demo runs (grpo, dr_grpo x seeds 0, 1), 2 at once, " in done.stdout
    for seed in (0, 1):
        folder = out / f"seed-{seed}"
        # one SFT model per seed: trained by GRPO's process, reused by Dr.GRPO's
        assert "== SFT warm-up: reusing" in (folder / "dr_grpo.log").read_text()
        assert "== SFT warm-up: 30 steps" in (folder / "grpo.log").read_text()
        for algorithm in ("grpo", "dr_grpo"):
            results = json.loads((folder / algorithm / RESULTS_FILE).read_text())
            assert results["config"]["seed"] == seed and results["paths"]["sft"] == str(folder / "sft")
            assert results["config"]["temperature"] == 1.0 and results["config"]["dynamic_sampling"] is True
            ran = json.loads((folder / algorithm / "run_info.json").read_text())["extra"]["dynamic_sampling"]
            # 2 steps of 4 prompts, each step 1 to 3 generation rounds of 4 prompts
            assert ran["max_rounds"] == 3 and ran["generation_batches"] == 2 and 2 <= ran["rounds"] <= 6
            assert ran["prompts_drawn"] == 4 * ran["rounds"] and ran["groups_kept"] <= 8
            name = "GRPO" if algorithm == "grpo" else "Dr.GRPO"
            row = (f"| {seed} | {name} | {results['num_eval_puzzles']} | "
                   f"{100 * results['blind_rule']['accuracy']:.1f}% ({results['blind_rule']['rule']}) | "
                   f"{100 * results['sft']['accuracy']:.1f}% | {100 * results['trained']['accuracy']:.1f}% | "
                   f"{results['gain_points']:+.1f} | {results['paired_test']['p_value']:.3g} ")
            assert row in done.stdout, row
    assert "| mean of 2 | GRPO |" in done.stdout and "| mean of 2 | Dr.GRPO |" in done.stdout
    assert json.loads((out / "seeds.json").read_text())["missing"] == []
