"""``countdown-rl report RUN_DIR... --output_dir REPORT_DIR``: tables, plots and samples from training runs.

``countdown-rl report SWEEP_DIR`` (a sweep's output_root, holding ``sweep.json``): the sweep's summary table and one
figure per axis (:mod:`countdown_rl.sweeps.report`), into ``SWEEP_DIR/report`` unless ``--output_dir`` says otherwise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from countdown_rl.commands.one_line import OneLineArgumentParser, examples, fail
from countdown_rl.evaluation.report import PLOTS, ReportError, write_report
from countdown_rl.sweeps.report import is_sweep_dir, write_sweep_report

PROG = "countdown-rl report"


def build_parser() -> argparse.ArgumentParser:
    """The ``countdown-rl report`` argument parser."""
    p = OneLineArgumentParser(
        prog=PROG, description="Tables, plots and samples from training run directories.",
        epilog=examples(
            "countdown-rl report outputs/demo/grpo      one run: results.md and plots in ./report",
            "countdown-rl report outputs/countdown/qwen3-1.7b/* --output_dir report   the six recipes side by side",
            "countdown-rl report outputs/sweeps/kl      a sweep: sweep.md, sweep.csv and one figure per axis",
        ),
    )
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                   help="training output_dir (trainer_state.json, run_info.json, eval/, zero_shot/), or one sweep's "
                   "output_root (sweep.json)")
    p.add_argument("--output_dir", default=None, deprecated=["--out"],
                   help="report folder (default: report; for a sweep <sweep dir>/report)")
    p.add_argument("--samples", type=int, default=2, help="successes and failures shown per run (default 2)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``countdown-rl report``; returns the exit code."""
    args = build_parser().parse_args(argv)
    sweeps = [d for d in args.run_dirs if is_sweep_dir(d)]
    if sweeps:
        if len(args.run_dirs) > 1:
            return fail(PROG, f"{sweeps[0]} is a sweep: report it alone")
        out = Path(args.output_dir or Path(sweeps[0]) / "report")
        try:
            sweep = write_sweep_report(sweeps[0], out)
        except (ReportError, ValueError, FileNotFoundError) as err:
            return fail(PROG, err)
        print((out / "sweep.md").read_text(encoding="utf-8"))
        print(f"wrote the report of {len(sweep.results)} run(s) to {out}/: sweep.md, sweep.csv and the figures")
        return 0
    args.output_dir = args.output_dir or "report"
    try:
        runs = write_report(args.run_dirs, args.output_dir, samples_per_kind=max(0, args.samples))
    except (ReportError, ValueError, FileNotFoundError) as err:
        return fail(PROG, err)
    print((Path(args.output_dir) / "results.md").read_text(encoding="utf-8"))
    print(f"wrote {len(runs)} run(s) to {args.output_dir}/: results.md, results.csv, samples.md, "
          + ", ".join(PLOTS.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
