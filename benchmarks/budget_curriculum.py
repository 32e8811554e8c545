"""Budget curriculum vs fixed budgets, and GRPO vs Dr.GRPO at a long budget: a toy study, offline on a CPU.

Same warm start as ``benchmarks/toy_replication.py`` (the demo's puzzles, the tiny tokenizer and a small random
Qwen3, SFT on search traces: 1-2 checked wrong attempts then the solution, 51-98 tokens, 2000 steps), seed 0.
Every RL run starts from that SFT model; the RL seed varies (``--seeds``, default 0 1).

(a) Budget curriculum. For GRPO and Dr.GRPO: ``budget_schedule`` 40 -> 48 -> 64 tokens (a third of the steps
    each) against fixed budgets of 40, 48 and 64, with the same steps, seeds, puzzles and data order. Each
    trained model is scored greedily on the held-out puzzles at 40, 48 and 64 tokens (one generation at 64 cut to
    each) -> ``<run>/eval_budgets/``. Dr.GRPO's normaliser follows the rollout's budget (the default).
(b) Long budget. GRPO vs Dr.GRPO at 256 tokens, several times the answers' length, same seeds: the mean length of
    correct and incorrect sampled completions over training (``outcomes/mean_length_correct|incorrect`` in each
    run's ``trainer_state.json``), first and last tenth of the steps, and per step in ``long_budget_lengths.csv``.

Every table row is read back from the runs' own files (``run_info.json``, ``trainer_state.json``,
``eval_budgets/eval.json``, ``eval/eval.json``), and the budgets each run really trained at come from its logged
``completion_budget``. Outputs in ``--output-dir``: ``budget_curriculum.md`` and ``budget_curriculum.json``
(tables and per-run rows), ``long_budget_lengths.csv``, ``report/`` (``countdown-rl report`` on every run).

``--jobs N`` trains N runs at a time, each in its own process (``--threads`` torch threads, default 1; output in
``logs/<run>.log``); ``--part a`` / ``--part b`` runs one study; ``--sft-from`` copies a finished SFT start made
with the same settings (refused otherwise); ``--resume`` reuses every finished run (``<run>/study_run.json``,
written last, records its settings and seconds) and continues the others from their checkpoints.

    python benchmarks/budget_curriculum.py --sft-from outputs/toy-replication --jobs 2   # both studies, 2 cores
    python benchmarks/budget_curriculum.py --quick    # smoke check: the same pipeline, a few steps, tiny sizes, 6 runs
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import _common  # noqa: E402  (benchmarks/, the script's own folder, is on sys.path)

from countdown_rl.algorithms.presets import ALGORITHMS, display_name  # noqa: E402
from countdown_rl.demo import stages as demo  # noqa: E402
from countdown_rl.demo.config import DemoConfig, with_current_field_names  # noqa: E402
from countdown_rl.demo.run_dir import prepare_run_dir, setup_environment  # noqa: E402
from countdown_rl.runs.record import read_run_record  # noqa: E402

BUDGETS = (40, 48, 64)
LONG_BUDGET = 256
QUICK_LONG_BUDGET = 96
SFT = {"trace": "search", "min_failed": 1, "max_failed": 2, "sft_steps": 2000}  # toy_replication's warm start
GRPO_STEPS = 450
SEEDS = (0, 1)
RESULTS_FILE = "budget_curriculum.json"
TABLE_FILE = "budget_curriculum.md"
LENGTHS_FILE = "long_budget_lengths.csv"
EVAL_BUDGETS_DIR = "eval_budgets"
RUN_DONE_FILE = "study_run.json"  # written last: the run and its evaluations are complete
LENGTH_KEYS = {"correct": "outcomes/mean_length_correct", "incorrect": "outcomes/mean_length_incorrect"}


def thirds_schedule(budgets: list[int], steps: int) -> list[list[int]]:
    """``budgets`` (ascending) in equal shares of ``steps``: ``[[0, b0], [steps // k, b1], ...]``.

    >>> thirds_schedule([40, 48, 64], 450), thirds_schedule([40, 48, 64], 3)
    ([[0, 40], [150, 48], [300, 64]], [[0, 40], [1, 48], [2, 64]])
    """
    k = len(budgets)
    return [[i * steps // k, budget] for i, budget in enumerate(budgets)]


def study_config(args: argparse.Namespace) -> DemoConfig:
    """The demo's settings (``--quick``: its quick ones) with toy_replication's SFT start and this study's dir."""
    config = _common.measured_demo_config(args.quick)  # with the RL sampling its figures were measured with
    # the demo's expression-pool evaluation left out: this study compares the runs on the held-out part
    overrides = {"output_dir": args.output_dir, "seed": 0, **SFT, "max_steps": GRPO_STEPS, "expression_eval": 0}
    if args.quick:  # 3 steps (one per budget), no in-training evaluation or checkpoint, 16 held-out puzzles
        overrides.update(sft_steps=config.sft_steps, max_steps=3, in_training_eval=0, save_steps=1000,
                         prompts_per_step=2, puzzles=replace(config.puzzles, num_eval=16))
    if args.max_steps is not None:
        overrides["max_steps"] = args.max_steps
    return replace(config, **overrides)


def plan_runs(base: DemoConfig, seeds: list[int], long_budget: int,
              fixed: tuple[int, ...] = BUDGETS) -> list[tuple[str, DemoConfig, dict]]:
    """``(run folder name, config, study record)`` for every run of (a) (the curriculum, then a fixed budget of each
    of ``fixed``) then (b)."""
    runs = []
    schedule = thirds_schedule(list(BUDGETS), base.max_steps)
    for part, variants in (
        ("a", [("curriculum", max(BUDGETS), schedule)] + [(f"fixed-{b}", b, None) for b in fixed]),
        ("b", [(f"fixed-{long_budget}", long_budget, None)]),
    ):
        for algorithm in ALGORITHMS:
            for label, budget, sched in variants:
                for seed in seeds:
                    config = replace(base, algorithm=algorithm, seed=seed, max_completion_length=budget,
                                     budget_schedule=tuple(map(tuple, sched)) if sched else None)
                    study = {"part": part, "label": label, "seed": seed, "algorithm": algorithm}
                    runs.append((f"{part}-{algorithm}-{label}-s{seed}", config, study))
    return runs


# --------------------------------------------------------------------------------------------------------------
# Rows from the runs' own files
# --------------------------------------------------------------------------------------------------------------


def _history(run_dir: Path) -> list[dict]:
    state = json.loads((run_dir / "trainer_state.json").read_text(encoding="utf-8"))
    return [h for h in state["log_history"] if "loss" in h]


def _budget_path(history: list[dict]) -> str:
    """The budgets the run trained at, in order (from the logged ``completion_budget``): ``40 -> 48 -> 64``."""
    path = []
    for h in history:
        budget = h.get("completion_budget")
        if budget is not None and (not path or path[-1] != int(budget)):
            path.append(int(budget))
    return " -> ".join(map(str, path))


def _tenth_mean(history: list[dict], key: str, last: bool) -> float | None:
    values = [h[key] for h in history if key in h]
    if not values:
        return None
    n = max(1, len(values) // 10)
    chunk = values[-n:] if last else values[:n]
    return sum(chunk) / len(chunk)


def run_row(run_dir: Path) -> dict:
    """One run's row, read from its files: record, budgets trained at, evaluations, completion lengths."""
    from countdown_rl.evaluation.eval_files import read_eval

    record = read_run_record(run_dir)
    study = record.extra["study"]
    history = _history(run_dir)
    row = {**study, "run": run_dir.name, "max_completion_length": record.max_completion_length,
           "budget_schedule": record.budget_schedule, "steps": history[-1]["step"] if history else 0,
           "trained_budgets": _budget_path(history)}
    evals = {r.max_tokens: r for r in read_eval(run_dir / "eval")["results"]}
    if (run_dir / EVAL_BUDGETS_DIR / "eval.json").is_file():
        evals.update({r.max_tokens: r for r in read_eval(run_dir / EVAL_BUDGETS_DIR)["results"]})
    row["accuracy"] = {str(b): r.accuracy for b, r in sorted(evals.items())}
    row["mean_tokens"] = {str(b): r.mean_tokens for b, r in sorted(evals.items())}
    for kind, key in LENGTH_KEYS.items():
        row[f"length_{kind}_first"] = _tenth_mean(history, key, last=False)
        row[f"length_{kind}_last"] = _tenth_mean(history, key, last=True)
    return row


def _mean(values: list[float]) -> str:
    from countdown_rl.files import format_percent
    from countdown_rl.sweeps.report import mean_sd

    mean, sd, _ = mean_sd(values)
    if mean is None:
        return "n/a"
    return format_percent(mean) + ("" if sd is None else f" ± {100 * sd:.1f}")


def _length(first: float | None, last: float | None) -> str:
    show = lambda v: "n/a" if v is None else f"{v:.1f}"  # noqa: E731
    return f"{show(first)} -> {show(last)}"


def render_tables(rows: list[dict], budgets: list[int], long_budget: int) -> str:
    """Markdown: (a) accuracy at each budget, mean ± std over seeds; (b) per run, lengths first -> last tenth."""
    from countdown_rl.files import format_percent, render_markdown_table

    groups: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        if row["part"] == "a":
            groups.setdefault((row["algorithm"], row["label"]), []).append(row)
    body_a = []
    for (algorithm, label), runs in groups.items():
        trained = sorted({r["trained_budgets"] for r in runs})
        body_a.append([display_name(algorithm), label, " ".join(str(r["seed"]) for r in runs), " / ".join(trained)]
                      + [_mean([r["accuracy"][str(b)] for r in runs]) for b in budgets])
    table_a = render_markdown_table(
        ["algorithm", "budget", "seeds", "trained at", *[f"accuracy @{b}" for b in budgets]], body_a)
    body_b = [[display_name(r["algorithm"]), str(r["seed"]), format_percent(r["accuracy"][str(long_budget)]),
               _length(r["length_correct_first"], r["length_correct_last"]),
               _length(r["length_incorrect_first"], r["length_incorrect_last"])]
              for r in rows if r["part"] == "b"]
    table_b = render_markdown_table(
        ["algorithm", "seed", f"accuracy @{long_budget}", "correct length (first -> last tenth)",
         "incorrect length (first -> last tenth)"], body_b)
    return (f"## (a) budget curriculum vs fixed budgets (greedy held-out accuracy, mean ± std over seeds, points)\n\n"
            f"{table_a}\n\n## (b) {long_budget}-token budget: sampled completion lengths over training\n\n{table_b}\n")


def write_lengths_csv(run_dirs: list[Path], path: Path) -> int:
    """Per step of every (b) run: the mean length of correct and incorrect sampled completions."""
    count = 0
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["run", "algorithm", "seed", "step", "mean_length_correct", "mean_length_incorrect"])
        for run_dir in run_dirs:
            study = read_run_record(run_dir).extra["study"]
            for h in _history(run_dir):
                writer.writerow([run_dir.name, study["algorithm"], study["seed"], h["step"],
                                 h.get(LENGTH_KEYS["correct"], ""), h.get(LENGTH_KEYS["incorrect"], "")])
                count += 1
    return count


# --------------------------------------------------------------------------------------------------------------
# The study
# --------------------------------------------------------------------------------------------------------------


def _identity(config: DemoConfig, study: dict) -> dict:
    """What makes two runs the same run: the study cell and every setting but ``resume`` and the threads."""
    return json.loads(json.dumps({"study": study, "config": asdict(replace(config, resume=False, num_threads=0))}))


def _finished(run_dir: Path, config: DemoConfig, study: dict) -> bool:
    """Whether ``run_dir`` holds this run, finished with its evaluations (``RUN_DONE_FILE`` is written last)."""
    try:
        done = json.loads((run_dir / RUN_DONE_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return False
    recorded = dict(done.get("identity") or {})
    recorded["config"] = with_current_field_names(recorded.get("config", {}))  # recorded before a rename
    return recorded == _identity(config, study)


def train_one(name: str, config: DemoConfig, study: dict, warm: demo.WarmStart, out: Path) -> float:
    """One planned run: train, evaluate ((a): at every budget of :data:`BUDGETS`), then mark it finished."""
    from countdown_rl.files import write_json_atomic

    run_dir = out / name
    started = time.time()
    prepare_run_dir(run_dir, resume=config.resume)
    (run_dir / RUN_DONE_FILE).unlink(missing_ok=True)
    trained = demo.rl_stage(config, warm, run_dir, run_info={"study": study})
    if study["part"] == "a":  # every (a) run at every budget: one generation at the largest, cut to each
        demo.evaluate_stage(trained["model"], trained["tokenizer"], warm.puzzles["eval"], budgets=list(BUDGETS),
                            out_dir=run_dir / EVAL_BUDGETS_DIR, batch_size=config.eval_batch_size,
                            meta={"model": str(run_dir), "stage": "final", "algorithm": config.algorithm},
                            show_progress=not config.quick)
    seconds = round(time.time() - started, 1)
    write_json_atomic(run_dir / RUN_DONE_FILE, {"identity": _identity(config, study), "seconds": seconds,
                                               "threads": config.num_threads})
    return seconds


def _run_seconds(run_dir: Path) -> float | None:
    try:
        return json.loads((run_dir / RUN_DONE_FILE).read_text(encoding="utf-8"))["seconds"]
    except (OSError, json.JSONDecodeError, KeyError):
        return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default="outputs/budget-curriculum", help="where every run goes")
    parser.add_argument("--seeds", type=int, nargs="+",
                        help=f"RL seeds, one run per seed and configuration (default {' '.join(map(str, SEEDS))}; "
                        "--quick: 0)")
    parser.add_argument("--max-steps", "--grpo-steps", type=int,  # --grpo-steps: the old name, kept
                        help=f"RL steps per run (default {GRPO_STEPS}; --quick: 3)")
    parser.add_argument("--long-budget", type=int,
                        help=f"the long budget of part (b), in tokens (default {LONG_BUDGET}; --quick: "
                        f"{QUICK_LONG_BUDGET})")
    parser.add_argument("--part", choices=["a", "b"], action="append",
                        help="run only this part (repeatable; default both): a = curriculum vs fixed, b = long budget")
    parser.add_argument("--sft-from",
                        help="a toy replication's --output-dir (or normaliser_ablation's toy/) whose finished SFT "
                        "stage to copy instead of training it (refused if made with other settings)")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time, each in its own process (default 1)")
    parser.add_argument("--threads", type=int, help="torch threads per run (default 2; with --jobs > 1: 1)")
    parser.add_argument("--resume", action="store_true",
                        help="reuse the SFT start, the zero-shot evaluation and every finished run; continue "
                        "unfinished runs from their checkpoints")
    parser.add_argument("--run", help=argparse.SUPPRESS)  # internal (--jobs): train only this planned run
    parser.add_argument("--quick", action="store_true",
                        help="smoke check (a minute or two): the demo's --quick sizes, 3 steps, one seed, (a) against "
                        f"the fixed budget of {BUDGETS[-1]} only")
    args = parser.parse_args(argv)
    args.seeds = args.seeds or ([0] if args.quick else list(SEEDS))
    if args.long_budget is None:
        args.long_budget = QUICK_LONG_BUDGET if args.quick else LONG_BUDGET
    if (args.max_steps is not None and args.max_steps < len(BUDGETS)) or args.long_budget <= 0:
        parser.error(f"--max-steps must be >= {len(BUDGETS)} (one per budget) and --long-budget positive")
    if len(set(args.seeds)) != len(args.seeds):
        parser.error("--seeds must be distinct")
    if args.jobs < 1 or (args.threads is not None and args.threads < 1):
        parser.error("--jobs and --threads must be positive")
    out = Path(args.output_dir)
    if out.exists() and not out.is_dir():
        parser.error(f"--output-dir {out} exists and is not a folder")
    parts = sorted(set(args.part or ["a", "b"]))
    threads = args.threads or (1 if args.jobs > 1 else 2)
    base = replace(study_config(args), num_threads=threads)
    # --quick: (a)'s curriculum against the fixed budget it ends at only (the pipeline is the same for every budget)
    fixed = BUDGETS[-1:] if args.quick else BUDGETS
    plan = [r for r in plan_runs(base, args.seeds, args.long_budget, fixed) if r[2]["part"] in parts]
    plan = [(name, replace(config, resume=args.resume), study) for name, config, study in plan]
    if args.run is not None and args.run not in [name for name, _, _ in plan]:
        parser.error(f"--run {args.run} is not a planned run of this study")
    if args.sft_from:
        source = Path(args.sft_from)
        if not demo.sft_stage_done(source / "sft", base):
            parser.error(f"--sft-from {source}: no finished SFT stage made with this study's settings in "
                         f"{source / 'sft'} (its run_info.json missing or different)")
        if not demo.sft_stage_done(out / "sft", base):
            for stage in ("base", "sft"):
                shutil.copytree(source / stage, out / stage, dirs_exist_ok=True)
    setup_environment(threads)
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()

    reuse = bool(args.resume or args.sft_from or args.run)  # stages are reused only when made with these settings
    warm = demo.warm_start(replace(base, resume=reuse))
    if args.run is not None:  # a child of --jobs: the parent made the zero-shot evaluation
        name, config, study = next(r for r in plan if r[0] == args.run)
        train_one(name, config, study, warm, out)
        return 0
    demo.zero_shot_stage(replace(base, resume=reuse), warm, [*BUDGETS, args.long_budget])
    todo = [r for r in plan if not (args.resume and _finished(out / r[0], r[1], r[2]))]
    for name, _, _ in plan:
        if all(name != t[0] for t in todo):
            print(f"{name}: reusing the finished run")
    if args.jobs > 1:
        codes = _common.run_children(__file__, {name: [*argv, "--threads", str(threads), "--run", name]
                                                   for name, _, _ in todo}, args.jobs, out / "logs")
        if any(codes.values()):
            print(f"{sum(1 for c in codes.values() if c)} run(s) failed; fix and rerun with --resume", flush=True)
            return 1
    else:
        for name, config, study in todo:
            train_one(name, config, study, warm, out)
    run_dirs = [out / name for name, _, _ in plan]

    from countdown_rl.commands.report import main as report_main
    from countdown_rl.files import write_json_atomic

    rows = [{**run_row(run_dir), "seconds": _run_seconds(run_dir)} for run_dir in run_dirs]
    tables = render_tables(rows, list(BUDGETS), args.long_budget)
    lengths_rows = write_lengths_csv([d for d, r in zip(run_dirs, rows) if r["part"] == "b"], out / LENGTHS_FILE)
    per_run = [r["seconds"] for r in rows if r["seconds"] is not None]
    timing = (f"{len(rows)} runs, {sum(per_run):.0f} s of run time ({args.jobs} at a time, {threads} torch "
              f"thread(s) each); wall time of this invocation {time.time() - started:.0f} s")
    (out / TABLE_FILE).write_text(f"{tables}\n{timing}\n", encoding="utf-8")
    summary = {
        "command": "python benchmarks/budget_curriculum.py " + " ".join(argv),
        "budgets": list(BUDGETS), "schedule": thirds_schedule(list(BUDGETS), base.max_steps),
        "long_budget": args.long_budget, "seeds": args.seeds, "parts": parts,
        "num_eval_puzzles": len(warm.puzzles["eval"]), "sft": warm.record, "runs": rows, "tables": tables,
        "lengths_csv_rows": lengths_rows, "run_seconds": sum(per_run),
        "total_seconds": round(time.time() - started, 1), "config": asdict(base),
    }
    write_json_atomic(out / RESULTS_FILE, summary)
    code = report_main([*map(str, run_dirs), "--output_dir", str(out / "report"), "--samples", "1"])
    print(f"\n== budget curriculum study: {len(run_dirs)} runs, {base.max_steps} RL steps each, seeds "
          f"{' '.join(map(str, args.seeds))} ==\n")
    print(tables)
    print(f"{timing}\nfiles: {out / TABLE_FILE}, {out / RESULTS_FILE}, {out / LENGTHS_FILE}, report: {out / 'report'}")
    return code


if __name__ == "__main__":
    from countdown_rl.generation.vllm_import import leave_vllm_out

    leave_vllm_out()  # nothing here generates with vLLM: its engine stays out of this process
    sys.exit(main())
