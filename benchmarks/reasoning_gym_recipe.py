"""The reasoning-gym CPU recipe (``recipes/reasoning_gym/cpu_tiny.yaml``) at several seeds: the held-out accuracy of
its warm-up model and of the model RL makes from it, on the same rows, with a paired test, and each run's time.

Per seed ``S`` (each seed a whole run: its own rows, held-out rows, model and sampling):

1. The recipe with ``seed: S`` and ``split_seed: S`` (so the generated rows and the held-out split differ too),
   written to ``OUT/seed-S/recipe.yaml``.
2. ``countdown-rl warmup --config`` that recipe ``--seed S``: the tiny Qwen3 fine-tuned on the reference answers of
   the recipe's training rows (never its held-out rows).
3. ``countdown-rl train --config`` that recipe from the warm-up model.
4. ``countdown-rl eval`` of both models on the recipe's held-out rows (greedy), and the exact McNemar test of the RL
   model against the warm-up model on those rows. Beside them, the best constant answer: the one reference answer
   most frequent among the held-out rows, as a rule that never reads the question would answer every row. The run's time is the warm-up's plus training's (both commands
   whole, with their in-training evaluations); the two final evaluations are outside it.

Printed: a table a row a seed, then the mean gain and its spread over the seeds. Written: ``OUT/results.json``.
``--quick`` runs a few steps on a few rows (a smoke test of the script, not a measurement). From the repository
root::

    python benchmarks/reasoning_gym_recipe.py --seeds 0 1 2 --out outputs/reasoning-gym-recipe
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.ensure_repo_on_path()

RECIPE = _common.ROOT / "recipes" / "reasoning_gym" / "cpu_tiny.yaml"
WARMUP_STEPS = 600
"""The recipe's one-time setup: ``countdown-rl warmup --config ... --max_steps 600``."""
QUICK = {"max_steps": 2, "eval_steps": 1, "eval_subset_size": 4, "num_generated_rows": 200, "test_size": 8,
         "save_steps": 2}
# The held-out rows' columns that name a row: the two evaluations must be of the same rows, in the same order.
ROW_KEYS = ("question", "source")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="run seeds (default 0 1 2)")
    parser.add_argument("--out", type=Path, required=True, help="output folder (one sub-folder a seed)")
    parser.add_argument("--recipe", type=Path, default=RECIPE, help=f"the recipe (default {RECIPE.relative_to(_common.ROOT)})")
    parser.add_argument("--warmup_steps", type=int, default=WARMUP_STEPS,
                        help=f"SFT steps of the warm-up (default {WARMUP_STEPS}, the recipe's setup)")
    parser.add_argument("--quick", action="store_true", help="a few steps on a few rows: a smoke test of the script")
    args = parser.parse_args(argv)
    if args.warmup_steps <= 0:
        parser.error("--warmup_steps must be positive")
    if len(set(args.seeds)) != len(args.seeds):
        parser.error(f"--seeds {' '.join(map(str, args.seeds))}: a seed is given twice")
    return args


def countdown_rl(argv: list[str], log: Path) -> float:
    """Run one ``countdown-rl`` command (its output to ``log``); its wall time in seconds. A failure is an error
    naming the command and the log."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
           "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(_common.ROOT)}
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        done = subprocess.run([sys.executable, "-m", "countdown_rl.cli", *argv], stdout=out, stderr=subprocess.STDOUT,
                              env=env, cwd=_common.ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"countdown-rl {' '.join(argv)} exited {done.returncode}; see {log}")
    return time.perf_counter() - start


def seed_recipe(recipe: Path, seed: int, quick: bool, path: Path) -> dict:
    """The recipe's keys for one seed, written to ``path``."""
    import yaml

    keys = yaml.safe_load(recipe.read_text(encoding="utf-8"))
    keys.update(seed=seed, split_seed=seed, **(QUICK if quick else {}))
    path.write_text(yaml.safe_dump(keys, sort_keys=False), encoding="utf-8")
    return keys


