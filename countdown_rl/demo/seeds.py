"""Several demo runs at once on one machine (seeds, and algorithms beside them), then one combined table.

1. Runs: one ``countdown-rl demo`` process per (seed, algorithm), each seed in its own folder
   ``<output_dir>/seed-<S>``. The algorithms of a seed share that folder, so they share its SFT model, as
   ``--algorithm dr_grpo --resume`` beside a GRPO run does.
2. At most ``jobs`` processes at once. The CPU cores are split between them (each gets ``cores // jobs`` torch
   threads); the GPUs are shared (every process sees the same ``CUDA_VISIBLE_DEVICES``). A seed's later algorithms
   start once its first one has reached its RL stage (that run's ``recipe.yaml`` written anew, or the process
   ended), then reuse the seed's finished stages through ``--resume``: the SFT model is trained once per seed and
   never written by two processes.
3. Each process's whole output goes to ``<seed folder>/<algorithm>.log``, and to the console prefixed
   ``[seed S algorithm]`` (its Markdown table rows left out: the combined table replaces them). A signal
   (SIGTERM, SIGINT, SIGUSR1) is passed to every process in flight, which saves a checkpoint; rerun the same command
   with ``--resume`` to go on.
4. :func:`combine` reads each run's ``demo_results.json``, of either shape the demo writes: Countdown's (per run
   the best target-blind rule on its held-out puzzles, the SFT model's and the RL model's accuracy on them, RL - SFT
   in points and the exact McNemar p-value (:mod:`countdown_rl.evaluation.paired`, as the demo computed it), pass@1 /
   pass@k, the same on the held-out expression-pool puzzles) or another task's (``--task``: its held-out rows, the
   best constant answer in the rule's place, the same accuracies, gain and p-value, then the accuracy read without
   the answer tags, the answer format rate, pass@1 / pass@k and the setting held out of training). One task per
   combine: runs of two tasks are refused. Per algorithm the mean, sample standard deviation and range over its
   seeds. Written to ``<output_dir>/seeds.md`` and ``seeds.json``.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from countdown_rl.algorithms.presets import display_name
from countdown_rl.demo.run_dir import RECIPE_FILE, RESULTS_FILE, prepare_run_dir
from countdown_rl.files import render_markdown_table, write_atomic, write_json_atomic
from countdown_rl.runs.record import EXIT_INTERRUPTED
from countdown_rl.tasks.base import clip_shown

__all__ = ["SeedRun", "combine", "plan_runs", "run_all", "seed_dir", "spread", "spread_cell", "threads_per_run",
           "write_combined"]

COMBINED_MD = "seeds.md"
COMBINED_JSON = "seeds.json"
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)  # passed on to every run in flight
SIGNIFICANCE = 0.05  # the p-value under which a gain counts as significant in the summary
COUNTDOWN = "countdown"  # the task of a demo_results.json without a "task" key


def seed_dir(output_dir: str | Path, seed: int) -> Path:
    """The folder of one seed's runs.

    >>> seed_dir("out", 2).as_posix()
    'out/seed-2'
    """
    return Path(output_dir) / f"seed-{seed}"


@dataclass(frozen=True)
class SeedRun:
    """One demo process: its seed and algorithm, the seed's folder and the command's arguments (``argv``, without
    the program)."""

    seed: int
    algorithm: str
    output_dir: Path
    argv: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"seed {self.seed} {self.algorithm}"

    @property
    def results_file(self) -> Path:
        return self.output_dir / self.algorithm / RESULTS_FILE


def threads_per_run(jobs: int, cores: int | None = None) -> int:
    """Torch CPU threads for each of ``jobs`` processes sharing ``cores`` (default: this machine's).

    >>> threads_per_run(3, 16), threads_per_run(4, 2)
    (5, 1)
    """
    return max(1, (cores or os.cpu_count() or 1) // max(1, jobs))


def jobs_at_once(runs: int, jobs: int | None, *, real_model: bool) -> int:
    """Demo processes at once: ``jobs`` where given; else all ``runs`` for the tiny model, and one at a time for a
    real model (``--model_name_or_path``), whose run alone takes every core and, for SmolLM2 on a CPU with its
    colocated vLLM engine, several GB (docs/demo.md, "Time and memory of the real-model demo"): six at once would
    not fit a 24 GB machine.

    >>> jobs_at_once(6, None, real_model=False), jobs_at_once(6, None, real_model=True), jobs_at_once(6, 2, real_model=True)
    (6, 1, 2)
    """
    if jobs is None:
        return 1 if real_model else runs
    if jobs <= 0:
        raise ValueError("--jobs must be positive")
    return jobs


def plan_runs(output_dir: str | Path, seeds: Sequence[int], algorithms: Sequence[str],
              argv_of: Callable[[int, str, Path], Sequence[str]]) -> list[SeedRun]:
    """One run per (seed, algorithm), seed by seed; ``argv_of(seed, algorithm, seed folder)`` gives its arguments.

    >>> [r.label for r in plan_runs("out", [0, 1], ["grpo"], lambda s, a, d: [])]
    ['seed 0 grpo', 'seed 1 grpo']
    """
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds: a seed is given twice ({list(seeds)})")
    if len(set(algorithms)) != len(algorithms):
        raise ValueError(f"--algorithm: an algorithm is given twice ({list(algorithms)})")
    return [SeedRun(seed, algorithm, seed_dir(output_dir, seed), tuple(argv_of(seed, algorithm,
                                                                              seed_dir(output_dir, seed))))
            for seed in seeds for algorithm in algorithms]


# --------------------------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------------------------


class _Process:
    """A run's process: its output copied to its log and (prefixed) to the console by a reader thread."""

    def __init__(self, run: SeedRun, command: Sequence[str], env: Mapping[str, str], console: TextIO,
                 lock: threading.Lock):
        run.output_dir.mkdir(parents=True, exist_ok=True)
        self.run, self.started = run, time.time()
        self.log = open(run.output_dir / f"{run.algorithm}.log", "a", encoding="utf-8")  # noqa: SIM115 - closed below
        self.log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(command)}\n")
        self.log.flush()
        self.child = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      env=dict(env), errors="replace")
        self.reader = threading.Thread(target=self._copy, args=(console, lock), daemon=True)
        self.reader.start()

    def _copy(self, console: TextIO, lock: threading.Lock) -> None:
        prefix = f"[{self.run.label}] "
        for line in self.child.stdout:
            self.log.write(line)
            self.log.flush()  # the log follows the run (tail -f)
            if line.lstrip().startswith("|") or not line.strip():  # its own table: the combined one replaces it
                continue
            with lock:
                console.write(prefix + line.lstrip("\n"))
                console.flush()
        self.log.close()

    def poll(self) -> int | None:
        code = self.child.poll()
        if code is not None:
            self.reader.join()
        return code


