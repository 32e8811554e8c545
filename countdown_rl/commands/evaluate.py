"""``countdown-rl eval``: score a model, checkpoint, LoRA adapter or Hub id on a task's held-out rows.

1. Check the arguments (model path, budgets, sampling, task and its options) and load the dataset's held-out
   split with the same data keys, dedupe and split as training, or with ``--all_rows`` every row of the split as
   given (a whole file of puzzles; no split flag then)
   (:class:`countdown_rl.data.arguments.DataArguments`, whose fields are this command's data flags;
   :mod:`countdown_rl.evaluation.inputs`), so no training row is scored; with ``--backend compiled``, check the
   tokenizer's pad/EOS ids and the static cache length against config.json. Every error here is one line, exit
   code 2, before any model is loaded.
2. Load the model (:func:`countdown_rl.models.loading.load_evaluated_model`): a folder or Hub id with transformers,
   or a LoRA adapter folder (``adapter_config.json``) as base + adapter with peft, merged for generation; vLLM gets
   a path (a merged copy for adapters).
3. Generate once at the largest budget and score every budget
   (:func:`countdown_rl.evaluation.scoring.evaluate_budgets`).
4. Write ``eval.json``, ``eval.md`` and ``samples.jsonl`` to ``--output_dir`` and print the Markdown table.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from types import MappingProxyType
from typing import get_type_hints

from countdown_rl.commands.one_line import OneLineArgumentParser, examples, fail
from countdown_rl.data.arguments import DataArguments
from countdown_rl.evaluation.inputs import compiled_generation_for, held_out_rows, resolve_backend
from countdown_rl.generation.backends import evaluation_backends
from countdown_rl.models.loading import load_evaluated_model, load_tokenizer
from countdown_rl.models.source import check_model, is_local_path, resolve_model_source

PROG = "countdown-rl eval"
DTYPES = ("auto", "float32", "bfloat16", "float16")
# The flags that choose a held-out split: --all_rows, which scores every row, refuses them.
SPLIT_FLAGS = ("test_size", "eval_dataset_split", "split_method", "split_seed")
_UNSET = object()


class UsageError(ValueError):
    """A problem with the command line or the data, reported as one line with exit code 2."""


# Short spellings from before the data flags came from DataArguments: deprecated (one-line warning, hidden from
# --help), kept for one release.
_DEPRECATED_DATA_FLAGS = {"dataset_name": ["--dataset"], "prompt_template": ["--template"]}


def _add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per :class:`DataArguments` field, made by ``HfArgumentParser`` as ``countdown-rl train``'s recipe
    parser makes it (type, nargs, default, choices, help), so ``eval`` holds out exactly what ``train`` held out."""
    from transformers import HfArgumentParser

    group = parser.add_argument_group("data (the same keys as the training recipe)")
    types = get_type_hints(DataArguments)  # HfArgumentParser needs the annotations resolved, not as strings
    for f in fields(DataArguments):
        f = copy.copy(f)  # the class's own fields stay as they are
        f.type = types[f.name]
        if f.name in _DEPRECATED_DATA_FLAGS:  # HfArgumentParser passes metadata on to the group's add_argument
            f.metadata = MappingProxyType({**f.metadata, "deprecated": _DEPRECATED_DATA_FLAGS[f.name]})
        HfArgumentParser._parse_dataclass_field(group, f)


def data_arguments(args: argparse.Namespace) -> DataArguments:
    """The :class:`DataArguments` of parsed ``eval`` flags."""
    return DataArguments(**{f.name: getattr(args, f.name) for f in fields(DataArguments)})


