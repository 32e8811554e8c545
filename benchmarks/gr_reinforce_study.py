"""The GR-REINFORCE study's GRPO hyper-parameter sweep, replicated on the format-copy toy task, offline on a CPU.

That study (docs/sources.md) swept five knobs on format copy (Qwen2.5-1.5B + LoRA) and compared GRPO (two clipped
passes per rollout) with GR-REINFORCE (one). Here, with the tiny Qwen3:

1. The start: ``countdown-rl warmup --task format_copy`` for 220 SFT steps (1-3-digit numbers): the model writes
   the tags and copies about a quarter of the numbers greedily (28% of the 100 held-out numbers), so RL has
   the +1.0 part of the reward left to learn.
2. The base recipe: 4 prompts x 8 samples per rollout, temperature 0.7, lr 5e-4, beta 0, epsilon 0.2,
   ``num_iterations`` 2, ``--rollouts`` rollouts per run (100): every run of every sweep sees the same number of
   rollouts, so a knob that adds optimizer steps per rollout (PPO epochs, smaller accumulation) gets more steps.
   Steps, evaluations (every 10 rollouts, greedy, all 100 held-out numbers), checkpoints and logging (once per
   rollout) are scaled by the optimizer steps per rollout.
3. Five sweeps (``specs/*.yaml``, ``countdown-rl sweep``), each over ``--seeds``:
   ``kl``: beta 0, 0.02, 0.05, 1 and 1e4 (for infinity); ``ppo_epochs``: num_iterations 1, 2, 4, 8, 16 (1 is
   GR-REINFORCE, 2 GRPO: that comparison is read from this sweep); ``clip``: epsilon 0.05, 0.2, 0.5 and 1e4 (no
   clipping); ``accumulation``: 1, 2, 6 and 12 accumulation steps of micro-batches of 4 at one rollout size of 48
   (12, 6, 2 and 1 optimizer steps per rollout pass); ``micro_batch``: micro-batches of 2 x 8, 4 x 4 and 16 x 1
   accumulation steps at one rollout of 16.
4. Per sweep, the report (``countdown-rl report``: the summary table and the study's five-panel figure) and the
   numbers the claims are judged by: final and best held-out accuracy, the largest drop between evaluations,
   rollout reward, mean clip fraction and the largest KL. Written to ``<output-dir>/gr_reinforce_study.{md,json}``.

    python benchmarks/gr_reinforce_study.py            # ~1 h on 2 CPU cores (--jobs: runs at a time)
    python benchmarks/gr_reinforce_study.py --quick    # smoke check (< 1 min)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from _studies import ROOT, run_sweeps, write_yaml  # noqa: E402

WARMUP = {"task": "format_copy", "task_options": ["max_digits=3"], "rows": 400, "steps": 220}
# sweep -> (zipped axes: recipe key -> values, fixed overrides, optimizer steps per rollout for each point)
ROLLOUT = 4 * 8  # completions per rollout in the base recipe (per_device 8 x accumulation 4)


def sweeps(beta_inf: float = 1e4, eps_inf: float = 1e4) -> dict[str, tuple[dict, dict, list[int]]]:
    """Each sweep's axes, overrides and optimizer steps per rollout (per point)."""
    return {
        "kl": ({"beta": [0.0, 0.02, 0.05, 1.0, beta_inf]}, {}, [2] * 5),
        "ppo_epochs": ({"num_iterations": [1, 2, 4, 8, 16]}, {}, [1, 2, 4, 8, 16]),
        "clip": ({"epsilon": [0.05, 0.2, 0.5, eps_inf]}, {}, [2] * 4),
        # a rollout of 48 = 12 micro-batches of 4; accumulation a -> 12 / a optimizer steps per pass, 2 passes
        "accumulation": ({"gradient_accumulation_steps": [1, 2, 6, 12]},
                         {"per_device_train_batch_size": 4, "generation_batch_size": 48}, [24, 12, 4, 2]),
        # a rollout of 16: micro 2 x 8, 4 x 4, 16 x 1 -> one optimizer step per pass, 2 passes
        "micro_batch": ({"per_device_train_batch_size": [2, 4, 16], "gradient_accumulation_steps": [8, 4, 1]},
                        {"generation_batch_size": 16}, [2, 2, 2]),
    }