def _rl_started(run: SeedRun, since: float) -> bool:
    """Whether ``run`` has reached its RL stage since ``since`` (the demo writes the RL run's recipe there)."""
    recipe = run.output_dir / run.algorithm / RECIPE_FILE
    try:
        return recipe.stat().st_mtime >= since
    except OSError:
        return False


def run_all(runs: Sequence[SeedRun], *, jobs: int, command: Sequence[str] | None = None,
            resume: bool = False, env: Mapping[str, str] | None = None, console: TextIO | None = None,
            poll_seconds: float = 0.5) -> dict[str, int]:
    """Run ``runs`` as processes, at most ``jobs`` at once (module docstring, 2 and 3); returns each run's exit code
    by label. ``command`` is the program before each run's ``argv`` (default: this Python running
    ``countdown_rl.commands.demo``). A seed's later algorithms get ``--resume`` (they reuse its SFT model); without
    ``resume``, their previous run folders are cleared first, as the demo clears one itself."""
    if jobs < 1:
        raise ValueError(f"--jobs must be positive, got {jobs}")
    command = list(command or [sys.executable, "-m", "countdown_rl.commands.demo"])
    console = console or sys.stdout
    env = {**(env if env is not None else os.environ), "PYTHONUNBUFFERED": "1"}
    first_of_seed: dict[int, SeedRun] = {}
    for run in runs:
        first_of_seed.setdefault(run.seed, run)
    if not resume:  # before anything starts: a folder this command may not clear is refused in one line
        for run in runs:
            if first_of_seed[run.seed] is not run:
                prepare_run_dir(run.output_dir / run.algorithm, resume=False)
    lock = threading.Lock()
    pending, running, codes, launched = list(runs), [], {}, {}

    def ready(run: SeedRun) -> bool:
        first = first_of_seed[run.seed]
        if first is run:
            return True
        if first.label not in launched:
            return False
        return first.label in codes or _rl_started(first, launched[first.label])

    def forward(signum, _frame):
        pending.clear()  # nothing new starts; the ones in flight save a checkpoint
        for process in running:
            if process.child.poll() is None:
                process.child.send_signal(signum)

    handlers = {}
    if threading.current_thread() is threading.main_thread():
        for sig in FORWARDED:
            handlers[sig] = signal.signal(sig, forward)
    try:
        while pending or running:
            for run in [r for r in pending if ready(r)][: max(0, jobs - len(running))]:
                pending.remove(run)
                later = first_of_seed[run.seed] is not run
                argv = [*run.argv, *(["--resume"] if (later or resume) and "--resume" not in run.argv else [])]
                with lock:
                    console.write(f"[{run.label}] starting -> {run.output_dir} "
                                  f"(log: {run.output_dir / (run.algorithm + '.log')})\n")
                    console.flush()
                launched[run.label] = time.time()
                running.append(_Process(run, [*command, *argv], env, console, lock))
            for process in list(running):
                code = process.poll()
                if code is None:
                    continue
                running.remove(process)
                codes[process.run.label] = code
                minutes = (time.time() - process.started) / 60
                if code == 0:
                    how = "finished"
                elif code == EXIT_INTERRUPTED:
                    how = "interrupted (checkpoint saved; rerun with --resume)"
                elif -code in FORWARDED:
                    how = f"stopped by {signal.Signals(-code).name} before it could save a checkpoint"
                else:
                    how = f"failed (exit {code})"
                with lock:
                    console.write(f"[{process.run.label}] {how} in {minutes:.1f} min\n")
                    console.flush()
            time.sleep(poll_seconds)
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        for process in running:  # only after an error here: the children do not outlive the command
            if process.child.poll() is None:
                process.child.kill()
    return codes