def build_parser() -> argparse.ArgumentParser:
    """The ``countdown-rl eval`` argument parser."""
    p = OneLineArgumentParser(
        prog=PROG,
        description="Evaluate a model, checkpoint, LoRA adapter or Hub id on a task's held-out rows (the rows the "
        "training recipe with the same data flags held out), or on every row of a file with --all_rows.",
        epilog=examples(
            "countdown-rl eval --model_name_or_path outputs/demo/grpo --dataset_name puzzles.jsonl --all_rows",
            "countdown-rl eval --model_name_or_path Qwen/Qwen3-1.7B --max_completion_length 256 512 1024 "
            "--output_dir outputs/zero_shot",
            "countdown-rl eval --model_name_or_path outputs/countdown/qwen3-1.7b/grpo_512   its recipe's held-out rows",
        ),
    )
    p.add_argument("--model_name_or_path", required=True, deprecated=["--model"],
                   help="Hub id, model folder, checkpoint folder or LoRA adapter folder (has adapter_config.json)")
    _add_data_arguments(p)
    p.add_argument("--all_rows", action="store_true",
                   help="score every row of --dataset_split as given (e.g. a whole .jsonl file of puzzles): no "
                   "held-out split, so not with --test_size, --eval_dataset_split, --split_method or --split_seed")
    p.add_argument("--num_rows", type=int, default=None, deprecated=["--num_puzzles"],
                   help="score only the first N held-out rows (default: all)")
    p.add_argument("--max_completion_length", type=int, nargs="+", default=[256, 512, 1024],
                   deprecated=["--max_tokens"],
                   help="token budgets (max new tokens); one generation serves all (default: 256 512 1024)")
    p.add_argument("--backend", choices=["auto", *evaluation_backends()], default="auto",
                   help="auto: vllm when installed and CUDA is available, else compiled (static cache + "
                   "torch.compile) on CUDA, else transformers")
    p.add_argument("--vllm_server_url", default=None,
                   help="evaluate against a running vLLM server (trl vllm-serve) at this address, e.g. "
                   "http://127.0.0.1:8000; --model_name_or_path names the model it serves (its tokenizer is loaded "
                   "here); implies --backend vllm")
    p.add_argument("--vllm_enforce_eager", action="store_true",
                   help="vllm backend: run the model eagerly, without vLLM's torch.compile of it (nor CUDA graphs): "
                   "the engine starts in seconds where compiling takes a minute or two on a CPU, and decodes slower; "
                   "for a few puzzles (default: compile, as TRL starts vLLM)")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    p.add_argument("--num_samples", type=int, default=1,
                   help="samples per puzzle for pass@k (needs --temperature > 0)")
    p.add_argument("--batch_size", type=int, default=32,
                   help="sequences per generation batch (transformers backend; default 32)")
    p.add_argument("--enable_thinking", action=argparse.BooleanOptionalAction, default=None,
                   help="chat templates: pass enable_thinking to the template (Qwen3); default: leave unset")
    p.add_argument("--dtype", choices=DTYPES, default="auto",
                   help="model weights dtype (default: auto: the model's own; with --backend vllm on a CPU, bfloat16 "
                   "where it has bf16 kernels, else float32, never vLLM's auto, which is bfloat16 on every x86 CPU)")
    p.add_argument("--device", default=None, help="transformers device (default: cuda if available, else cpu)")
    p.add_argument("--output_dir", default=None,
                   help="default: <model folder>/eval for local models, eval_results/<id> for Hub ids")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--no_progress", action="store_true", help="no progress bars")
    return p


def default_output_dir(model: str) -> Path:
    """``<model folder>/eval`` for a local model, ``eval_results/<sanitised id>`` for a Hub id.

    >>> str(default_output_dir("Qwen/Qwen2.5-3B-Instruct"))
    'eval_results/Qwen__Qwen2.5-3B-Instruct'
    """
    if is_local_path(model):
        return Path(model).expanduser() / "eval"
    return Path("eval_results") / re.sub(r"[^\w.-]+", "_", model.replace("/", "__"))


