"""The real-model demo's RL step by part, and the RL stage's memory, for micro-batch and checkpointing settings.

1. The demo's rows and settings on ``--task`` at ``--seed`` (``demo.pretrained.pretrained_config``, placed as the
   demo places them: fp32 on a CPU without bf16 kernels), and its warm-up model (``--sft DIR``, or the demo's
   warm-up stage run first into ``OUT/sft``).
2. For each of ``--settings`` (:data:`SETTINGS`), in a process of its own: the demo's RL recipe
   (``demo.stages.rl_recipe``, rollouts as the demo's, its in-training evaluation and checkpoints every ``--every``
   steps) for ``--steps`` steps into ``OUT/<setting>``, the parts of each step timed in that process
   (``_common.StepTimer``): the rollouts (``generate``), the rest of scoring (the old policy's no-grad log-probs
   for the engine's importance-sampling correction, the rewards), the loss's forward, and the backward with the
   optimizer step.
3. Every 0.5 s, the resident memory of that process and its children (the colocated vLLM engine runs in the
   process): the setting's peak, what a laptop must hold for the RL stage alone.
4. Printed and written to ``OUT/rl_step.json``: a table, seconds a step by part (median over the steps after the
   first) and the peak GB, a row a setting.

The settings change how a step's completions pass through the model, not the update (the same gradients up to float
rounding). From the repository root, with a warm-up model the demo made::

    python benchmarks/demo_rl_step.py --task reasoning_gym --seed 21 --sft OUT/seed-21/sft --out outputs/rl-step
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from demo_memory import tree_rss  # noqa: E402

_common.ensure_repo_on_path()

SETTINGS = {
    "micro16": {"per_device_train_batch_size": 16, "gradient_checkpointing": False},
    "micro16-checkpointing": {"per_device_train_batch_size": 16, "gradient_checkpointing": True},
    "micro8-checkpointing": {"per_device_train_batch_size": 8, "gradient_checkpointing": True},
    "micro8": {"per_device_train_batch_size": 8, "gradient_checkpointing": False},
}
"""Demo overrides a setting makes (``DemoConfig`` fields)."""
PARTS = ("generate", "scoring", "forward", "backward", "step")


def parse_args(argv=None):
    parser = _common.demo_stage_parser(__doc__, "the demo's model (a name or a folder)",
                                       "a warm-up model folder to start from (default: run the demo's warm-up)")
    parser.add_argument("--task", default="reasoning_gym", help="the demo's task")
    parser.add_argument("--out", type=Path, default=Path("outputs/rl-step"), help="output folder")
    parser.add_argument("--steps", type=int, default=3, help="RL steps a setting")
    parser.add_argument("--every", type=int, default=2, help="in-training evaluation and checkpoint every N steps")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS),
                        help="the settings to run, in order")
    parser.add_argument("--one", choices=list(SETTINGS), default=None, help=argparse.SUPPRESS)  # a child's setting
    args = parser.parse_args(argv)
    for name in ("steps", "every"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    return args


def demo_config(args, **overrides):
    """The demo's settings as ``countdown-rl demo --model_name_or_path MODEL --task TASK --seed SEED`` runs them (the
    task's default options, as the command takes them), ``overrides`` on top, placed."""
    from countdown_rl.demo.config import placed
    from countdown_rl.demo.pretrained import pretrained_config
    from countdown_rl.demo.task_rows import demo_options

    options, transfer = demo_options(args.task)  # Countdown: none
    return placed(pretrained_config(args.model, task=args.task, seed=args.seed, output_dir=str(args.out),
                                    task_options=options, transfer_options=transfer, **overrides))


def step_parts(steps: list[dict[str, float]]) -> dict[str, float]:
    """Median seconds a step by part over ``steps`` (``_common.StepTimer`` rows).

    >>> step_parts([{"step": 10, "training_step": 9, "gen_and_score": 5, "generate": 3, "loss": 1}])["backward"]
    4.0
    """
    parts = []
    for row in steps:
        scoring = row.get("gen_and_score", 0.0)
        parts.append({"generate": row.get("generate", 0.0), "scoring": scoring - row.get("generate", 0.0),
                      "forward": row.get("loss", 0.0),
                      "backward": row["step"] - scoring - row.get("loss", 0.0), "step": row["step"]})
    return {part: float(_common.median(row[part] for row in parts)) for part in PARTS}