def exit_code(codes: Mapping[str, int]) -> int:
    """The command's exit code: 75 if a run was interrupted (or a signal stopped it), else 1 if one failed, else 0.

    >>> exit_code({"a": 0, "b": 1}), exit_code({"a": 75, "b": 1}), exit_code({"a": 0, "b": -15})
    (1, 75, 75)
    """
    if any(code == EXIT_INTERRUPTED or -code in FORWARDED for code in codes.values()):
        return EXIT_INTERRUPTED
    return 1 if any(code != 0 for code in codes.values()) else 0


# --------------------------------------------------------------------------------------------------------------
# The combined table
# --------------------------------------------------------------------------------------------------------------


def _paired_reading(result: Mapping[str, Any]) -> dict[str, Any]:
    """SFT and RL accuracy, RL - SFT in points and the McNemar p-value of a results block that holds them."""
    return {"sft_accuracy": result["sft"]["accuracy"], "trained_accuracy": result["trained"]["accuracy"],
            "gain_points": result["gain_points"], "p_value": result["paired_test"]["p_value"]}


def _read_results(run: SeedRun) -> dict[str, Any]:
    """One run's row from its demo_results.json, Countdown's or another task's (module docstring, 4); ValueError
    naming the file and key when it is not one. A task's best constant answer takes the blind rule's keys ("rule",
    "rule_accuracy"), its held-out rows the puzzles'; "content", "format" and "transfer" are None for Countdown."""
    path = run.results_file
    data = json.loads(path.read_text(encoding="utf-8"))
    task = data.get("task") or COUNTDOWN
    try:
        if data["algorithm"] != run.algorithm or data["config"]["seed"] != run.seed:
            raise ValueError(f"{path}: holds {data['algorithm']} at seed {data['config']['seed']}, not "
                             f"{run.algorithm} at seed {run.seed}")
        if task == COUNTDOWN:
            blind, held_out = data["blind_rule"], data["num_eval_puzzles"]
            rule, rule_accuracy = (blind["rule"], blind["accuracy"]) if blind else (None, None)
        else:  # the most common gold answer is a task's target-blind baseline
            constant, held_out = data["constant_answer"], data["num_eval_rows"]
            rule, rule_accuracy = ((f"constant answer {clip_shown(constant['answer'], 20)}", constant["accuracy"])
                                   if constant else (None, None))
        paired = data["paired_test"]
        row = {
            "seed": run.seed, "algorithm": run.algorithm, "puzzles": held_out,
            "rule": rule, "rule_accuracy": rule_accuracy,
            "sft_accuracy": data["sft"]["accuracy"], "trained_accuracy": data["trained"]["accuracy"],
            "gain_points": data["gain_points"], "p_value": paired["p_value"], "only_rl": paired["only_a"],
            "only_sft": paired["only_b"], "steps": data["global_step"], "file": str(path),
        }
        content = formats = transfer = None
        if task != COUNTDOWN:
            content = _paired_reading(data["content"])
            formats = {"sft": data["format_rate"]["sft"], "trained": data["format_rate"]["trained"]}
            setting = data.get("transfer_setting")
            transfer = {"rows": setting["rows"], **_paired_reading(setting)} if setting else None
    except (KeyError, TypeError) as err:
        raise ValueError(f"{path}: not a demo_results.json (missing key {err})") from None
    row["above_rule_points"] = (None if row["rule_accuracy"] is None
                                else 100 * (row["trained_accuracy"] - row["rule_accuracy"]))
    # pass@1 and pass@k of the sampled evaluations (None: the run had none)
    before, after = data.get("sft_sampled"), data.get("trained_sampled")
    k = row["pass_k"] = before["num_samples"] if before and after else None
    for name, sampled in (("sft", before), ("trained", after)):
        row[f"{name}_pass@1"] = sampled["pass_at_k"]["1"] if k else None
        row[f"{name}_pass@k"] = sampled["pass_at_k"][str(k)] if k else None
    # the same models on the held-out expression-pool puzzles (None: the run had none)
    expression = data.get("expression")
    row["expression"] = None if not expression else {
        "puzzles": expression["num_puzzles"], "sft_accuracy": expression["sft"]["accuracy"],
        "trained_accuracy": expression["trained"]["accuracy"], "gain_points": expression["gain_points"],
        "p_value": expression["paired_test"]["p_value"],
        "rule_accuracy": expression["blind_rule"]["accuracy"] if expression["blind_rule"] else None}
    # another task's readings (module docstring, 4); the task's options tell its settings apart
    row.update(task=task, task_options=list(data.get("task_options") or []), content=content, format=formats,
               transfer=transfer)
    return row