def eval_argv(keys: dict, model: Path, out: Path) -> list[str]:
    """``countdown-rl eval`` of ``model`` on the held-out rows of the recipe ``keys`` (its data keys, greedy)."""
    return ["eval", "--model_name_or_path", str(model), "--task", keys["task"], "--task_options", *keys["task_options"],
            "--dataset_name", keys["dataset_name"], "--num_generated_rows", str(keys["num_generated_rows"]),
            "--test_size", str(keys["test_size"]), "--split_seed", str(keys["split_seed"]),
            "--prompt_template", keys["prompt_template"], "--max_completion_length", str(keys["max_completion_length"]),
            "--output_dir", str(out), "--no_progress"]


def paired(before: Path, after: Path, budget: int) -> dict:
    """Accuracy of both evaluations and the McNemar test of ``after`` against ``before`` on the same rows."""
    from countdown_rl.evaluation.eval_files import read_samples
    from countdown_rl.evaluation.paired import paired_counts

    rows_before, rows_after = read_samples(before, budget), read_samples(after, budget)
    if [[r.get(k) for k in ROW_KEYS] for r in rows_before] != [[r.get(k) for k in ROW_KEYS] for r in rows_after]:
        raise ValueError(f"{before} and {after} hold different rows: no paired test")
    from collections import Counter

    from countdown_rl.tasks.reasoning_gym import source_entry

    references = Counter(source_entry(r["source"])[2]["answer"] for r in rows_before)
    best_constant = references.most_common(1)[0][1] / len(rows_before)
    correct_before = [r["outcome"] == "correct" for r in rows_before]
    correct_after = [r["outcome"] == "correct" for r in rows_after]
    counts = paired_counts(correct_after, correct_before)
    return {"before": sum(correct_before) / len(correct_before), "after": sum(correct_after) / len(correct_after),
            "best_constant": best_constant, **counts}


def run_seed(args: argparse.Namespace, seed: int) -> dict:
    out = args.out / f"seed-{seed}"
    out.mkdir(parents=True, exist_ok=True)
    recipe = out / "recipe.yaml"
    keys = seed_recipe(args.recipe, seed, args.quick, recipe)
    warm, rl = out / "warm", out / "rl"
    steps = 2 if args.quick else args.warmup_steps
    warmup_s = countdown_rl(["warmup", "--config", str(recipe), "--seed", str(seed), "--max_steps", str(steps),
                             "--output_dir", str(warm)] + (["--size", "test"] if args.quick else []), out / "warmup.log")
    train_s = countdown_rl(["train", "--config", str(recipe), "--model_name_or_path", str(warm), "--output_dir",
                            str(rl)], out / "train.log")
    for model, name in ((warm, "warm-eval"), (rl, "rl-eval")):
        countdown_rl(eval_argv(keys, model, out / name), out / f"{name}.log")
    result = {"seed": seed, "warmup_s": warmup_s, "train_s": train_s, "run_s": warmup_s + train_s,
              **paired(out / "warm-eval", out / "rl-eval", keys["max_completion_length"])}
    (out / "result.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def table(results: list[dict]) -> str:
    rows = [[r["seed"], f"{100 * r['best_constant']:.1f}%", f"{100 * r['before']:.1f}%", f"{100 * r['after']:.1f}%",
             f"{100 * (r['after'] - r['before']):+.1f}", f"{r['only_a']} / {r['only_b']}", f"{r['p_value']:.2g}",
             f"{r['run_s'] / 60:.1f} min"] for r in results]
    return _common.markdown_table(["seed", "best constant answer", "warm-up", "after RL", "gain (points)", "only RL / only warm-up",
                                   "McNemar p", "run time (warm-up + train)"], rows)


def main(argv=None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for seed in args.seeds:
        r = run_seed(args, seed)
        results.append(r)
        print(f"seed {seed}: warm-up {100 * r['before']:.1f}%, after RL {100 * r['after']:.1f}% "
              f"(McNemar p {r['p_value']:.2g}), {r['run_s'] / 60:.1f} min", flush=True)
    gains = [100 * (r["after"] - r["before"]) for r in results]
    spread = statistics.stdev(gains) if len(gains) > 1 else 0.0
    summary = {"recipe": str(args.recipe), "quick": args.quick, "warmup_steps": args.warmup_steps,
               "seeds": results, "mean_gain": statistics.mean(gains), "sd_gain": spread}
    (args.out / "results.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(table(results))
    print(f"\nmean gain {statistics.mean(gains):+.1f} points (sd {spread:.1f}) over {len(gains)} seed(s); "
          f"held-out rows a seed: {results[0]['rows']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