def run_one(args) -> None:
    """One setting in this process: the demo's RL recipe for ``--steps`` steps, its parts timed; JSON on stdout's
    last line."""
    from countdown_rl.demo.pretrained import choose_backends, demo_rows, rollout_keys
    from countdown_rl.demo.run_dir import setup_environment
    from countdown_rl.demo.stages import demo_record, rl_recipe, train_rl
    from countdown_rl.generation.vllm_settings import bind_every_core
    from countdown_rl.training.trainer import CountdownGRPOTrainer

    config, _ = demo_config(args, **SETTINGS[args.one])
    setup_environment(config.num_threads)
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # as the demo
    if config.device == "cpu":
        bind_every_core()
    rows = demo_rows(config)
    sft_dir = Path(args.sft)
    backend, _, _ = choose_backends(str(sft_dir), device=config.device)
    run_dir = args.out / args.one
    recipe = rl_recipe(config, sft_dir, run_dir, num_eval=len(rows.parts["eval"]), generation=rollout_keys(backend),
                       final_eval=False)
    recipe.update({"max_steps": args.steps, "save_steps": args.every, "eval_steps": args.every, "resume": False,
                   "overwrite_output_dir": True})
    timer = _common.StepTimer()
    init = CountdownGRPOTrainer.__init__

    def instrumented(self, *a, **k):  # the pipeline builds the trainer: time its parts once it exists
        init(self, *a, **k)
        timer.instrument(self, ("training_step", "gen_and_score", "generate", "loss"))

    CountdownGRPOTrainer.__init__ = instrumented
    started = time.perf_counter()
    train_rl(recipe, rows.parts["rl"], rows.parts["eval"], show_progress=False,
             record=demo_record(sft_dir, rows.dataset, rows.parts, {"benchmark": "demo_rl_step"}),
             callbacks=[timer.callback()])
    result = {"setting": args.one, **SETTINGS[args.one], "backend": backend, "steps": len(timer.steps),
              "stage_s": time.perf_counter() - started, "per_step": timer.steps,
              "parts": step_parts(timer.measured(1) or timer.steps)}
    print(json.dumps(result), flush=True)


def run_setting(args, name: str) -> dict:
    """``name`` in a child process, its resident memory (with its children's) sampled every 0.5 s."""
    argv = [sys.executable, __file__, "--one", name, "--model", args.model, "--task", args.task, "--seed",
            str(args.seed), "--sft", str(args.sft), "--out", str(args.out), "--steps", str(args.steps), "--every",
            str(args.every)]
    log = args.out / f"{name}.log"
    peak, done = [0], threading.Event()
    with log.open("w", encoding="utf-8") as out:
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)

        def sample():
            while not done.wait(0.5):
                peak[0] = max(peak[0], tree_rss(child.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        code = child.wait()
        done.set()
        sampler.join()
    if code != 0:
        raise SystemExit(f"setting {name}: exit {code}, see {log}")
    lines = [line for line in log.read_text(encoding="utf-8").splitlines() if line.startswith("{\"setting\"")]
    return {**json.loads(lines[-1]), "peak_gb": peak[0] / 1e9}


def main(argv=None) -> None:
    args = parse_args(argv)
    _common.quiet_hf()
    if args.one:
        run_one(args)
        return
    from countdown_rl.demo.config import placement_line
    from countdown_rl.demo.pretrained import demo_rows, sft_stage
    from countdown_rl.files import write_json_atomic
    from countdown_rl.models.source import resolve_model_source

    args.out.mkdir(parents=True, exist_ok=True)
    config, placement = demo_config(args)
    print(placement_line(placement), flush=True)
    if args.sft is None:
        args.sft = args.out / "sft"
        started = time.perf_counter()
        sft_stage(config, demo_rows(config), Path(resolve_model_source(args.model, "--model").path), args.sft)
        print(f"warm-up: {time.perf_counter() - started:.0f} s -> {args.sft}", flush=True)
    results = []
    for name in args.settings:
        result = run_setting(args, name)
        results.append(result)
        parts = result["parts"]
        print(f"{name}: {parts['step']:.1f} s a step, peak {result['peak_gb']:.2f} GB", flush=True)
    write_json_atomic(args.out / "rl_step.json", {"task": args.task, "seed": args.seed, "sft": str(args.sft),
                                                  "steps": args.steps, "every": args.every, "settings": results})
    print()
    print(_common.markdown_table(
        ["setting", "micro-batch", "checkpointing", *(f"{part}, s" for part in PARTS), "peak GB"],
        [[r["setting"], r["per_device_train_batch_size"], "on" if r["gradient_checkpointing"] else "off",
          *(f"{r['parts'][part]:.1f}" for part in PARTS), f"{r['peak_gb']:.2f}"] for r in results]))


if __name__ == "__main__":
    main()