def _task_name(row: Mapping[str, Any]) -> str:
    """A row's task with its options, as a refusal names it.

    >>> _task_name({"task": "reasoning_gym", "task_options": ["datasets=chain_sum"]})
    'reasoning_gym (datasets=chain_sum)'
    """
    options = row.get("task_options") or []
    return f"{row.get('task', COUNTDOWN)} ({' '.join(options)})" if options else row.get("task", COUNTDOWN)


def _one_task(rows: Sequence[Mapping[str, Any]]) -> None:
    """ValueError when ``rows`` come from runs of two tasks (or two settings of one): their numbers do not average."""
    for row in rows[1:]:
        if _task_name(row) != _task_name(rows[0]):
            raise ValueError(f"seed {rows[0]['seed']} {rows[0]['algorithm']} ran {_task_name(rows[0])} but seed "
                             f"{row['seed']} {row['algorithm']} ran {_task_name(row)}: one combined table holds "
                             f"one task's runs")


def spread(values: Sequence[float]) -> dict[str, float | None]:
    """``{"mean", "sd", "min", "max", "n"}``: the sample standard deviation (n - 1), None for a single value.

    >>> spread([4.7, 8.7, 7.7])["sd"].__round__(2), spread([1.0])["sd"]
    (2.08, None)
    """
    return {"mean": statistics.fmean(values), "sd": statistics.stdev(values) if len(values) > 1 else None,
            "min": min(values), "max": max(values), "n": len(values)}


def spread_cell(s: Mapping[str, Any], unit: str = "", signed: bool = False) -> str:
    """A :func:`spread` as a table cell.

    >>> spread_cell(spread([4.7, 8.7, 7.7]), signed=True)
    '+7.0 (sd 2.1; +4.7 to +8.7)'
    """
    fmt = "+.1f" if signed else ".1f"
    sd = "" if s["sd"] is None else f"sd {s['sd']:.1f}; "
    return f"{s['mean']:{fmt}}{unit} ({sd}{s['min']:{fmt}} to {s['max']:{fmt}})"


