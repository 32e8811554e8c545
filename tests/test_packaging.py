"""The pins that keep `pip install -e '.[vllm]'` installable (see shared notes on versions).

trl 1.16.0's [vllm] extra accepts vllm 0.22-0.31; vllm 0.31.0 pins torch==2.13.0 and transformers<5.18.
Checked with `pip install --dry-run "trl[vllm]==1.16.0" "torch==2.13.*" "transformers>=5.17,<5.18" ...`
(resolves to vllm 0.31.0, torch 2.13.0, transformers 5.17.0) on 2026-11-21.
"""

from importlib.metadata import version

import pytest

from tests.helpers.env import ROOT

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_fast_moving_dependencies_are_pinned_compatibly_with_the_vllm_extra():
    deps = PYPROJECT["project"]["dependencies"]
    assert "trl==1.16.0" in deps
    assert "torch==2.13.*" in deps
    assert "transformers>=5.17.0,<5.18" in deps
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert extras["vllm"] == ["trl[vllm]==1.16.0"]
    assert {"deepspeed", "test"} <= set(extras)


def test_installed_versions_match_the_pins():
    assert version("trl") == "1.16.0"
    assert version("torch").startswith("2.13.")
    assert version("transformers").startswith("5.17.")


def test_console_script_points_at_the_cli():
    assert PYPROJECT["project"]["scripts"]["countdown-rl"] == "countdown_rl.cli:main"