def check_args(args: argparse.Namespace) -> None:
    """Argument checks that need no data and no model."""
    split_flags = getattr(args, "split_flags", [])
    if args.all_rows and split_flags:
        given = ", ".join(f"--{name}" for name in split_flags)
        raise UsageError(f"--all_rows scores every row, with no held-out split: drop {given}")
    try:  # a GGUF file or packaged model name; a folder that is not there or is a file, or a Hub id while offline
        # and not in the cache (models.source)
        check_model(args.model_name_or_path, "--model_name_or_path")
    except ValueError as err:
        raise UsageError(str(err)) from None
    if args.output_dir and Path(args.output_dir).exists() and not Path(args.output_dir).is_dir():
        raise UsageError(f"--output_dir {args.output_dir}: exists and is not a folder")
    bad = [b for b in args.max_completion_length if b <= 0]
    if bad:
        raise UsageError(f"--max_completion_length: budgets must be positive, got {bad[0]}")
    if args.temperature < 0:
        raise UsageError(f"--temperature: must be >= 0, got {args.temperature}")
    if args.num_samples < 1:
        raise UsageError(f"--num_samples: must be >= 1, got {args.num_samples}")
    if args.num_samples > 1 and args.temperature == 0:
        raise UsageError(f"--num_samples {args.num_samples} needs --temperature > 0 (greedy samples are identical)")
    if args.num_rows is not None and args.num_rows <= 0:
        raise UsageError(f"--num_rows: must be positive, got {args.num_rows}")
    if args.batch_size <= 0:
        raise UsageError(f"--batch_size: must be positive, got {args.batch_size}")
    try:
        data_arguments(args).check()
    except ValueError as err:
        raise UsageError(f"--{err}") from None


def _usage(function, *args, **kwargs):
    """``function``'s one-line ValueError (a library's) as this command's UsageError."""
    try:
        return function(*args, **kwargs)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _check_vllm_model(path: str) -> None:
    """vLLM's CPU kernels run some attention head sizes only: one line before the engine starts."""
    from countdown_rl.generation.vllm_sync import check_cpu_engine_model

    try:
        check_cpu_engine_model(path, "--model_name_or_path")
    except ValueError as err:
        raise UsageError(str(err)) from None


def _check_server(url: str, model: str) -> None:
    from countdown_rl.generation.vllm_server import check_server

    try:
        check_server(url, model)
    except ValueError as err:
        raise UsageError(str(err)) from None


@contextmanager
def _progress_bars(enabled: bool):
    """datasets (split, select) and transformers (weight loading) draw bars of their own: switch them off with
    ``--no_progress``, and back as they were afterwards (``main`` also runs inside other programs and tests)."""
    if enabled:
        yield
        return
    import datasets
    from transformers.utils import logging as hf_logging

    was = datasets.is_progress_bar_enabled(), hf_logging.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was[0]:
            datasets.enable_progress_bars()
        if was[1]:
            hf_logging.enable_progress_bar()



def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """``eval``'s flags; ``args.split_flags`` names the split flags given on the command line (even at their
    default value), which ``--all_rows`` refuses."""
    parser = build_parser()
    args = parser.parse_args(argv, namespace=argparse.Namespace(**dict.fromkeys(SPLIT_FLAGS, _UNSET)))
    args.split_flags = [name for name in SPLIT_FLAGS if getattr(args, name) is not _UNSET]
    for name in SPLIT_FLAGS:
        if getattr(args, name) is _UNSET:  # argparse leaves a preset attribute alone: the default goes in here
            setattr(args, name, parser.get_default(name))
    return args