def combine(runs: Sequence[SeedRun]) -> dict[str, Any]:
    """The combined results of ``runs``: ``{"runs": [row per finished run], "missing": [labels], "summary":
    {algorithm: ...}, "table": Markdown}`` (module docstring, 4). A run without its demo_results.json is named in
    ``missing`` and left out of the numbers."""
    rows, missing = [], []
    for run in runs:
        if run.results_file.is_file():
            rows.append(_read_results(run))
        else:
            missing.append(run.label)
    _one_task(rows)
    summary = {}
    for algorithm in dict.fromkeys(run.algorithm for run in runs):
        mine = [row for row in rows if row["algorithm"] == algorithm]
        if not mine:
            continue
        summary[algorithm] = {
            "seeds": [row["seed"] for row in mine],
            "sft_accuracy_pct": spread([100 * row["sft_accuracy"] for row in mine]),
            "trained_accuracy_pct": spread([100 * row["trained_accuracy"] for row in mine]),
            "gain_points": spread([row["gain_points"] for row in mine]),
            "significant": sum(row["p_value"] < SIGNIFICANCE for row in mine),
            "above_rule_points": (spread([row["above_rule_points"] for row in mine])
                                  if all(row["above_rule_points"] is not None for row in mine) else None),
            # pass@k after RL - after SFT (RL narrowing the model's samples shows as a negative change)
            "pass_k_change_points": (spread([100 * (row["trained_pass@k"] - row["sft_pass@k"]) for row in mine])
                                     if all(row["pass_k"] for row in mine) else None),
            "expression_gain_points": (spread([row["expression"]["gain_points"] for row in mine])
                                       if all(row["expression"] for row in mine) else None),
            # another task's: read without the answer tags, and on the setting held out of training
            "content_gain_points": (spread([row["content"]["gain_points"] for row in mine])
                                    if all(row.get("content") for row in mine) else None),
            "transfer_gain_points": (spread([row["transfer"]["gain_points"] for row in mine])
                                     if all(row.get("transfer") for row in mine) else None),
        }
    return {"runs": rows, "missing": missing, "summary": summary, "table": combined_table(rows, summary)}


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _passes(row: Mapping[str, Any]) -> str:
    """The pass@1 / pass@k cell: SFT's -> RL's, "—" without sampled evaluations."""
    if not row.get("pass_k"):
        return "—"
    return (f"{_pct(row['sft_pass@1'])} / {_pct(row['sft_pass@k'])} -> "
            f"{_pct(row['trained_pass@1'])} / {_pct(row['trained_pass@k'])}")


def _pass_k_header(rows: Sequence[Mapping[str, Any]]) -> str:
    ks = sorted({row["pass_k"] for row in rows if row.get("pass_k")})
    return f"pass@1 / pass@{'/'.join(map(str, ks)) or 'k'}, SFT -> RL (sampled)"


def _points_cell(s: Mapping[str, Any] | None) -> str:
    """A summary's spread of points as a cell, "—" when not every run has it."""
    return "—" if s is None else f"{spread_cell(s, signed=True)} points"


