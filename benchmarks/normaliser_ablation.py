"""The MATH ablations of the baseline and normalisation, replicated at toy scale on Countdown, offline on a CPU.

The MATH ablations (docs/sources.md) trained Qwen2.5-Math-1.5B on MATH (100 steps) and compared, by final validation
accuracy: group baseline vs none (40.6% vs 38.3%), and the per-response ``masked_mean`` vs a constant normaliser, each
with std normalisation on and off (43.7 / 38.9 / 40.1 / 41.9). Here the same five variants run on the toy Countdown
setup of ``benchmarks/toy_replication.py``:

1. The SFT start: ``toy_replication``'s (the demo's tiny Qwen3, 2000 SFT steps on search traces); reused when
   ``--sft-from`` points at a toy replication's output (its ``sft/``), else trained here.
2. The data (``data/train.jsonl``: the 2000 RL puzzles, ``data/test.jsonl``: the 300 held-out ones) and a base
   recipe for ``countdown-rl train``: the toy replication's RL settings (4 prompts x 8 samples, lr 1e-4,
   temperature 0.7, beta 0, 450 steps) at one budget (``--budget``, default 64 tokens: one wrong attempt fits).
3. One sweep (``mode: zip`` over ``baseline``, ``reduction``, ``std_normalization``; ``--seeds``), run with
   ``countdown-rl sweep`` (``--jobs N``: N runs at a time, as array tasks would).
4. The table: each variant's final greedy accuracy on the 300 held-out puzzles (mean +- sd over seeds) beside the
   MATH ablations', and the paired differences they draw conclusions from (exact McNemar test on the same puzzles,
   pooled over seeds). Written to ``<output-dir>/normaliser_ablation.{md,json}`` with the sweep's report.

    python benchmarks/normaliser_ablation.py --sft-from outputs/toy-replication   # ~1 h on 2 CPU cores
    python benchmarks/normaliser_ablation.py --quick                              # smoke check (< 1 min)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from _studies import run_sweeps, write_yaml  # noqa: E402

# name -> (baseline, reduction, std_normalization, the MATH ablations' final accuracy in %)
VARIANTS = {
    "masked_mean_std": ("group_mean", "masked_mean", "group", 43.70),
    "masked_mean_no_std": ("group_mean", "masked_mean", "none", 38.86),
    "constant_std": ("group_mean", "masked_mean_drgrpo", "group", 40.10),
    "constant_no_std": ("group_mean", "masked_mean_drgrpo", "none", 41.88),
    "no_baseline": ("none", "masked_mean", "none", 38.30),
}
# (A, B, what the MATH ablations concluded from A vs B, their A - B in points)
COMPARISONS = [
    ("masked_mean_no_std", "no_baseline", "a baseline helps (40.6 vs 38.3 in the MATH ablations' Experiment 1)", 2.30),
    ("masked_mean_std", "constant_std", "with std: masked_mean beats the constant normaliser", 3.60),
    ("constant_no_std", "masked_mean_no_std", "without std: the constant normaliser beats masked_mean", 3.02),
    ("masked_mean_std", "masked_mean_no_std", "std normalisation helps masked_mean", 4.84),
    ("constant_no_std", "constant_std", "std normalisation slightly hurts the constant normaliser", 1.78),
]


def variant_of(values: dict) -> str:
    key = (values["baseline"], values["reduction"], values["std_normalization"])
    return next(name for name, v in VARIANTS.items() if v[:3] == key)


def prepare_start(args) -> tuple[Path, Path, dict]:
    """The SFT model folder and the data folder (train / test JSONL) of the toy replication."""
    import toy_replication

    from countdown_rl.demo import stages as demo
    from countdown_rl.demo.run_dir import setup_environment
    from countdown_rl.data.jsonl import write_jsonl

    out = Path(args.output_dir)
    config = toy_replication.replication_config(argparse.Namespace(
        quick=args.quick, output_dir=str(args.sft_from or out / "toy"), seed=0, resume=True, max_steps=None,
        threads=None))  # the toy replication's own threads (the demo's 2): its SFT start, reusable as made there
    setup_environment(config.num_threads)
    warm = demo.warm_start(config)  # reuses a finished SFT stage made with the same settings
    data = out / "data"
    write_jsonl(warm.puzzles["rl"], data / "train.jsonl")
    write_jsonl(warm.puzzles["eval"], data / "test.jsonl")
    return warm.sft_dir, data, {"config": config, "num_eval": len(warm.puzzles["eval"])}


def base_recipe(sft_dir: Path, data: Path, num_eval: int, config, args) -> dict:
    """The toy replication's RL stage (``demo.rl_recipe``) as a ``countdown-rl train`` recipe."""
    steps = config.max_steps if args.steps is None else args.steps
    return {
        "model_name_or_path": str(sft_dir), "dtype": "float32",
        "task": "countdown", "dataset_name": str(data), "dataset_split": "train",
        "eval_dataset_split": "test", "test_size": num_eval, "prompt_template": "r1_zero",
        "reward_funcs": ["countdown"],
        "algorithm": "grpo", "beta": 0.0, "num_iterations": 1,
        "use_vllm": False, "max_completion_length": args.budget, "temperature": config.temperature,
        "num_generations": config.num_generations,
        "per_device_train_batch_size": config.prompts_per_step * config.num_generations,
        "gradient_accumulation_steps": 1, "per_device_eval_batch_size": 64,
        "use_cpu": True, "bf16": False, "gradient_checkpointing": False,
        "learning_rate": config.grpo_learning_rate, "lr_scheduler_type": "constant", "warmup_steps": 0,
        "weight_decay": 0.0, "max_grad_norm": 1.0, "max_steps": steps,
        "eval_strategy": "steps", "eval_steps": max(1, min(config.eval_steps, steps)),
        "eval_subset_size": config.in_training_eval,
        "logging_steps": 1, "save_strategy": "steps", "save_steps": max(1, min(config.save_steps, steps)),
        "save_total_limit": 1, "report_to": "none", "push_to_hub": False, "disable_tqdm": True,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default="outputs/normaliser-ablation")
    parser.add_argument("--sft-from", help="a toy replication's --output-dir whose SFT stage to reuse")
    parser.add_argument("--budget", type=int, default=64, help="completion budget in tokens (default 64)")
    parser.add_argument("--steps", type=int, help="RL steps per run (default: the toy replication's 450)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="seeds per variant (default 0 1)")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time (default 1: one after another)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads per run (default 2)")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), help="default: all five (--quick: two)")
    parser.add_argument("--prepare-only", action="store_true", help="write data, recipe and spec; run nothing")
    parser.add_argument("--quick", action="store_true", help="smoke check: tiny sizes, 3 steps, 1 seed")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.seeds, args.jobs = args.steps or 2, args.seeds[:1], max(args.jobs, 2)
        args.variants = args.variants or ["masked_mean_std", "constant_no_std"]
    started = time.time()
    out = Path(args.output_dir)
    sft_dir, data, start = prepare_start(args)
    config = start["config"]
    recipe = write_yaml(out / "base.yaml", base_recipe(sft_dir, data, start["num_eval"], config, args))
    names = args.variants or list(VARIANTS)
    spec = write_yaml(out / "sweep.yaml", {
        "name": "normaliser-ablation", "base": str(recipe), "output_root": str(out / "runs"), "mode": "zip",
        "seeds": args.seeds,
        "axes": {"baseline": [VARIANTS[n][0] for n in names], "reduction": [VARIANTS[n][1] for n in names],
                 "std_normalization": [VARIANTS[n][2] for n in names]},
    })
    if args.prepare_only:
        from countdown_rl.sweeps.spec import prepare

        _, runs = prepare(spec)
        print(f"prepared {len(runs)} runs: countdown-rl sweep {spec} (or --index 0..{len(runs) - 1})")
        return 0
    codes = run_sweeps([spec], jobs=args.jobs, threads=args.threads)
    if 2 in codes.values():  # the spec was refused (the one-line error is above): nothing ran
        return 2
    return summarise(out, args, time.time() - started, codes)


