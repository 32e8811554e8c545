"""``countdown_rl.sweeps.spec``: every problem in a spec is one line naming the spec file and the key, found before
any run starts (nothing written, no model loaded): unknown keys, empty or unequal axes, keys the recipe does not have
or the sweep sets, and values the recipe rejects (train's own checks, naming the run). Expansion: names from values
(stable when an axis grows), grid and zip, each run's effective recipe.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from countdown_rl.commands.sweep import main as sweep_main
from countdown_rl.sweeps.spec import expand, parse_spec, points, value_name
from tests.helpers.sweeps import base_recipe, write_spec

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


def test_a_sweep_over_reasoning_gym_mixtures_plans_each_and_refuses_an_unknown_dataset(tmp_path, tiny_model_dir,
                                                                                        capsys, no_loading,
                                                                                        monkeypatch):
    """The reasoning_gym task sweeps like any other: an axis over its task options is one run a mixture; a dataset
    name reasoning-gym does not list is refused in one line naming the run, before anything is written."""
    from tests.helpers.env import ROOT

    monkeypatch.chdir(tmp_path)
    base = yaml.safe_load((ROOT / "recipes" / "reasoning_gym" / "cpu_tiny.yaml").read_text())
    base.update(model_name_or_path=str(tiny_model_dir))
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    mixtures = [["datasets=chain_sum"], ["datasets=chain_sum:2,lcm:1"]]
    spec = write_spec(tmp_path, {"base": str(tmp_path / "base.yaml"), "output_root": str(tmp_path / "sweep"),
                                 "axes": {"task_options": mixtures}})
    assert sweep_main([str(spec), "--dry_run"]) == 0
    out = capsys.readouterr().out
    assert "2 run(s)" in out and "task_options=datasets=chain_sum_2,lcm_1" in out  # folder-safe names
    bad = write_spec(tmp_path, {"base": str(tmp_path / "base.yaml"), "output_root": str(tmp_path / "bad-sweep"),
                                "axes": {"task_options": [["datasets=chain_sum"], ["datasets=chain_sun"]]}},
                     name="bad.yaml")
    assert sweep_main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown reasoning-gym dataset 'chain_sun'" in err and "near: chain_sum" in err
    assert not (tmp_path / "bad-sweep").exists()