def base_recipe(model: Path, args) -> dict:
    import yaml

    recipe = yaml.safe_load((ROOT / "recipes" / "format_copy" / "cpu_tiny.yaml").read_text(encoding="utf-8"))
    recipe.update({
        "model_name_or_path": str(model), "learning_rate": 5e-4, "temperature": 0.7, "num_iterations": 2,
        "eval_strategy": "steps", "eval_subset_size": 100, "final_eval_size": 100, "save_total_limit": 1,
        "disable_tqdm": True
    })
    for key in ("max_steps", "eval_steps", "save_steps", "logging_steps", "output_dir"):
        recipe.pop(key)
    return recipe


def spec_for(name: str, axes: dict, overrides: dict, per_rollout: list[int], base: Path, out: Path, args) -> dict:
    """A zip sweep over the axis values, with steps, evaluations, saves and logging scaled per point."""
    rollouts, every = args.rollouts, max(1, args.rollouts // 10)
    return {
        "name": f"gr-reinforce-{name}", "base": str(base), "output_root": str(out / "runs" / name), "mode": "zip",
        "seeds": args.seeds, "overrides": overrides, "label_axes": list(axes),
        "axes": {**axes, "max_steps": [k * rollouts for k in per_rollout],
                 "eval_steps": [k * every for k in per_rollout], "save_steps": [k * rollouts // 2 or 1 for k in per_rollout],
                 "logging_steps": list(per_rollout)},
    }


def warm_up(out: Path, steps: int) -> Path:
    from countdown_rl.commands.warmup import main as warmup

    model = out / "warm"
    if not (model / "config.json").is_file():
        code = warmup(["--task", WARMUP["task"], "--task-options", *WARMUP["task_options"], "--num_rows",
                       str(WARMUP["rows"]), "--max_steps", str(steps), "--output_dir", str(model)])
        if code:
            raise SystemExit(code)
    return model


def run_numbers(result) -> dict:
    """What a claim is judged by, from one run's own log history and final evaluation."""
    from countdown_rl.evaluation.report import series

    log = result.run.log_history if result.run else []
    _, acc = series(log, "accuracy", eval_metric=True)
    _, clip = series(log, "clip_ratio/region_mean")
    _, kl = series(log, "kl")
    drops = [a - b for a, b in zip(acc, acc[1:])]
    return {"final": result.accuracy, "best": max(acc, default=None), "max_drop": max(drops, default=None),
            "rollout_reward": result.rollout_reward, "clip": statistics.fmean(clip) if clip else None,
            "max_kl": max(kl, default=None)}


def _agg(values):
    from countdown_rl.sweeps.report import mean_sd

    mean, sd, _ = mean_sd(values)
    return "—" if mean is None else f"{mean:.3f}" + ("" if sd is None else f" ± {sd:.3f}")


def summarise(out: Path, names: list[str], args, wall: float) -> str:
    from countdown_rl.files import render_markdown_table, write_json_atomic
    from countdown_rl.sweeps.report import paired_test, write_sweep_report

    sections, data, per_run = [], {}, []
    for name in names:
        sweep = write_sweep_report(out / "runs" / name, out / "runs" / name / "report")
        per_run += [r.seconds for r in sweep.results if r.seconds is not None]
        rows, data[name] = [], {}
        for point in sweep.points():
            numbers = [run_numbers(r) for r in sweep.of_point(point) if r.accuracy is not None]
            data[name][point] = numbers
            label = sweep.of_point(point)[0].label
            rows.append([label, len(numbers)] + [_agg([n[k] for n in numbers]) for k in
                                                 ("final", "best", "max_drop", "rollout_reward", "clip", "max_kl")])
        sections += [f"## {name}", "", render_markdown_table(
            ["value", "seeds", "final held-out acc.", "best held-out acc.", "largest drop between evals",
             "rollout reward (last 10%)", "mean clip fraction", "largest KL"], rows), "",
            f"Figure: `runs/{name}/report/` (the study's five panels).", ""]
        if name == "ppo_epochs":
            points = sweep.points()
            test = paired_test(sweep, points[1], points[0])  # GRPO (2 passes) vs GR-REINFORCE (1)
            sections += [f"GRPO vs GR-REINFORCE (final held-out, paired over {test['pairs']} number x seed pairs): "
                         f"solved only by GRPO {test['only_a']}, only by GR-REINFORCE {test['only_b']}, "
                         f"McNemar p = {test['p_value']:.3f}.", ""]
            data["grpo_vs_reinforce"] = test
    sections += [f"Runs: {len(per_run)} finished, {sum(per_run):.0f} s of run time in all ({args.jobs} at a time, "
                 f"{args.threads} thread(s) each); wall time {wall:.0f} s.", ""]
    md = "\n".join([f"# The GR-REINFORCE study's sweep on format_copy ({args.rollouts} rollouts per run, "
                     f"seeds {args.seeds})", "",
                    *sections])
    write_json_atomic(out / "gr_reinforce_study.json", {"sweeps": data, "run_seconds": per_run, "wall_seconds": wall,
                                                       "rollouts": args.rollouts, "seeds": args.seeds})
    (out / "gr_reinforce_study.md").write_text(md, encoding="utf-8")
    return md


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default="outputs/gr-reinforce-study")
    parser.add_argument("--rollouts", type=int, default=100, help="rollouts per run (default 100)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds per value (default 0 1 2)")
    parser.add_argument("--sweeps", nargs="+", choices=list(sweeps()), help="default: all five")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time (default 1: one after another)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads per run (default 2)")
    parser.add_argument("--prepare-only", action="store_true", help="warm-up, recipe and specs; run nothing")
    parser.add_argument("--quick", action="store_true", help="smoke check: 20 warm-up steps, 1 rollout, 1 seed, "
                        "2 points of the micro_batch sweep side by side")
    args = parser.parse_args(argv)
    if args.quick:  # the micro_batch sweep's first and last points, side by side: two short runs
        args.rollouts, args.seeds, args.jobs = 1, args.seeds[:1], max(args.jobs, 2)
        args.sweeps = args.sweeps or ["micro_batch"]
    started = time.time()
    out = Path(args.output_dir)
    model = warm_up(out, 20 if args.quick else WARMUP["steps"])
    base = write_yaml(out / "base.yaml", base_recipe(model, args))
    names = args.sweeps or list(sweeps())
    specs = []
    for name in names:
        spec = spec_for(name, *sweeps()[name], base, out, args)
        if args.quick:
            spec["axes"] = {key: [values[0], values[-1]] for key, values in spec["axes"].items()}
        specs.append(write_yaml(out / "specs" / f"{name}.yaml", spec))
    if args.prepare_only:
        from countdown_rl.sweeps.spec import prepare

        for spec in specs:
            prepare(spec)
        print("prepared: " + " ".join(str(s) for s in specs))
        return 0
    codes = run_sweeps(specs, jobs=args.jobs, threads=args.threads)
    if 2 in codes.values():  # a spec was refused (the one-line error is above): nothing ran
        return 2
    print(summarise(out, names, args, time.time() - started))
    return max(codes.values(), default=0)


if __name__ == "__main__":
    from countdown_rl.generation.vllm_import import leave_vllm_out

    leave_vllm_out()  # nothing here generates with vLLM: its engine stays out of this process
    sys.exit(main())
