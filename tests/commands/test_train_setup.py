"""A recipe that names a model or data file nobody has made yet says, in its one-line error (after the recipe's own
checks, before the model loads), the command that makes it (from the recipe's "One-time setup" header); every
shipped recipe that reads a local file under ``outputs/`` has such a command."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from countdown_rl.commands.train import main
from countdown_rl.training.recipe import SETUP_KEYS, missing_setup
from tests.helpers.env import ROOT

LOCAL_RECIPES = [path for path in sorted((ROOT / "recipes").rglob("*.yaml"))
                 if any(str(yaml.safe_load(path.read_text()).get(key, "")).startswith("outputs/") for key in SETUP_KEYS)]


def test_some_recipes_read_local_files():
    assert {"recipes/format_copy/cpu_tiny.yaml", "recipes/smoke/cpu_tiny.yaml"} <= {
        str(path.relative_to(ROOT)) for path in LOCAL_RECIPES}


@pytest.mark.parametrize("recipe", LOCAL_RECIPES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_local_file_a_recipe_reads_has_its_setup_command(recipe, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing made here
    keys = yaml.safe_load(recipe.read_text())
    line = missing_setup(recipe, keys)
    local = [f"{key} {keys[key]}" for key in SETUP_KEYS if str(keys.get(key, "")).startswith("outputs/")]
    assert line is not None and all(name in line for name in local), line


def test_train_says_how_to_make_the_warm_model_first(tmp_path, monkeypatch, capsys, no_loading):
    monkeypatch.chdir(tmp_path)
    code = main(["--config", str(ROOT / "recipes" / "format_copy" / "cpu_tiny.yaml")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("countdown-rl train: error: model_name_or_path outputs/format-copy-warm: not a local folder")
    assert "; model_name_or_path outputs/format-copy-warm does not exist yet; make it first" in err[0]
    assert "countdown-rl warmup --task format_copy" in err[0] and "--output_dir outputs/format-copy-warm" in err[0]
    assert not Path("outputs/format-copy-warm").exists()  # nothing made in its place


def test_a_recipe_error_comes_before_the_setup(tmp_path, monkeypatch, capsys, no_loading):
    monkeypatch.chdir(tmp_path)
    code = main(["--config", str(ROOT / "recipes" / "smoke" / "cpu_tiny.yaml"), "--num_generations", "3"])
    err = capsys.readouterr().err
    assert code == 2 and "num_generations" in err and "make them first" not in err


def test_an_override_that_exists_is_not_stopped(tmp_path, monkeypatch, tiny_model_dir):
    monkeypatch.chdir(tmp_path)
    recipe = ROOT / "recipes" / "format_copy" / "cpu_tiny.yaml"
    assert missing_setup(recipe, {"model_name_or_path": str(tiny_model_dir)}) is None
    assert missing_setup(recipe, {"model_name_or_path": "outputs/elsewhere"}) is None  # no setup line makes it
