"""``countdown-rl sweep`` and the sweep report (issue #13).

1. The spec: every problem is one line naming the spec file and the key, found before any run starts (nothing
   written, no model loaded): unknown keys, empty or unequal axes, keys the recipe does not have or the sweep sets,
   and values the recipe rejects (train's own checks, naming the run).
2. Expansion: names from values (stable when an axis grows), grid and zip, each run's effective recipe.
3. Local execution, for real (``countdown-rl sweep`` as a process, ``countdown-rl train`` per run on the tiny
   model): a SIGTERM to the sweep stops the run in flight with a checkpoint (exit 75); the next invocation skips the
   finished run, resumes the interrupted one from its checkpoint, records a failing run with its error and goes
   on; progress lines name run i of n and the step.
4. SLURM: the sbatch script (array size, requeue on exit 75, the signal, the settings) is valid bash, and running
   it as array task I runs exactly run I (SLURM's ``srun`` and ``scontrol`` are cut at their boundary: stubs run the
   step and record the call). On a real SLURM: tests/test_slurm.py.
5. The report: its table equals the numbers in the runs' own files; the figures are valid PNGs.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from countdown_rl.commands.sweep import main as sweep_main
from countdown_rl.sweeps.runner import slurm_script
from countdown_rl.sweeps.spec import expand, parse_spec, points, value_name

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "recipes" / "smoke" / "cpu_tiny.yaml"
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
       "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false"}


def base_recipe(tmp: Path, model_dir, puzzles, **overrides) -> Path:
    recipe = yaml.safe_load(SMOKE.read_text())
    recipe.update(model_name_or_path=str(model_dir), dataset_name=str(puzzles), max_steps=12, save_steps=2,
                  final_eval_size=4, eval_subset_size=0, **overrides)
    path = tmp / "base.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


def write_spec(tmp: Path, spec: dict, name: str = "spec.yaml") -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


# ---------------------------------------------------------------------------------------------------------------
# 1. The spec
# ---------------------------------------------------------------------------------------------------------------

BAD_SPECS = {
    # id: (spec keys beside base, words the one line must hold)
    "unknown-key": ({"axes": {"beta": [0.0]}, "axis": {}}, ["unknown key 'axis'"]),
    "no-axes": ({}, ["axes: missing"]),
    "empty-axis": ({"axes": {"beta": []}}, ["axes.beta: must be a non-empty list"]),
    "axis-not-a-list": ({"axes": {"beta": 0.1}}, ["axes.beta: must be a non-empty list"]),
    "not-a-recipe-key": ({"axes": {"betta": [0.0, 0.1]}}, ["axes.betta: not a recipe key"]),
    "reserved-key": ({"axes": {"seed": [1, 2]}}, ["axes.seed: set by the sweep", "seeds"]),
    "zip-lengths": ({"axes": {"beta": [0.0, 0.1], "epsilon": [0.2]}, "mode": "zip"},
                    ["mode zip needs lists of one length", "beta 2", "epsilon 1"]),
    "value-twice": ({"axes": {"beta": [0.0, 0.0]}}, ["axes.beta: the same value(s) listed twice"]),
    "zip-point-twice": ({"axes": {"beta": [0.0, 0.0], "epsilon": [0.2, 0.2]}, "mode": "zip"},
                        ["axes: the same value(s) listed twice"]),
    "bad-mode": ({"axes": {"beta": [0.0]}, "mode": "random"}, ["mode: must be one of"]),
    "bad-seeds": ({"axes": {"beta": [0.0]}, "seeds": []}, ["seeds: must be a non-empty list of integers"]),
    "override-is-axis": ({"axes": {"beta": [0.0]}, "overrides": {"beta": 0.1}}, ["overrides.beta: also an axis"]),
    "slurm-key": ({"axes": {"beta": [0.0]}, "slurm": {"gpus": 1}}, ["slurm.gpus: unknown"]),
    "slurm-time": ({"axes": {"beta": [0.0]}, "slurm": {"time": "4h"}}, ["slurm.time: not a SLURM time", "'4h'"]),
    "signal-after-limit": ({"axes": {"beta": [0.0]}, "slurm": {"time": "00:05:00"}},
                           ["slurm.signal_seconds: 600 s is not less than slurm.time 00:05:00 (300 s)"]),
    "rejected-value": ({"axes": {"algorithm": ["grpo", "ppo"]}}, ["run 'algorithm=ppo,seed=42'", "algorithm", "ppo"]),
    "rejected-type": ({"axes": {"beta": [0.0, "lots"]}}, ["run 'beta=lots,seed=42'", "beta", "lots"]),
    "rejected-combination": ({"axes": {"num_generations": [4, 3]}}, ["run 'num_generations=3,seed=42'",
                                                                    "num_generations"]),
}


@pytest.mark.parametrize("case", list(BAD_SPECS))
def test_a_bad_spec_is_one_line_naming_the_key_before_anything_runs(case, tmp_path, tiny_model_dir, puzzles,
                                                                    capsys, no_loading, monkeypatch):
    monkeypatch.chdir(tmp_path)
    extra, words = BAD_SPECS[case]
    spec = write_spec(tmp_path, {"base": str(base_recipe(tmp_path, tiny_model_dir, puzzles)),
                                 "output_root": str(tmp_path / "sweep"), **extra})
    assert sweep_main([str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("countdown-rl sweep: error: ") and "Traceback" not in err
    assert str(spec) in err
    for word in words:
        assert word in err, err
    assert not (tmp_path / "sweep").exists()  # checked whole before anything is written


def test_a_missing_base_and_a_missing_spec_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert sweep_main([str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err
    spec = write_spec(tmp_path, {"base": "recipes/none.yaml", "axes": {"beta": [0.0]}})
    assert sweep_main([str(spec)]) == 2
    err = capsys.readouterr().err
    assert "base: no such recipe file: recipes/none.yaml" in err and err.count("\n") == 1


# ---------------------------------------------------------------------------------------------------------------
# 2. Expansion
# ---------------------------------------------------------------------------------------------------------------


def test_grid_and_zip_expand_to_named_runs_with_their_recipes(tmp_path, tiny_model_dir, puzzles, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = base_recipe(tmp_path, tiny_model_dir, puzzles)
    grid = parse_spec(write_spec(tmp_path, {"base": str(base), "axes": {"beta": [0.0, 0.04], "epsilon": [0.1, 0.2]},
                                            "seeds": [0, 1], "overrides": {"max_steps": 3}, "output_root": "out"}))
    runs = expand(grid)
    assert len(runs) == 8 and [r.index for r in runs] == list(range(8))
    assert runs[0].name == "beta=0,epsilon=0.1,seed=0" and runs[1].name == "beta=0,epsilon=0.1,seed=1"
    assert runs[-1].name == "beta=0.04,epsilon=0.2,seed=1" and runs[-1].point == "beta=0.04,epsilon=0.2"
    assert len({r.name for r in runs}) == 8
    r = runs[5]  # beta 0.04, epsilon 0.1, seed 1
    assert (r.values, r.seed) == ({"beta": 0.04, "epsilon": 0.1}, 1)
    assert r.recipe["beta"] == 0.04 and r.recipe["epsilon"] == 0.1 and r.recipe["seed"] == 1
    assert r.recipe["max_steps"] == 3 and r.recipe["resume"] is True
    assert r.recipe["output_dir"] == str(Path("out") / r.name)
    assert r.recipe["learning_rate"] == yaml.safe_load(base.read_text())["learning_rate"]  # the base's other keys

    zipped = parse_spec(write_spec(tmp_path, {"base": str(base), "mode": "zip",
                                              "axes": {"per_device_train_batch_size": [2, 4, 8],
                                                       "gradient_accumulation_steps": [4, 2, 1]}}))
    assert points(zipped) == [{"per_device_train_batch_size": 2, "gradient_accumulation_steps": 4},
                              {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2},
                              {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 1}]
    # a run's name does not depend on the other values of its axis: adding a value keeps the old runs' folders
    grown = parse_spec(write_spec(tmp_path, {"base": str(base), "axes": {"beta": [0.0, 0.02, 0.04],
                                                                         "epsilon": [0.1, 0.2]}, "seeds": [0, 1]}))
    assert {r.name for r in runs} <= {r.name for r in expand(grown)}


def test_value_names_are_folder_safe():
    assert value_name({"budget_schedule": [[0, 40], [100, 64]], "algorithm": "dr_grpo"}) == \
        "budget_schedule=0_40_100_64,algorithm=dr_grpo"
    assert value_name({"beta": 1e9, "use_peft": True, "model": "a/b c"}) == "beta=1e+09,use_peft=true,model=a_b_c"


# ---------------------------------------------------------------------------------------------------------------
# 3. Local execution, for real
# ---------------------------------------------------------------------------------------------------------------


def sweep_process(spec: Path, cwd: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "countdown_rl.cli", "sweep", str(spec), *args], cwd=cwd, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_info(run_dir: Path) -> dict:
    return json.loads((run_dir / "run_info.json").read_text())


def test_a_one_run_sweep_trains_skips_and_reports(tmp_path, tiny_model_dir, puzzles, capsys, monkeypatch):
    """The default tier's sweep from end to end (the tests on ``swept`` below are the slow tier's): one run of two
    steps in a ``countdown-rl train`` process, its status files, the report, then a second invocation skips it."""
    monkeypatch.chdir(tmp_path)
    base = base_recipe(tmp_path, tiny_model_dir, puzzles)
    spec = write_spec(tmp_path, {"name": "short", "base": str(base), "axes": {"beta": [0.0]}, "seeds": [0],
                                 "overrides": {"max_steps": 2}, "output_root": str(tmp_path / "sweep")})
    [run] = expand(parse_spec(spec))
    assert sweep_main([str(spec), "--report"]) == 0
    out = capsys.readouterr().out
    assert f"[sweep 1/1 {run.name}] starting" in out and f"[sweep 1/1 {run.name}] step 2/2: reward" in out
    assert f"[sweep 1/1 {run.name}] finished in" in out
    assert json.loads((run.output_dir / "sweep_run.json").read_text())["state"] == "finished"
    assert run_info(run.output_dir)["status"]["state"] == "finished" and run_info(run.output_dir)["status"]["step"] == 2
    accuracy = json.loads((run.output_dir / "eval" / "eval.json").read_text())["results"][0]["accuracy"]
    [row] = list(__import__("csv").DictReader((tmp_path / "sweep" / "report" / "sweep.csv").open()))
    assert (row["point"], row["seeds"], row["finished"]) == (run.point, "1", "1")
    assert float(row["accuracy_mean_pct"]) == pytest.approx(100 * accuracy, abs=1e-4)
    assert sweep_main([str(spec)]) == 0
    assert f"[sweep 1/1 {run.name}] finished before: skipped" in capsys.readouterr().out


# The tests on `swept` are the slow tier's: its three invocations take ~90 s on 2 cores.
@pytest.fixture(scope="module")
def swept(tmp_path_factory, tiny_model_dir, puzzles):
    """A 6-run sweep (zip over num_iterations and dataset_name, 2 seeds; the two runs on a missing file fail),
    interrupted by SIGTERM during its second run, then invoked again (with --report), then once more."""
    tmp = tmp_path_factory.mktemp("sweep")
    base = base_recipe(tmp, tiny_model_dir, puzzles)
    spec = write_spec(tmp, {"name": "smoke", "base": str(base), "mode": "zip", "seeds": [0, 1],
                            "axes": {"num_iterations": [1, 2, 1],
                                     "dataset_name": [str(puzzles), str(puzzles), str(tmp / "missing.jsonl")]},
                            "output_root": "sweep"})
    first = sweep_process(spec, tmp)
    lines = []
    for line in first.stdout:
        lines.append(line)
        if line.startswith("[sweep 2/6 ") and " step 2/12" in line:
            first.send_signal(signal.SIGTERM)
    first_err = first.stderr.read()
    first_code = first.wait(timeout=300)
    runs = expand(parse_spec(spec, known_keys={"num_iterations", "dataset_name"}))
    interrupted = tmp / "sweep" / runs[1].name
    after_first = {"sweep_run": json.loads((interrupted / "sweep_run.json").read_text()),
                   "status": run_info(interrupted)["status"],
                   "checkpoints": sorted(p.name for p in interrupted.glob("checkpoint-*"))}
    second = subprocess.run([sys.executable, "-m", "countdown_rl.cli", "sweep", str(spec), "--report"], cwd=tmp,
                            env=ENV, capture_output=True, text=True, timeout=600)
    third = subprocess.run([sys.executable, "-m", "countdown_rl.cli", "sweep", str(spec)], cwd=tmp, env=ENV,
                           capture_output=True, text=True, timeout=300)
    return {"tmp": tmp, "spec": spec, "root": tmp / "sweep", "runs": runs, "after_first": after_first,
            "first": (first_code, "".join(lines), first_err), "second": second, "third": third}


@pytest.mark.slow
def test_a_signal_stops_the_sweep_with_a_checkpoint_and_the_next_run_resumes(swept):
    code, out, err = swept["first"]
    assert code == 75, err[-3000:]
    runs = swept["runs"]
    root = swept["root"]
    assert "[sweep 1/6 num_iterations=1," in out and "finished in" in out
    assert "interrupted (checkpoint saved)" in out
    after = swept["after_first"]
    assert after["sweep_run"]["state"] == "interrupted" and after["sweep_run"]["returncode"] == 75
    assert after["status"]["state"] == "interrupted"
    assert after["checkpoints"] == [f"checkpoint-{after['status']['step']}"]
    # the second invocation resumed it from the checkpoint the signal saved
    second = swept["second"]
    assert f"[sweep 1/6 {runs[0].name}] finished before: skipped" in second.stdout
    assert f"[sweep 2/6 {runs[1].name}] resuming" in second.stdout
    info = run_info(root / runs[1].name)
    assert info["status"]["state"] == "finished" and info["status"]["step"] == 12
    assert info["resumed_from"] and Path(info["resumed_from"]).name.startswith("checkpoint-")
    assert 2 <= int(Path(info["resumed_from"]).name.split("-")[1]) < 12
    log = (root / runs[1].name / "train.log").read_text()
    assert log.count("\n=== ") == 2  # both attempts' output kept


@pytest.mark.slow
def test_progress_names_run_i_of_n_and_the_step(swept):
    _, out, _ = swept["first"]
    names = [r.name for r in swept["runs"]]
    assert f"[sweep 1/6 {names[0]}] step 1/12: reward" in out
    assert f"[sweep 1/6 {names[0]}] step 12/12" in out


@pytest.mark.slow
def test_a_failed_run_is_recorded_and_the_sweep_goes_on(swept):
    second, root, runs = swept["second"], swept["root"], swept["runs"]
    assert second.returncode == 1, second.stderr[-3000:]
    status = {r.name: json.loads((root / r.name / "sweep_run.json").read_text()) for r in runs}
    failing = [r for r in runs if "missing" in r.recipe["dataset_name"]]
    assert len(failing) == 2
    for run in failing:
        assert status[run.name]["state"] == "failed" and status[run.name]["returncode"] == 2
        assert "no such file" in status[run.name]["error"] and "missing.jsonl" in status[run.name]["error"]
        assert f"{run.name}] failed (exit 2)" in second.stdout
    # the runs after the first failure still ran
    for run in runs:
        if run not in failing:
            assert status[run.name]["state"] == "finished"
            assert run_info(root / run.name)["status"]["state"] == "finished"
    assert "2 of 6 run(s) failed" in second.stdout


@pytest.mark.slow
def test_finished_runs_are_skipped_and_failed_ones_retried(swept):
    third, runs = swept["third"], swept["runs"]
    assert third.returncode == 1
    for i, run in enumerate(runs, 1):
        if "missing" in run.recipe["dataset_name"]:
            assert f"[sweep {i}/6 {run.name}] starting" in third.stdout
        else:
            assert f"[sweep {i}/6 {run.name}] finished before: skipped" in third.stdout
    # a finished run's log was not touched by the skip
    assert (swept["root"] / runs[0].name / "train.log").read_text().count("\n=== ") == 1


@pytest.mark.slow
def test_a_run_folder_from_another_recipe_is_refused(swept, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(swept["tmp"])
    spec = yaml.safe_load(swept["spec"].read_text())
    spec["overrides"] = {"learning_rate": 0.5}
    changed = write_spec(swept["tmp"], spec, "changed.yaml")
    assert sweep_main([str(changed)]) == 2
    err = capsys.readouterr().err
    assert "ran with another recipe" in err and "learning_rate" in err and err.count("\n") == 1


@pytest.mark.slow
def test_index_out_of_range_is_one_line(swept, capsys, monkeypatch):
    monkeypatch.chdir(swept["tmp"])
    assert sweep_main([str(swept["spec"]), "--index", "6"]) == 2
    assert "--index 6: the sweep has runs 0..5" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------------------
# 4. SLURM
# ---------------------------------------------------------------------------------------------------------------


def test_the_slurm_script_signals_the_step_and_requeues_after_the_time_limit(tmp_path, monkeypatch):
    """The early signal goes to a job step (srun), the shell outlives the time limit's SIGTERM to requeue, a scancel is
    not requeued; TERM is the default under accelerate_config (torchrun forwards it)."""
    monkeypatch.chdir(tmp_path)
    base = tmp_path / "base.yaml"
    base.write_text(SMOKE.read_text())
    accelerate = tmp_path / "acc.yaml"
    accelerate.write_text("distributed_type: NO\n")
    plain = parse_spec(write_spec(tmp_path, {"base": str(base), "axes": {"beta": [0.0, 0.1]},
                                             "slurm": {"time": "00:03:00", "signal_seconds": 120}}, "p.yaml"),
                       known_keys={"beta"})
    lines = slurm_script(plain, expand(plain)).splitlines()
    assert "#SBATCH --signal=USR1@120" in lines and "#SBATCH --array=0-1" in lines
    step = next(i for i, line in enumerate(lines) if line.startswith("srun --ntasks=1 countdown-rl sweep"))
    assert lines[step - 1] == "trap 'term=1' TERM" and lines[step + 1] == "code=$?"
    assert "grep -q 'Reason=TimeLimit'" in "\n".join(lines[step:])
    assert "    scontrol requeue \"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\"" in lines
    under = parse_spec(write_spec(tmp_path, {"base": str(base), "axes": {"beta": [0.0]},
                                             "accelerate_config": str(accelerate)}, "a.yaml"), known_keys={"beta"})
    assert "#SBATCH --signal=TERM@600" in slurm_script(under, expand(under)).splitlines()
    assert subprocess.run(["bash", "-n"], input=slurm_script(plain, expand(plain)), text=True).returncode == 0


@pytest.mark.slow
def test_the_slurm_script_is_a_job_array_that_requeues(swept, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(swept["tmp"])
    spec = yaml.safe_load(swept["spec"].read_text())
    spec["slurm"] = {"partition": "gpu", "time": "04:00:00", "gpus_per_task": 1, "cpus_per_task": 8,
                     "max_parallel": 2, "setup": ["source .venv/bin/activate"], "sbatch_args": ["--constraint=h100"]}
    path = write_spec(swept["tmp"], spec, "slurm.yaml")
    assert sweep_main([str(path), "--slurm"]) == 0
    script = (swept["root"] / "sweep.sbatch").read_text()
    assert script == slurm_script(parse_spec(path), expand(parse_spec(path)))
    for line in ["#SBATCH --array=0-5%2", "#SBATCH --partition=gpu", "#SBATCH --time=04:00:00",
                 "#SBATCH --gpus-per-task=1", "#SBATCH --cpus-per-task=8", "#SBATCH --signal=USR1@600",
                 "#SBATCH --requeue", "#SBATCH --open-mode=append", "#SBATCH --constraint=h100",
                 "source .venv/bin/activate", "trap 'term=1' TERM",
                 f"srun --ntasks=1 --cpus-per-task=8 countdown-rl sweep {path.resolve()} --index "
                 "\"$SLURM_ARRAY_TASK_ID\""]:
        assert line in script.splitlines(), line
    assert subprocess.run(["bash", "-n", str(swept["root"] / "sweep.sbatch")]).returncode == 0

    # Run it as SLURM would run array task 3, with the SLURM tools it calls cut at their boundary: `scontrol` is a
    # stub recording its arguments, `srun` one running its command; `countdown-rl` is the real one (run 3 is
    # finished, so it is skipped).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path}/scontrol.log\n")
    (bin_dir / "srun").write_text("#!/bin/bash\nwhile [[ $1 == --* ]]; do shift; done\nexec \"$@\"\n")
    (bin_dir / "countdown-rl").write_text(f"#!/bin/sh\nexec {sys.executable} -m countdown_rl.cli \"$@\"\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    env = {**ENV, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_JOB_ID": "77"}
    done = subprocess.run(["bash", str(swept["root"] / "sweep.sbatch")], env=env, capture_output=True, text=True,
                          timeout=300)
    runs = swept["runs"]
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"[sweep 4/6 {runs[3].name}] finished before: skipped" in done.stdout
    assert all(f"[sweep {i + 1}/6" not in done.stdout for i in (0, 1, 2, 4, 5))
    assert not (tmp_path / "scontrol.log").exists()  # exit 0: no requeue

    # A task that exits 75 (interrupted, checkpoint saved) requeues itself.
    (bin_dir / "countdown-rl").write_text("#!/bin/sh\nexit 75\n")
    done = subprocess.run(["bash", str(swept["root"] / "sweep.sbatch")], env=env, capture_output=True, text=True)
    assert done.returncode == 75
    assert (tmp_path / "scontrol.log").read_text().split() == ["requeue", "77_3"]


# ---------------------------------------------------------------------------------------------------------------
# 5. The report
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_report_table_is_the_runs_own_numbers(swept):
    second, root, runs = swept["second"], swept["root"], swept["runs"]
    assert "report: " in second.stdout
    rows = {r["point"]: r for r in __import__("csv").DictReader((root / "report" / "sweep.csv").open())}
    assert set(rows) == {r.point for r in runs}
    for point in {r.point for r in runs}:
        mine = [r for r in runs if r.point == point]
        row = rows[point]
        assert row["seeds"] == "2"
        evals = []
        rewards = []
        for run in mine:
            file = root / run.name / "eval" / "eval.json"
            if not file.is_file():
                continue
            evals.append(100 * json.loads(file.read_text())["results"][0]["accuracy"])
            samples = [json.loads(x) for x in (root / run.name / "eval" / "samples.jsonl").read_text().splitlines()]
            rewards.append(statistics.fmean(s["reward"] for s in samples))
        assert row["finished"] == str(len(evals))
        if evals:
            assert float(row["accuracy_mean_pct"]) == pytest.approx(statistics.fmean(evals), abs=1e-4)
            assert float(row["accuracy_sd_pct"]) == pytest.approx(statistics.stdev(evals), abs=1e-4)
            assert float(row["eval_reward_mean"]) == pytest.approx(statistics.fmean(rewards), abs=1e-4)
        else:
            assert row["accuracy_mean_pct"] == ""
    md = (root / "report" / "sweep.md").read_text()
    assert "not finished" in md or "no training files" in md  # the failed runs are named, not silently dropped


@pytest.mark.slow
def test_the_report_figures_are_valid_pngs(swept, tmp_path):
    from matplotlib.image import imread

    root = swept["root"]
    figures = sorted((root / "report").glob("*.png"))
    assert [f.name for f in figures] == ["axis_num_iterations+dataset_name.png"]
    image = imread(figures[0])
    assert image.shape[0] > 300 and image.shape[1] > 1500 and image.std() > 0.01  # drawn, not blank
    # `countdown-rl report <sweep dir> --out` writes the same files elsewhere
    done = subprocess.run([sys.executable, "-m", "countdown_rl.cli", "report", str(root), "--out", str(tmp_path / "r")],
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "r" / "sweep.csv").read_text() == (root / "report" / "sweep.csv").read_text()
    assert imread(tmp_path / "r" / figures[0].name).shape == image.shape
