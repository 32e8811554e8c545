"""``countdown-rl report RUN_DIR... --out REPORT_DIR``: tables, plots and samples from training runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from countdown_rl.one_line import OneLineArgumentParser
from countdown_rl.report import PLOTS, ReportError, write_report

PROG = "countdown-rl report"


def build_parser() -> argparse.ArgumentParser:
    """The ``countdown-rl report`` argument parser."""
    p = OneLineArgumentParser(prog=PROG, description="Tables, plots and samples from training run directories.")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                   help="training output_dir (trainer_state.json, run_info.json, eval/, zero_shot/)")
    p.add_argument("--out", default="report", help="report folder (default: report)")
    p.add_argument("--samples", type=int, default=2, help="successes and failures shown per run (default 2)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run ``countdown-rl report``; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        runs = write_report(args.run_dirs, args.out, samples_per_kind=max(0, args.samples))
    except (ReportError, ValueError, FileNotFoundError) as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    print((Path(args.out) / "results.md").read_text(encoding="utf-8"))
    print(f"wrote {len(runs)} run(s) to {args.out}/: results.md, results.csv, samples.md, "
          + ", ".join(PLOTS.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
