"""The sweep that the slow tier's runner tests and the report's of it share (all in test_runner.py: one worker makes it;
three invocations, ~90 s alone)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from countdown_rl.sweeps.spec import expand, parse_spec
from tests.helpers.sweeps import ENV, base_recipe, run_info, sweep_process, write_spec


# The tests on `swept` are the slow tier's: its three invocations take ~90 s on 2 cores.
@pytest.fixture(scope="package")
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
