"""How much of a generated Countdown pool the best target-blind rule solves, per sampling and shape (pure Python).

1. Pools: ``--puzzles`` puzzles of each shape (``demo``, the demo's: 3 numbers in 1..20, targets 1..50;
   ``reference``, the reference setup's: 3-4 numbers in 1..99, targets 1..100) at each of ``--seeds``, from
   ``generate_countdown`` with ``sampling="expression"`` (the pools of every figure before balanced sampling) and
   ``"balanced"``.
2. For each pool: the best target-blind rule (``tasks/countdown/blind.py``: the fixed expression over the numbers,
   as given or sorted largest first, that solves the most puzzles of each count), its accuracy on the pool, the best
   template's share among the puzzles with as many numbers, and the generation time.
3. Printed: one Markdown row per shape x sampling (mean and range over the seeds), then the JSON rows.

Run from the repository root: ``python benchmarks/blind_rule.py`` (``--quick``: 300 puzzles, seed 0).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.ensure_repo_on_path()

SHAPES = {
    "demo": {"min_numbers": 3, "max_numbers": 3, "min_number": 1, "max_number": 20, "min_target": 1,
             "max_target": 50},
    "reference": {"min_numbers": 3, "max_numbers": 4, "min_number": 1, "max_number": 99, "min_target": 1,
                  "max_target": 100},
}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--puzzles", type=int, default=2000, help="puzzles per pool")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="generator seeds")
    parser.add_argument("--quick", action="store_true", help="300 puzzles, seed 0 (the test's smoke run)")
    args = parser.parse_args(argv)
    if args.quick:
        args.puzzles, args.seeds = 300, [0]
    return args


def measure(shape: str, sampling: str, seed: int, n: int) -> dict:
    from countdown_rl.tasks.countdown.blind import best_blind_rule, blind_shares
    from countdown_rl.tasks.countdown.puzzles import generate_countdown

    started = time.perf_counter()
    pool = generate_countdown(n, seed=seed, sampling=sampling, **SHAPES[shape])
    seconds = time.perf_counter() - started
    rule = best_blind_rule(pool)
    top = blind_shares(pool, top=1)
    return {"shape": shape, "sampling": sampling, "seed": seed, "puzzles": n, "rule": rule.describe(),
            "rule_accuracy": rule.accuracy, "best_template_share": {str(k): share for _, k, share in top},
            "generation_s": seconds}


def spread(values: list[float], scale: float = 100.0) -> str:
    mean = statistics.fmean(values) * scale
    return f"{mean:.1f}" if len(values) == 1 else f"{mean:.1f} ({min(values) * scale:.1f}-{max(values) * scale:.1f})"


def main(argv=None) -> int:
    args = parse_args(argv)
    rows = [measure(shape, sampling, seed, args.puzzles)
            for shape in SHAPES for sampling in ("expression", "balanced") for seed in args.seeds]
    table = []
    for shape in SHAPES:
        for sampling in ("expression", "balanced"):
            mine = [r for r in rows if r["shape"] == shape and r["sampling"] == sampling]
            counts = sorted({k for r in mine for k in r["best_template_share"]})
            table.append([
                shape, sampling, len(mine),
                spread([r["rule_accuracy"] for r in mine]),
                "; ".join(f"{k} numbers: {spread([r['best_template_share'][k] for r in mine])}" for k in counts),
                mine[0]["rule"],
                f"{statistics.fmean(r['generation_s'] for r in mine):.1f}",
            ])
    print(f"{args.puzzles} puzzles per pool, seeds {args.seeds}; percentages: mean (min-max) over the seeds\n")
    print(_common.markdown_table(
        ["shape", "sampling", "pools", "best target-blind rule, % of the pool",
         "best template, % of the puzzles with as many numbers", f"the rule (seed {args.seeds[0]})",
         "generation s"], table))
    print("\n" + json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