def combined_table(rows: Sequence[Mapping[str, Any]], summary: Mapping[str, Mapping[str, Any]]) -> str:
    """The Markdown table: a row per run, then a row per algorithm with the mean (sd; min to max) over its seeds.
    Countdown's columns, or another task's (:func:`_task_table`) when the runs are of one."""
    if rows and rows[0].get("task", COUNTDOWN) != COUNTDOWN:
        return _task_table(rows, summary)

    def expression(row):
        e = row.get("expression")
        if not e:
            return "—"
        return (f"{_pct(e['sft_accuracy'])} -> {_pct(e['trained_accuracy'])} ({e['gain_points']:+.1f}, p "
                f"{e['p_value']:.3g}; rule {_pct(e['rule_accuracy'])})")

    table = []
    for row in rows:
        rule = "—" if row["rule"] is None else f"{_pct(row['rule_accuracy'])} ({row['rule']})"
        above = "—" if row["above_rule_points"] is None else f"{row['above_rule_points']:+.1f}"
        table.append([str(row["seed"]), display_name(row["algorithm"]), str(row["puzzles"]), rule,
                      _pct(row["sft_accuracy"]), _pct(row["trained_accuracy"]), f"{row['gain_points']:+.1f}",
                      f"{row['p_value']:.3g} ({row['only_rl']} / {row['only_sft']})", above, _passes(row),
                      expression(row)])
    for algorithm, s in summary.items():
        above = "—" if s["above_rule_points"] is None else spread_cell(s["above_rule_points"], signed=True)
        change = s["pass_k_change_points"]
        table.append([f"mean of {len(s['seeds'])}", display_name(algorithm), "", "",
                      spread_cell(s["sft_accuracy_pct"], "%"), spread_cell(s["trained_accuracy_pct"], "%"),
                      spread_cell(s["gain_points"], signed=True),
                      f"{s['significant']} of {len(s['seeds'])} below {SIGNIFICANCE}", above,
                      "—" if change is None else f"pass@k {spread_cell(change, signed=True)} points",
                      _points_cell(s["expression_gain_points"])])
    return render_markdown_table(
        ["seed", "algorithm", "held-out puzzles", "best target-blind rule", "after SFT", "after RL",
         "RL - SFT, points", "McNemar p (only RL / only SFT)", "after RL - rule, points", _pass_k_header(rows),
         "expression pool held out: SFT -> RL (points, McNemar p; best target-blind rule)"], table)


def _task_table(rows: Sequence[Mapping[str, Any]], summary: Mapping[str, Mapping[str, Any]]) -> str:
    """Another task's Markdown table: per run the best constant answer, the strict accuracy (the answer in tags)
    after SFT and after RL with its McNemar test, the same read without the tags, the answer format rate, pass@1 /
    pass@k and the setting held out of training; then per algorithm the mean (sd; min to max) over its seeds."""
    def paired(reading):  # "SFT -> RL (points, p)", "—" where the run has no such reading
        if not reading:
            return "—"
        return (f"{_pct(reading['sft_accuracy'])} -> {_pct(reading['trained_accuracy'])} "
                f"({reading['gain_points']:+.1f}, p {reading['p_value']:.3g})")

    table = []
    for row in rows:
        constant = ("—" if row["rule"] is None
                    else f"{_pct(row['rule_accuracy'])} ({row['rule'].removeprefix('constant answer ')})")
        formats = row.get("format")
        table.append([str(row["seed"]), display_name(row["algorithm"]), str(row["puzzles"]), constant,
                      _pct(row["sft_accuracy"]), _pct(row["trained_accuracy"]), f"{row['gain_points']:+.1f}",
                      f"{row['p_value']:.3g} ({row['only_rl']} / {row['only_sft']})", paired(row.get("content")),
                      "—" if not formats else f"{_pct(formats['sft'])} -> {_pct(formats['trained'])}",
                      _passes(row), paired(row.get("transfer"))])
    for algorithm, s in summary.items():
        change = s["pass_k_change_points"]
        table.append([f"mean of {len(s['seeds'])}", display_name(algorithm), "", "",
                      spread_cell(s["sft_accuracy_pct"], "%"), spread_cell(s["trained_accuracy_pct"], "%"),
                      spread_cell(s["gain_points"], signed=True),
                      f"{s['significant']} of {len(s['seeds'])} below {SIGNIFICANCE}",
                      _points_cell(s.get("content_gain_points")), "",
                      "—" if change is None else f"pass@k {spread_cell(change, signed=True)} points",
                      _points_cell(s.get("transfer_gain_points"))])
    return render_markdown_table(
        ["seed", "algorithm", "held-out rows", "best constant answer", "after SFT", "after RL", "RL - SFT, points",
         "McNemar p (only RL / only SFT)", "read without the tags: SFT -> RL (points, McNemar p)",
         "answer format: SFT -> RL", _pass_k_header(rows),
         "setting held out of training: SFT -> RL (points, McNemar p)"], table)


def write_combined(output_dir: str | Path, combined: Mapping[str, Any]) -> Path:
    """``<output_dir>/seeds.json`` and ``seeds.md``; returns the Markdown file's path."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / COMBINED_JSON, dict(combined))
    text = combined["table"] + "\n"
    if combined["missing"]:
        text += f"\nNo results (not finished): {', '.join(combined['missing'])}.\n"
    write_atomic(out / COMBINED_MD, text.encode("utf-8"))
    return out / COMBINED_MD
