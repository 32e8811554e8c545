"""The settings the package starts vLLM engines with: dtype from the run's precision, every core bound, the record.

Pure functions over the environment and the run's precision: no engine starts here (the engines that start with
them: tests/commands/test_evaluate_vllm.py, tests/training/test_rollouts_vllm.py, slow tier).
"""

import os

import pytest

from countdown_rl.generation.vllm_settings import (
    BIND_KEYS,
    bind_every_core,
    cpu_binding_environment,
    current_binding,
    engine_dtype,
)


@pytest.mark.parametrize(("bf16", "fp16", "device", "expected"), [
    (False, False, "cpu", "float32"),  # never vLLM's auto on a CPU: it would make fp32 bf16 on every x86 CPU
    (True, False, "cpu", "bfloat16"),
    (False, True, "cpu", "float16"),
    (True, False, "cuda", "bfloat16"),
    (False, False, "cuda", "auto"),  # vLLM's usual half precision on a GPU
])
def test_the_engine_computes_in_the_runs_precision(bf16, fp16, device, expected):
    assert engine_dtype(bf16, fp16, device) == expected


def test_every_allowed_core_is_bound_and_none_reserved():
    env = cpu_binding_environment([0, 1, 2, 5, 7, 8])
    assert env == {"VLLM_CPU_OMP_THREADS_BIND": "0-2,5,7-8", "VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}
    mine = cpu_binding_environment()
    expected = sorted(os.sched_getaffinity(0))
    assert mine["VLLM_CPU_OMP_THREADS_BIND"].split(",")[0].split("-")[0] == str(expected[0])


def test_binding_every_core_keeps_a_binding_the_user_set(monkeypatch):
    for key in BIND_KEYS:
        monkeypatch.delenv(key, raising=False)
    said = bind_every_core()
    assert os.environ["VLLM_CPU_NUM_OF_RESERVED_CPU"] == "0"
    assert said == current_binding() and "none reserved" in said
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0")
    monkeypatch.setenv("VLLM_CPU_NUM_OF_RESERVED_CPU", "1")
    said = bind_every_core()
    assert os.environ["VLLM_CPU_OMP_THREADS_BIND"] == "0" and said.endswith("(set before the run)")
    assert said.startswith("cores 0, 1 reserved")
