"""A finished run lets go of its model and optimiser (``countdown_rl.training.pipeline``, ``countdown_rl.runs.memory``).

The demos run several stages in one process: once a stage's run is dropped (``del run``, then
``release_memory()``), its trained model and the optimiser's state must be freed, or the next stage starts on top of
them (8.4 GB held after the SmolLM2 demo's RL stage). They were not: vLLM, imported by TRL's GRPO trainer, keeps as
a module global the ImportError it caught at import (no ``torchcodec``); the traceback's frames reach, through
``f_back``, every frame on the stack during that import. The trainer's first import happens under ``run_recipe``
and ``train_grpo``, so their frames stayed alive with their locals: the model, the trainer (its callback handler,
its accelerator's ``AcceleratedOptimizer`` and AdamW state). The pipeline now drops such import-time tracebacks when
it returns (``runs.memory.drop_import_tracebacks``).

1. In this process: a real tiny run through ``run_recipe`` (the function ``countdown-rl train``, the demos and the
   sweeps run) whose callback imports, during training, a stand-in module that keeps its ImportError the way vLLM's
   does (the trainer may be imported already in this process, by an earlier test, so vLLM's own import may not
   happen under the run). After the run is dropped and ``gc.collect()`` runs, weak references to the trained model
   and to the AdamW optimiser are dead; the kept exception is still there, without its traceback.
2. Slow tier, in a fresh process with vLLM installed: the real case, the trainer's (and vLLM's) first import under
   ``run_recipe``.
"""

from __future__ import annotations

import gc
import importlib
import subprocess
import sys
import textwrap
import weakref

import pytest
import yaml

from countdown_rl.runs.guard import release_all_output_dirs
from countdown_rl.training.pipeline import run_recipe
from countdown_rl.training.recipe import recipe_from_keys
from tests.helpers.env import offline_env
from tests.helpers.train_runs import SMOKE
from tests.helpers.vllm_tiny import HAS_VLLM

KEEPER = "countdown_rl_test_keeps_its_import_error"  # the stand-in for vllm.multimodal.media.audio
KEEPER_SOURCE = textwrap.dedent("""
    try:
        import countdown_rl_test_no_such_module
    except ImportError as exc:
        kept = exc
""")


def tiny_recipe(model_dir, puzzles, out) -> dict:
    """The CPU smoke recipe cut to 2 steps (one checkpoint) and a 2-puzzle final evaluation."""
    return {**yaml.safe_load(SMOKE.read_text()), "model_name_or_path": str(model_dir), "dataset_name": str(puzzles),
            "output_dir": str(out), "max_steps": 2, "save_steps": 2, "test_size": 4, "eval_subset_size": 0,
            "final_eval_size": 2}


def holders(obj) -> list[str]:
    """What still refers to ``obj`` (for the failure message)."""
    return sorted({type(r).__name__ for r in gc.get_referrers(obj)})


def test_a_finished_run_frees_its_model_and_optimizer(tiny_model_dir, puzzles, tmp_path, monkeypatch,
                                                      one_torch_thread):
    from transformers import TrainerCallback

    (tmp_path / "modules").mkdir()
    (tmp_path / "modules" / f"{KEEPER}.py").write_text(KEEPER_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path / "modules"))
    monkeypatch.delitem(sys.modules, KEEPER, raising=False)  # imported below, under the run; gone after the test

    class ImportsTheKeeper(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            importlib.import_module(KEEPER)

    try:
        run = run_recipe(*recipe_from_keys(tiny_recipe(tiny_model_dir, puzzles, tmp_path / "out")),
                         callbacks=[ImportsTheKeeper()], quiet=True)
    finally:
        release_all_output_dirs()
    assert run.stopped is None and run.trainer.state.global_step == 2
    model, optimizer = weakref.ref(run.trainer.model), weakref.ref(run.trainer.optimizer.optimizer)
    del run
    gc.collect()
    alive = {name: holders(ref()) for name, ref in (("model", model), ("optimizer", optimizer)) if ref() is not None}
    assert not alive, f"outlived the run (what still refers to each): {alive}"
    kept = sys.modules[KEEPER].kept  # the module's exception stays (its message, for whoever raises from it)
    assert isinstance(kept, ImportError) and kept.__traceback__ is None


PROBE = textwrap.dedent("""
    import gc, sys, weakref
    import yaml
    from countdown_rl.training.pipeline import run_recipe
    from countdown_rl.training.recipe import recipe_from_keys

    assert "countdown_rl.training.trainer" not in sys.modules and "vllm" not in sys.modules
    run = run_recipe(*recipe_from_keys(yaml.safe_load(sys.argv[1])), quiet=True)
    assert "vllm" in sys.modules and run.stopped is None
    model, optimizer = weakref.ref(run.trainer.model), weakref.ref(run.trainer.optimizer.optimizer)
    del run
    gc.collect()
    print("model alive:", model() is not None, "optimizer alive:", optimizer() is not None)
""")


@pytest.mark.slow
@pytest.mark.vllm
@pytest.mark.skipif(not HAS_VLLM, reason="vllm is not installed (its import is the case this test checks)")
def test_the_first_trainer_import_under_the_run_keeps_nothing_alive(tiny_model_dir, puzzles, tmp_path):
    recipe = yaml.safe_dump(tiny_recipe(tiny_model_dir, puzzles, tmp_path / "out"))
    out = subprocess.run([sys.executable, "-c", PROBE, recipe], capture_output=True, text=True, timeout=600,
                         env=offline_env())
    assert out.returncode == 0, out.stderr[-3000:]
    assert "model alive: False optimizer alive: False" in out.stdout, out.stdout + out.stderr[-3000:]
