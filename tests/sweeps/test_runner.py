"""``countdown_rl.sweeps.runner`` through ``countdown-rl sweep``, for real (``countdown-rl train`` per run on the
tiny model).

1. Local execution: a SIGTERM to the sweep stops the run in flight with a checkpoint (exit 75); the next invocation
   skips the finished run, resumes the interrupted one from its checkpoint, records a failing run with its error and
   goes on; progress lines name run i of n and the step; ``--report``'s table is the runs' own numbers and its figures
   are valid PNGs (``countdown_rl.sweeps.report``).
2. SLURM: the sbatch script (array size, requeue on exit 75, the signal, the settings) is valid bash, and running it
   as array task I runs exactly run I (SLURM's ``srun`` and ``scontrol`` are cut at their boundary: stubs run the
   step and record the call). On a real SLURM: tests/test_slurm.py.
"""

from __future__ import annotations

import csv
import json
import statistics
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from countdown_rl.commands.sweep import main as sweep_main
from countdown_rl.sweeps.runner import slurm_script
from countdown_rl.sweeps.spec import expand, parse_spec
from tests.helpers.env import crash_report
from tests.helpers.sweeps import ENV, SMOKE, base_recipe, run_info, sweep_process, write_spec


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


# The report that `sweep --report` wrote of that sweep (countdown_rl.sweeps.report), here beside the runner's tests:
# the tests on `swept` share one file so that one worker makes the sweep (over two files, xdist's loadfile made it
# once per worker: ~3 minutes twice).


@pytest.mark.slow
def test_the_report_table_is_the_runs_own_numbers(swept):
    second, root, runs = swept["second"], swept["root"], swept["runs"]
    assert "report: " in second.stdout
    rows = {r["point"]: r for r in csv.DictReader((root / "report" / "sweep.csv").open())}
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
    # `countdown-rl report <sweep dir> --output_dir` writes the same files elsewhere
    done = subprocess.run([sys.executable, "-m", "countdown_rl.cli", "report", str(root), "--output_dir", str(tmp_path / "r")],
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "r" / "sweep.csv").read_text() == (root / "report" / "sweep.csv").read_text()
    assert imread(tmp_path / "r" / figures[0].name).shape == image.shape


@pytest.mark.slow
def test_a_failed_run_is_recorded_and_the_sweep_goes_on(swept):
    second, root, runs = swept["second"], swept["root"], swept["runs"]
    assert second.returncode == 1, crash_report(second.stderr)
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
    assert done.returncode == 0, crash_report(done.stderr, 2000)
    assert f"[sweep 4/6 {runs[3].name}] finished before: skipped" in done.stdout
    assert all(f"[sweep {i + 1}/6" not in done.stdout for i in (0, 1, 2, 4, 5))
    assert not (tmp_path / "scontrol.log").exists()  # exit 0: no requeue

    # A task that exits 75 (interrupted, checkpoint saved) requeues itself.
    (bin_dir / "countdown-rl").write_text("#!/bin/sh\nexit 75\n")
    done = subprocess.run(["bash", str(swept["root"] / "sweep.sbatch")], env=env, capture_output=True, text=True)
    assert done.returncode == 75
    assert (tmp_path / "scontrol.log").read_text().split() == ["requeue", "77_3"]


def _started_at(log: Path) -> float:
    """When a run's (last) attempt started: its train.log's ``=== YYYY-mm-dd HH:MM:SS command`` header."""
    import time

    header = [line for line in log.read_text().splitlines() if line.startswith("=== ")][-1]
    return time.mktime(time.strptime(" ".join(header.split()[1:3]), "%Y-%m-%d %H:%M:%S"))


@pytest.mark.slow
def test_jobs_runs_at_once_passes_a_signal_to_every_run_and_resumes(tmp_path, tiny_model_dir, puzzles):
    """``--jobs 2``: two runs start before either ends; a SIGTERM stops both with
    a checkpoint (exit 75) and starts nothing new; the next invocation resumes both and finishes. (On a loaded
    machine one run may get far ahead of the other and train its last step before the signal lands: it has nothing
    left to stop and finishes, its record says so, and the next invocation skips it.)"""
    base = base_recipe(tmp_path, tiny_model_dir, puzzles)
    spec = write_spec(tmp_path, {"name": "jobs", "base": str(base), "axes": {"beta": [0.0]}, "seeds": [0, 1, 2],
                                 "overrides": {"max_steps": 12}, "output_root": str(tmp_path / "sweep")})
    runs = expand(parse_spec(spec, known_keys={"beta", "max_steps"}))
    first = sweep_process(spec, tmp_path, "--jobs", "2")
    seen: set[str] = set()
    lines = []
    for line in first.stdout:
        lines.append(line)
        for run in runs[:2]:
            if f"{run.name}] step 2/12" in line:
                seen.add(run.name)
        if len(seen) == 2:
            first.send_signal(signal.SIGTERM)
            seen.add("sent")
    assert first.wait(timeout=300) == 75, first.stderr.read()[-3000:]
    out = "".join(lines)
    # done: trained to its last step before the signal (then it finishes; the signal may still kill its process on
    # the way out, which the sweep counts as interrupted), never "interrupted at step 12" (whose resume trained 13)
    done = [run for run in runs[:2] if run_info(run.output_dir)["status"]["state"] == "finished"]
    stopped = [run for run in runs[:2] if run not in done]
    assert stopped, "both runs had finished before the signal landed: nothing was in flight"
    for run in stopped:
        assert f"{run.name}] interrupted (checkpoint saved)" in out
        assert json.loads((run.output_dir / "sweep_run.json").read_text())["state"] == "interrupted"
        assert list(run.output_dir.glob("checkpoint-*")), run.name
    for run in done:
        assert run_info(run.output_dir)["status"]["step"] == 12, run.name
    assert f"{runs[2].name}] starting" not in out  # nothing new after the signal

    second = subprocess.run([sys.executable, "-m", "countdown_rl.cli", "sweep", str(spec), "--jobs", "2"], cwd=tmp_path,
                            env={k: v for k, v in ENV.items() if k != "OMP_NUM_THREADS"}, capture_output=True,
                            text=True, timeout=600)
    assert second.returncode == 0, second.stdout[-3000:] + crash_report(second.stderr)
    for run in runs:
        status = run_info(run.output_dir)["status"]
        assert (status["state"], status["step"]) == ("finished", 12), run.name
    assert all(run_info(run.output_dir)["resumed_from"] for run in stopped)
    assert all(f"{run.name}] finished before: skipped" in second.stdout for run in done)
    # the second invocation's first two runs (runs 0 and 1 resumed, or the one stopped and run 2) ran at the same
    # time: each started before the other ended
    ends = {run.name: (run.output_dir / "sweep_run.json").stat().st_mtime for run in runs}
    starts = {run.name: _started_at(run.output_dir / "train.log") for run in runs}
    a, b = [run.name for run in runs if run in stopped or run is runs[2]][:2]
    assert starts[a] <= ends[b] and starts[b] <= ends[a]
