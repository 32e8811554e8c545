"""The colocated vLLM engine's dtype: TRL builds ``vllm.LLM`` with none, so the trainer passes the run's.

Cut at vLLM's boundary: TRL's module-level ``LLM`` name (what ``VLLMGeneration`` calls) is a recorder here, so no
engine starts and vllm need not be installed. The real engine's dtype, read back from a started one:
tests/training/test_rollouts_vllm.py (slow tier).
"""

import pytest
import trl.generation.vllm_generation as trl_vllm

from countdown_rl.training.config import CountdownGRPOConfig
from countdown_rl.training.rollouts import colocated_engine_dtype, vllm_dtype_of


def _config(tmp_path, **keys):
    return CountdownGRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", **keys)


@pytest.mark.parametrize(("keys", "expected"), [
    ({"bf16": False}, "float32"),  # not vLLM's auto, which makes a float32 model bf16 on every x86 CPU
    ({"bf16": False, "vllm_dtype": "bfloat16"}, "bfloat16"),  # asked for: as asked
    ({"bf16": False, "vllm_dtype": "auto"}, "auto"),
])
def test_the_colocated_engine_gets_the_runs_dtype(tmp_path, monkeypatch, keys, expected):
    built = []
    monkeypatch.setattr(trl_vllm, "LLM", lambda **kwargs: built.append(kwargs) or "engine", raising=False)
    recorder = trl_vllm.LLM
    args = _config(tmp_path, use_vllm=True, vllm_mode="colocate", **keys)
    assert vllm_dtype_of(args) == expected
    with colocated_engine_dtype(args) as dtype:
        assert trl_vllm.LLM(model="m", seed=0) == "engine"  # as VLLMGeneration calls it
    assert dtype == expected and built == [{"model": "m", "seed": 0, "dtype": expected}]
    assert trl_vllm.LLM is recorder  # TRL's name is given back after the trainer is built


def test_a_dtype_trl_passes_itself_wins_and_no_engine_no_change(tmp_path, monkeypatch):
    built = []
    monkeypatch.setattr(trl_vllm, "LLM", lambda **kwargs: built.append(kwargs), raising=False)
    recorder = trl_vllm.LLM
    with colocated_engine_dtype(_config(tmp_path, use_vllm=True, bf16=False)):
        trl_vllm.LLM(model="m", dtype="float16")
    assert built == [{"model": "m", "dtype": "float16"}]
    for args in (None, _config(tmp_path, bf16=False)):  # no config yet, or no vLLM: TRL's name untouched
        with colocated_engine_dtype(args) as dtype:
            assert dtype is None and trl_vllm.LLM is recorder


def test_vllm_dtype_is_checked(tmp_path):
    with pytest.raises(ValueError, match=r"vllm_dtype must be one of \['auto', 'float32', 'bfloat16', 'float16'\], "
                                         r"got 'fp32'"):
        _config(tmp_path, vllm_dtype="fp32")
