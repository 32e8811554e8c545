"""``countdown-rl sweep SPEC.yaml``: run a sweep's runs one after another, resumable; or write its SLURM job array.

    countdown-rl sweep spec.yaml               # every run, one after another (finished ones skipped)
    countdown-rl sweep spec.yaml --jobs 3      # up to 3 runs at once on this machine (sharing its GPU and cores)
    countdown-rl sweep spec.yaml --dry_run     # the run table (index, name, state, folder); nothing runs
    countdown-rl sweep spec.yaml --index 3     # run 3 only (what each SLURM array task runs)
    countdown-rl sweep spec.yaml --slurm       # write <output_root>/sweep.sbatch (add --submit to sbatch it)
    countdown-rl sweep spec.yaml --report      # after the runs: countdown-rl report <output_root>

The spec is checked whole (every run's recipe, as ``countdown-rl train`` would) before anything runs or is written;
an error is one line naming the spec file and the key. See :mod:`countdown_rl.sweeps.spec`.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys

from countdown_rl.commands.one_line import OneLineArgumentParser, examples, fail

PROG = "countdown-rl sweep"


def build_parser() -> argparse.ArgumentParser:
    """The ``countdown-rl sweep`` argument parser."""
    p = OneLineArgumentParser(
        prog=PROG, description="Run a sweep of training runs from one spec (YAML).",
        epilog=examples(
            "countdown-rl sweep spec.yaml --dry_run      the runs and their states; nothing runs",
            "countdown-rl sweep spec.yaml                every run, one after another; rerun to resume",
            "countdown-rl sweep spec.yaml --slurm --submit   a SLURM job array, one task per run",
            "countdown-rl report outputs/sweeps/kl       the sweep's table and figures",
        ),
    )
    p.add_argument("spec", help="the sweep spec: base, axes, mode, seeds, overrides, output_root, slurm")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--dry_run", action="store_true", help="print the runs and their states; run nothing")
    what.add_argument("--index", type=int, action="append", metavar="I",
                      help="run only run I (0-based, as in --dry_run; repeatable); the SLURM array task's mode")
    what.add_argument("--slurm", action="store_true", help="write <output_root>/sweep.sbatch: a job array")
    p.add_argument("--submit", action="store_true", help="with --slurm: submit the script with sbatch")
    p.add_argument("--report", action="store_true", help="after the runs, write the report to <output_root>/report")
    p.add_argument("--verbose", action="store_true", help="echo each run's whole output (it is always in train.log)")
    p.add_argument("--jobs", type=int, default=1,
                   help="runs at once on this machine (default 1); they share its GPU, and its cores: each run gets "
                   "cores // jobs OpenMP threads unless OMP_NUM_THREADS is set")
    return p



def main(argv: list[str] | None = None) -> int:
    """Run ``countdown-rl sweep``; returns the exit code (0; 1 a run failed; 2 bad input; 75 interrupted)."""
    args = build_parser().parse_args(argv)
    if args.submit and not args.slurm:
        return fail(PROG, "--submit: only with --slurm")
    if args.jobs < 1:
        return fail(PROG, f"--jobs must be positive, got {args.jobs}")
    if args.jobs > 1 and (args.slurm or args.dry_run):
        return fail(PROG, "--jobs: only when the runs run here (not with --slurm or --dry_run)")
    from countdown_rl.sweeps.runner import run_local, write_slurm
    from countdown_rl.sweeps.spec import SweepError, prepare, run_state

    try:
        spec, runs = prepare(args.spec)
        if args.index:
            bad = [i for i in args.index if not 0 <= i < len(runs)]
            if bad:
                raise SweepError(f"--index {bad[0]}: the sweep has runs 0..{len(runs) - 1}")
    except (ValueError, FileNotFoundError) as err:
        return fail(PROG, str(err))
    print(f"sweep {spec.name}: {len(runs)} run(s) ({spec.mode} over {', '.join(spec.axes)} x {len(spec.seeds)} "
          f"seed(s)) in {spec.output_root}", flush=True)
    if args.dry_run:
        for run in runs:
            print(f"{run.index:4d}  {run_state(run):11s}  {run.name}  -> {run.output_dir}")
        return 0
    if args.slurm:
        script = write_slurm(spec, runs)
        if not args.submit:
            print(f"wrote {script}; submit with: sbatch {script}")
            return 0
        if shutil.which("sbatch") is None:
            return fail(PROG, f"--submit: sbatch is not on PATH (the script is written: {script})")
        return subprocess.call(["sbatch", str(script)])
    try:
        code = run_local(spec, runs, only=args.index, echo=args.verbose, jobs=args.jobs)
    except ValueError as err:
        return fail(PROG, str(err))
    if args.report and code != 75:
        from countdown_rl.sweeps.report import write_sweep_report

        out = spec.output_root / "report"
        write_sweep_report(spec.output_root, out)
        print(f"report: {out / 'sweep.md'}")
    return code


if __name__ == "__main__":
    sys.exit(main())