def main(argv: list[str] | None = None) -> int:
    """Run ``countdown-rl eval``; returns the exit code."""
    args = parse_args(argv)
    with _progress_bars(not args.no_progress):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        check_args(args)
        backend = _usage(resolve_backend, "vllm" if args.vllm_server_url else args.backend, args.device)
        if args.vllm_enforce_eager and (backend != "vllm" or args.vllm_server_url):
            raise UsageError("--vllm_enforce_eager: only for an engine of this command's own (--backend vllm, "
                             f"not {'--vllm_server_url' if args.vllm_server_url else 'backend ' + backend})")
        rows = _usage(held_out_rows, data_arguments(args), args.num_rows, all_rows=args.all_rows)
        given = args.model_name_or_path
        source = resolve_model_source(given, "--model_name_or_path")  # a GGUF file: converted once to a checkpoint
        args.model_name_or_path = source.path
        if args.vllm_server_url:  # up, and serving this model: one line if not, before anything loads
            _check_server(args.vllm_server_url, args.model_name_or_path)
        elif backend == "vllm" and (Path(args.model_name_or_path) / "config.json").is_file():
            _check_vllm_model(args.model_name_or_path)
        compiled = None
        if backend == "compiled":  # pad/EOS ids and the static cache length, before the weights load
            chat_kwargs = {} if args.enable_thinking is None else {"enable_thinking": args.enable_thinking}
            compiled = _usage(compiled_generation_for, args.model_name_or_path, data_arguments(args).get_task(),
                              rows, template=args.prompt_template, max_tokens=max(args.max_completion_length),
                              chat_template_kwargs=chat_kwargs)
    except UsageError as err:
        return fail(PROG, str(err))

    from countdown_rl.evaluation.eval_files import EVAL_JSON, EVAL_MD, SAMPLES_JSONL, eval_meta, write_eval_outputs
    from countdown_rl.evaluation.scoring import evaluate_budgets, markdown_table
    from countdown_rl.generation.vllm_settings import bind_every_core, engine_settings
    from countdown_rl.generation.vllm_sync import vllm_on_cpu

    try:
        if args.vllm_server_url:  # the server holds the model; only its tokenizer is needed here
            model, tokenizer = args.vllm_server_url, load_tokenizer(args.model_name_or_path)
        else:
            if backend == "vllm" and vllm_on_cpu():  # the engine's worker on every core, not one kept aside
                bind_every_core()
            model, tokenizer = load_evaluated_model(
                args.model_name_or_path, dtype=args.dtype, device=args.device, for_vllm=backend == "vllm",
                seed=args.seed, vllm_kwargs={"enforce_eager": True} if args.vllm_enforce_eager else None,
            )
    except (OSError, ValueError) as err:
        fail(PROG, f"cannot load model {args.model_name_or_path}: {err}")
        return 1
    chat_kwargs = {} if args.enable_thinking is None else {"enable_thinking": args.enable_thinking}
    evaluated = evaluate_budgets(
        model,
        tokenizer,
        rows,
        budgets=args.max_completion_length,
        task=data_arguments(args).get_task(),
        template=args.prompt_template,
        batch_size=args.batch_size,
        temperature=args.temperature,
        num_samples=args.num_samples,
        seed=args.seed,
        backend=backend,
        chat_template_kwargs=chat_kwargs,
        show_progress=not args.no_progress,
        compiled=compiled,
    )
    results = [result for result, _ in evaluated]
    output_dir = Path(args.output_dir) if args.output_dir else default_output_dir(given)
    data = data_arguments(args)
    task = data.get_task()
    meta = eval_meta(
        task=task.name,
        task_options=data.task_options,
        model=given,
        **({"model_source": source.conversion} if source.conversion else {}),
        **({"vllm_server_url": args.vllm_server_url} if args.vllm_server_url else {}),
        **({"vllm_enforce_eager": True} if args.vllm_enforce_eager else {}),
        dataset=data.dataset_name or task.default_dataset,
        source_split=data.dataset_split,
        eval_dataset_split=data.eval_dataset_split,
        split_method="all rows" if args.all_rows else data.split_method,
        test_size=None if args.all_rows else data.test_size,
        split_seed=None if args.all_rows else data.split_seed,
        num_rows=len(rows),
        template=data.prompt_template or task.default_template,
        chat_template_kwargs=chat_kwargs,
        temperature=args.temperature,
        num_samples=args.num_samples,
        seed=args.seed,
        backend=backend,
        dtype=args.dtype,
        # what the engine runs at (the dtype "auto" became, its threads)
        **({"vllm_engine": engine_settings(model)} if backend == "vllm" and not args.vllm_server_url else {}),
    )
    write_eval_outputs(output_dir, results, {r.max_tokens: samples for r, samples in evaluated}, meta)
    print(markdown_table(results))
    print(f"\nwrote {output_dir / EVAL_JSON}, {output_dir / EVAL_MD} and {output_dir / SAMPLES_JSONL}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
