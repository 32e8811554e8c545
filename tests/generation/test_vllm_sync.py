"""What cannot run on a CPU is refused in one line before any model loads: server-mode training (TRL syncs the
server's weights over NCCL, CUDA only), sleep mode with the CPU engine, and a model whose attention head size vLLM's
CPU kernels lack (the tiny demo model's 16), in training and in ``countdown-rl serve``."""

import pytest

from countdown_rl.commands.train import main
from tests.helpers.vllm_tiny import NEEDS_VLLM

SMOKE = "recipes/smoke/cpu_tiny.yaml"


def needs_vllm(test):
    for mark in NEEDS_VLLM:
        test = mark(test)
    return test


def _train(tmp_path, *extra):
    return main(["--config", SMOKE, "--dataset_name", str(tmp_path / "no-data.jsonl"), "--output_dir",
                 str(tmp_path / "out"), "--use_vllm", "true", *extra])


NO_CUDA = pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="a CUDA GPU is here: server mode runs")


@NO_CUDA
def test_server_mode_is_refused_without_cuda_even_without_vllm():
    from types import SimpleNamespace

    from countdown_rl.training.recipe import check_vllm_mode

    with pytest.raises(ValueError, match=r"^vllm_mode: server syncs .* over NCCL, which needs a CUDA GPU"):
        check_vllm_mode(SimpleNamespace(use_vllm=True, vllm_mode="server", vllm_enable_sleep_mode=False))
    check_vllm_mode(SimpleNamespace(use_vllm=False, vllm_mode="server", vllm_enable_sleep_mode=False))


@NO_CUDA
@needs_vllm
def test_server_mode_training_is_refused_without_cuda(tmp_path, capsys, no_loading):
    assert _train(tmp_path, "--vllm_mode", "server") == 2
    message = capsys.readouterr().err.strip()
    assert message.count("\n") == 0
    assert "vllm_mode: server" in message and "NCCL" in message and "CUDA" in message
    assert not (tmp_path / "out").exists()


@needs_vllm
def test_sleep_mode_is_refused_with_the_cpu_engine(tmp_path, capsys, no_loading):
    from countdown_rl.generation.vllm_sync import vllm_on_cpu

    if not vllm_on_cpu():
        pytest.skip("vLLM runs on a GPU here")
    assert _train(tmp_path, "--vllm_mode", "colocate", "--vllm_enable_sleep_mode", "true") == 2
    assert "vllm_enable_sleep_mode: vLLM's CPU backend has no sleep mode" in capsys.readouterr().err


@needs_vllm
def test_a_head_size_the_cpu_kernels_lack_is_refused_before_loading(tiny_model_dir, puzzles, tmp_path, capsys,
                                                                    no_loading):
    from countdown_rl.generation.vllm_sync import vllm_on_cpu

    if not vllm_on_cpu():
        pytest.skip("vLLM runs on a GPU here")
    code = main(["--config", SMOKE, "--model_name_or_path", str(tiny_model_dir), "--dataset_name", str(puzzles),
                 "--output_dir", str(tmp_path / "out"), "--use_vllm", "true", "--vllm_mode", "colocate"])
    assert code == 2
    err = capsys.readouterr().err
    assert "attention head size 16" in err and "vLLM's CPU backend runs head sizes [32, 64" in err


@needs_vllm
def test_serve_refuses_a_head_size_the_cpu_kernels_lack(tiny_model_dir, capsys):
    """``countdown-rl serve`` checks the model the same way, in one line, before any server starts."""
    from countdown_rl.cli import main as cli_main
    from countdown_rl.generation.vllm_sync import vllm_on_cpu

    if not vllm_on_cpu():
        pytest.skip("vLLM runs on a GPU here")
    assert cli_main(["serve", "--model", str(tiny_model_dir), "--port", "8000"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("countdown-rl serve: error: --model") and "head size 16" in err
