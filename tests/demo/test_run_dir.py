"""The demo's run folders: a previous demo run is cleared, a folder the demo did not write never is."""

import contextlib
import io
import json

import pytest

from countdown_rl.demo.run_dir import DEMO_SOURCE, prepare_run_dir


def test_a_foreign_run_directory_is_never_cleared(tmp_path):
    run = tmp_path / "grpo"
    run.mkdir()
    (run / "precious.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not a countdown-rl demo run directory"):
        prepare_run_dir(run, resume=False)
    assert (run / "precious.txt").exists()
    (run / "precious.txt").unlink()
    (run / "run_info.json").write_text(json.dumps({"source": DEMO_SOURCE}))
    prepare_run_dir(run, resume=True)  # resuming keeps it
    assert run.exists()
    with contextlib.redirect_stdout(io.StringIO()):
        prepare_run_dir(run, resume=False)  # a previous demo run is replaced
    assert not run.exists()