def summarise(out: Path, args, wall: float, codes: dict) -> int:
    from countdown_rl.files import render_markdown_table, write_json_atomic
    from countdown_rl.sweeps.report import mean_sd, paired_test, write_sweep_report

    sweep = write_sweep_report(out / "runs", out / "runs" / "report")
    by_variant = {}
    for point in sweep.points():
        runs = sweep.of_point(point)
        accs = [100 * r.accuracy for r in runs if r.accuracy is not None]
        by_variant[variant_of(runs[0].values)] = {"point": point, "accuracies": accs}
    rows, table = [], []
    for name, (_, _, _, theirs) in VARIANTS.items():
        if name not in by_variant:
            continue
        accs = by_variant[name]["accuracies"]
        mean, sd, _ = mean_sd(accs)
        rows.append({"variant": name, "reported_pct": theirs, "toy_pct": accs, "toy_mean_pct": mean, "toy_sd_pct": sd})
        table.append([name, f"{theirs:.2f}%", "—" if mean is None else f"{mean:.1f}%" + ("" if sd is None else
                      f" ± {sd:.1f}"), ", ".join(f"{a:.1f}" for a in accs)])
    comparisons, ctable = [], []
    for a, b, claim, theirs in COMPARISONS:
        if a not in by_variant or b not in by_variant:
            continue
        test = paired_test(sweep, by_variant[a]["point"], by_variant[b]["point"])
        ma, mb = (next(r["toy_mean_pct"] for r in rows if r["variant"] == n) for n in (a, b))
        diff = None if ma is None or mb is None else ma - mb
        comparisons.append({"a": a, "b": b, "claim": claim, "reported_points": theirs, "toy_points": diff, **test})
        ctable.append([f"{a} − {b}", claim, f"{theirs:+.2f}", "—" if diff is None else f"{diff:+.1f}",
                       f"{test['only_a']} / {test['only_b']} of {test['pairs']}", f"{test['p_value']:.3f}"])
    per_run = [r.seconds for r in sweep.results if r.seconds is not None]
    md = "\n".join([
        f"# The MATH ablations at toy scale ({len(args.seeds)} seed(s), budget {args.budget} tokens)", "",
        render_markdown_table(["variant", "MATH ablations (final)", "toy (held-out, mean ± sd)", "per seed"], table),
        "", render_markdown_table(["difference", "the MATH ablations' conclusion", "MATH ablations (points)",
                                   "toy (points)", "solved only by A / only by B (pairs)", "McNemar p"], ctable), "",
        f"Runs: {len(per_run)} finished, {sum(per_run):.0f} s of run time in all ({args.jobs} at a time, "
        f"{args.threads} threads each); wall time {wall:.0f} s.", ""])
    write_json_atomic(out / "normaliser_ablation.json", {
        "variants": rows, "comparisons": comparisons, "run_seconds": per_run, "wall_seconds": round(wall, 1),
        "seeds": args.seeds, "budget": args.budget, "exit_codes": codes})
    (out / "normaliser_ablation.md").write_text(md, encoding="utf-8")
    print(md)
    return max(codes.values(), default=0)


if __name__ == "__main__":
    from countdown_rl.generation.vllm_import import leave_vllm_out

    leave_vllm_out()  # nothing here generates with vLLM: its engine stays out of this process
    sys.exit(main())
