"""Tables, plots and samples from training runs (the library behind ``countdown-rl report``).

1. Read each run directory: ``trainer_state.json`` (the output dir's, else the newest ``checkpoint-*``'s),
   ``run_info.json`` (algorithm, max_completion_length, model, dataset), ``eval/eval.json`` and
   ``eval/samples.jsonl`` (final evaluation of the trained model) and ``zero_shot/eval.json`` (the base model at
   the same budget). Whatever is missing, or had to be assumed, becomes a note in ``results.md``.
2. ``results.md`` / ``results.csv``: one row per run -- algorithm, budget, zero-shot and trained accuracy,
   improvement, outcome counts, mean output tokens, budget utilisation, and (a task with a blind rule: Countdown)
   the best target-blind rule's accuracy on the same rows and the correct answers on the rows it does not solve.
3. PNG plots (matplotlib, Agg canvas): eval accuracy vs step, trained vs zero-shot accuracy per budget, reward vs
   step, completion length vs step, and correct vs incorrect completion length over training.
4. ``samples.md``: a few successful and failed completions per run.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from countdown_rl.algorithms.curriculum import describe_schedule
from countdown_rl.evaluation.eval_files import EVAL_JSON, SAMPLES_JSONL, read_eval, read_samples
from countdown_rl.evaluation.scoring import SAMPLE_FIELDS, BudgetResult, correct_beyond_rule
from countdown_rl.files import format_number, format_percent, render_markdown_table, write_atomic
from countdown_rl.runs.record import FINAL_EVAL_DIR, RUN_INFO, TRAINER_STATE, ZERO_SHOT_DIR, read_run_record

TRAINED_EVAL, ZERO_SHOT_EVAL = Path(FINAL_EVAL_DIR), Path(ZERO_SHOT_DIR)
PLOTS = {
    "accuracy_vs_step": "accuracy_vs_step.png",
    "accuracy_by_budget": "accuracy_by_budget.png",
    "reward_vs_step": "reward_vs_step.png",
    "completion_length_vs_step": "completion_length_vs_step.png",
    "length_correct_vs_incorrect": "length_correct_vs_incorrect.png",
}
CSV_COLUMNS = [
    "run", "algorithm", "max_tokens", "num_rows", "zero_shot_accuracy_pct", "trained_accuracy_pct",
    "improvement_points", "correct", "partial", "failed", "mean_output_tokens", "utilisation_pct",
    "blind_rule_accuracy_pct", "zero_shot_correct_beyond_rule", "trained_correct_beyond_rule",
]


class ReportError(ValueError):
    """A run directory that cannot be reported on (one line, exit code 2)."""


@dataclass
class Run:
    """Everything read from one run directory."""

    name: str
    path: Path
    log_history: list[dict[str, Any]]
    info: dict[str, Any]
    trained: dict[str, Any] | None  # read_eval() of eval/eval.json
    zero_shot: dict[str, Any] | None  # read_eval() of zero_shot/eval.json
    samples: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    def trained_result(self) -> BudgetResult | None:
        """The trained model's result at the run's training budget (or the best stand-in, with a note)."""
        return _at_budget(self.trained, self.info.get("max_completion_length"))

    def zero_shot_result(self, max_tokens: int) -> BudgetResult | None:
        """The base model's result at ``max_tokens``, if evaluated."""
        if self.zero_shot is None:
            return None
        return next((r for r in self.zero_shot["results"] if r.max_tokens == max_tokens), None)


# --------------------------------------------------------------------------------------------------------------
# Reading run directories
# --------------------------------------------------------------------------------------------------------------


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ReportError(f"{path}: invalid JSON ({err})") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path}: expected a JSON object")
    return data


def _trainer_state(path: Path) -> tuple[Path | None, dict[str, Any] | None]:
    """The output dir's trainer_state.json, else the one in the checkpoint with the highest step."""
    if (path / TRAINER_STATE).is_file():
        return path / TRAINER_STATE, _read_json(path / TRAINER_STATE)
    checkpoints = [
        p for p in path.glob("checkpoint-*")
        if re.fullmatch(r"checkpoint-\d+", p.name) and (p / TRAINER_STATE).is_file()
    ]
    if not checkpoints:
        return None, None
    newest = max(checkpoints, key=lambda p: int(p.name.split("-")[1]))
    return newest / TRAINER_STATE, _read_json(newest / TRAINER_STATE)


def _at_budget(evaluation: dict[str, Any] | None, max_tokens: int | None) -> BudgetResult | None:
    if not evaluation or not evaluation["results"]:
        return None
    results = evaluation["results"]
    exact = next((r for r in results if r.max_tokens == max_tokens), None)
    return exact or max(results, key=lambda r: r.max_tokens)


def _run_info(path: Path, trained: dict | None, zero_shot: dict | None, notes: list[str]) -> dict[str, Any]:
    """run_info.json, with missing keys filled from the eval files (and a note saying so)."""
    try:
        record = read_run_record(path)
    except ValueError as err:
        raise ReportError(str(err)) from None
    # "unknown" and None are what the record holds when run_info.json lacked the key: fill those from elsewhere
    info = {k: v for k, v in (record.to_dict() if record else {}).items() if v not in (None, "unknown")}
    if record is None:
        notes.append(f"no {RUN_INFO}; algorithm, budget, model and dataset taken from the eval files where possible")
    if info.get("algorithm") is None:
        info["algorithm"] = "unknown"
        notes.append("algorithm unknown (not in run_info.json)")
    if info.get("max_completion_length") is None and trained and trained["results"]:
        budgets = [r.max_tokens for r in trained["results"]]
        info["max_completion_length"] = max(budgets)
        notes.append(f"max_completion_length not in run_info.json; assumed {max(budgets)}, the largest eval budget")
    if info.get("model") is None:
        # The zero-shot evaluation is of the base model, so its "model" is what training started from.
        info["model"] = (zero_shot or {}).get("meta", {}).get("model", "unknown")
    if info.get("dataset") is None:
        info["dataset"] = ((trained or zero_shot) or {}).get("meta", {}).get("dataset", "unknown")
    return info


def load_run(path: str | Path, name: str | None = None) -> Run:
    """Read one run directory; raises :class:`ReportError` when it is not one."""
    path = Path(path)
    if not path.is_dir():
        raise ReportError(f"{path}: no such run directory")
    notes: list[str] = []
    state_path, state = _trainer_state(path)
    trained = read_eval(path / TRAINED_EVAL) if (path / TRAINED_EVAL / EVAL_JSON).is_file() else None
    if state is None and trained is None:
        raise ReportError(f"{path}: neither {TRAINER_STATE} (nor a checkpoint's) nor {TRAINED_EVAL}/eval.json")
    if state is None:
        notes.append(f"no {TRAINER_STATE}: no training curves")
    elif state_path.parent != path:
        notes.append(f"training curves from {state_path.relative_to(path)} (no {TRAINER_STATE} in the run dir)")
    if trained is None:
        notes.append(f"no {TRAINED_EVAL}/eval.json: no final evaluation of the trained model")
    zero_shot = read_eval(path / ZERO_SHOT_EVAL) if (path / ZERO_SHOT_EVAL / EVAL_JSON).is_file() else None
    info = _run_info(path, trained, zero_shot, notes)
    log_history = list((state or {}).get("log_history") or [])
    run = Run(name or path.name, path, log_history, info, trained, zero_shot, [], notes)

    budget = info.get("max_completion_length")
    result = run.trained_result()
    if result is not None and budget is not None and result.max_tokens != budget:
        notes.append(f"eval.json has no result at the training budget {budget}; reporting {result.max_tokens} tokens")
    if result is not None:
        if zero_shot is None:
            notes.append(f"no {ZERO_SHOT_EVAL}/eval.json: zero-shot accuracy and improvement unknown")
        elif run.zero_shot_result(result.max_tokens) is None:
            notes.append(f"{ZERO_SHOT_EVAL}/eval.json has no result at {result.max_tokens} tokens")
        elif run.zero_shot_result(result.max_tokens).num_rows != result.num_rows:
            notes.append(f"zero-shot scored {run.zero_shot_result(result.max_tokens).num_rows} rows, the "
                         f"trained model {result.num_rows}: the accuracies are not on the same rows")
        samples_file = path / TRAINED_EVAL / SAMPLES_JSONL
        if samples_file.is_file():
            run.samples = read_samples(samples_file, max_tokens=result.max_tokens)
        else:
            notes.append(f"no {TRAINED_EVAL}/samples.jsonl: no samples")
    if state is not None and not series(log_history, "accuracy", eval_metric=True)[0]:
        notes.append("no eval accuracy in the training logs (eval_accuracy / eval/accuracy)")
    return run


def _unique_names(paths: Sequence[Path]) -> list[str]:
    """Folder names, widened with parent folders until they are distinct."""
    parts = [p.resolve().parts for p in paths]
    for depth in range(1, max(len(p) for p in parts) + 1):
        names = ["/".join(p[-depth:]) for p in parts]
        if len(set(names)) == len(names):
            return names
    return [str(p) for p in paths]


# --------------------------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------------------------


def series(log_history: Sequence[dict[str, Any]], metric: str, *, eval_metric: bool = False) -> tuple[list, list]:
    """(steps, values) of ``metric`` in the trainer's log history.

    Eval metrics are found under both ``eval_<metric>`` (HF Trainer's prefix) and ``eval/<metric>``.

    >>> series([{"step": 1, "eval_accuracy": 0.5}, {"step": 2, "loss": 1.0}, {"step": 3, "eval/accuracy": 0.75}],
    ...        "accuracy", eval_metric=True)
    ([1, 3], [0.5, 0.75])
    """
    keys = [f"eval_{metric}", f"eval/{metric}"] if eval_metric else [metric]
    steps, values = [], []
    for entry in log_history:
        key = next((k for k in keys if entry.get(k) is not None), None)
        if key is not None and "step" in entry:
            steps.append(entry["step"])
            values.append(float(entry[key]))
    return steps, values


def result_row(run: Run) -> dict[str, Any] | None:
    """The run's CSV row (accuracies in percent), or None without a final evaluation."""
    trained = run.trained_result()
    if trained is None:
        return None
    zero = run.zero_shot_result(trained.max_tokens)
    blind = (run.trained or {}).get("blind_rule")
    return {
        "run": run.name,
        "algorithm": run.info["algorithm"],
        "max_tokens": trained.max_tokens,
        "num_rows": trained.num_rows,
        "zero_shot_accuracy_pct": None if zero is None else 100 * zero.accuracy,
        "trained_accuracy_pct": 100 * trained.accuracy,
        "improvement_points": None if zero is None else 100 * (trained.accuracy - zero.accuracy),
        "correct": trained.correct,
        "partial": trained.partial,
        "failed": trained.failed,
        "mean_output_tokens": trained.mean_tokens,
        "utilisation_pct": 100 * trained.utilisation,
        "blind_rule_accuracy_pct": None if blind is None else 100 * blind["accuracy"],
        "zero_shot_correct_beyond_rule": correct_beyond_rule((run.zero_shot or {}).get("blind_rule"),
                                                             trained.max_tokens),
        "trained_correct_beyond_rule": correct_beyond_rule(blind, trained.max_tokens),
    }


def _count(value: int | None) -> str:
    return "—" if value is None else str(value)


def _signed(points: float | None) -> str:
    return "—" if points is None else f"{points:+.1f}"


def results_markdown(runs: Sequence[Run], rows: Sequence[dict[str, Any] | None]) -> str:
    """``results.md``: the table, the plots and the notes."""
    headers = ["run", "algorithm", "max tokens", "rows", "zero-shot accuracy", "trained accuracy", "improvement (points)",
               "correct", "partial", "failed", "mean output tokens", "utilisation", "best target-blind rule",
               "correct beyond the rule (zero-shot -> trained)"]
    table = [
        [
            row["run"], row["algorithm"], row["max_tokens"], row["num_rows"],
            format_percent(None if row["zero_shot_accuracy_pct"] is None else row["zero_shot_accuracy_pct"] / 100),
            format_percent(row["trained_accuracy_pct"] / 100), _signed(row["improvement_points"]),
            row["correct"], row["partial"], row["failed"], format_number(row["mean_output_tokens"]),
            format_percent(row["utilisation_pct"] / 100),
            format_percent(None if row["blind_rule_accuracy_pct"] is None else row["blind_rule_accuracy_pct"] / 100),
            f"{_count(row['zero_shot_correct_beyond_rule'])} -> {_count(row['trained_correct_beyond_rule'])}",
        ]
        for row in rows
        if row is not None
    ]
    lines = ["# Results", ""]
    if table:
        lines += [
            render_markdown_table(headers, table), "",
            "Accuracy: share of the held-out rows whose first completion (greedy unless sampled) is correct. Improvement: trained minus zero-shot accuracy, in percentage points. "
            "Utilisation: mean output tokens / max tokens. Best target-blind rule: the accuracy, on the same rows, of "
            "the best fixed expression over the numbers that never reads the target (Countdown); correct beyond the "
            "rule: correct answers on the rows that rule does not solve.", "",
        ]
    else:
        lines += ["No run has a final evaluation (eval/eval.json).", ""]
    lines += ["## Plots", ""]
    lines += [f"![{key.replace('_', ' ')}]({file})" for key, file in PLOTS.items()]
    lines += ["", "Samples: [samples.md](samples.md).", "", "## Runs", ""]
    for run in runs:
        info = run.info
        schedule = f", budget_schedule {describe_schedule(info['budget_schedule'])}" if info.get("budget_schedule") else ""
        lines.append(f"- **{run.name}** (`{run.path}`): algorithm {info['algorithm']}, max_completion_length "
                     f"{info.get('max_completion_length', 'unknown')}{schedule}, model `{info['model']}`, "
                     f"dataset `{info['dataset']}`")
    notes = [(run.name, note) for run in runs for note in run.notes]
    if notes:
        lines += ["", "## Notes", ""] + [f"- {name}: {note}" for name, note in notes]
    return "\n".join(lines) + "\n"


def results_csv(rows: Sequence[dict[str, Any] | None]) -> str:
    """``results.csv``: one row per evaluated run; empty cells where a number is unknown."""
    return csv_text([row for row in rows if row is not None], CSV_COLUMNS)


def csv_text(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """CSV of ``rows`` (the given ``columns``): empty cells for None, floats rounded to 4 places.

    >>> print(csv_text([{"a": 0.123456, "b": None}], ["a", "b"]), end="")
    a,b
    0.1235,
    """
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row[k] is None else (round(row[k], 4) if isinstance(row[k], float) else row[k])
                         for k in columns})
    return buffer.getvalue()


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text``."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def samples_markdown(runs: Sequence[Run], per_kind: int = 2) -> str:
    """``samples.md``: up to ``per_kind`` correct and ``per_kind`` incorrect first samples per run."""
    lines = ["# Samples", ""]
    for run in runs:
        lines += [f"## {run.name}", ""]
        first = [row for row in run.samples if row.get("sample_index", 0) == 0]
        if not first:
            lines += ["No samples (eval/samples.jsonl missing or empty).", ""]
            continue
        correct = [row for row in first if row["outcome"] == "correct"]
        # Failures: partial answers first (wrong equations are more telling than missing tags), then failed.
        wrong = sorted((row for row in first if row["outcome"] != "correct"), key=lambda r: r["outcome"] != "partial")
        for title, chosen in (("Successes", correct[:per_kind]), ("Failures", wrong[:per_kind])):
            lines += [f"### {title}", ""]
            if not chosen:
                lines += ["None.", ""]
            for row in chosen:
                fence = _fence(row["completion"])
                # The task's ground-truth columns are whatever a sample row holds besides the common fields.
                truth = ", ".join(f"{k} {row[k]}" for k in row if k not in (*SAMPLE_FIELDS, "max_tokens"))
                lines += [
                    f"- {truth}: **{row['outcome']}**, "
                    + ("no answer" if row["answer"] is None else f"answer `{row['answer']}`")
                    + f", {row['num_tokens']} tokens{' (truncated)' if row['truncated'] else ''}",
                    "", f"{fence}text", row["completion"], fence, "",
                ]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------------------------------


def _figure(width: float = 7.0, height: float = 4.5):
    # A Figure on its own Agg canvas: no pyplot, so no global backend or figure state is touched.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def save_figure(fig, path: Path) -> None:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    write_atomic(path, buffer.getvalue())


def _no_data(ax, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="gray")


def _colours(names: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {name: cmap(i % 10) for i, name in enumerate(names)}


SMOOTH_ABOVE = 60  # per-step curves longer than this are drawn as a moving average (smoothing_window)


def smooth(values: Sequence[float], window: int) -> list[float]:
    """Trailing moving average over ``window`` points (the first ones over what there is).

    >>> smooth([0.0, 2.0, 4.0, 6.0], 2)
    [0.0, 1.0, 3.0, 5.0]
    """
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v - (values[i - window] if i >= window else 0.0)
        out.append(total / min(i + 1, window))
    return out


def smoothing_window(points: int) -> int:
    """The moving-average window for a per-step curve of ``points`` points: 1 (raw) up to 60 points, else about a
    thirtieth of the curve, so a 450-step run's per-step noise does not hide its trend.

    >>> smoothing_window(50), smoothing_window(450)
    (1, 15)
    """
    return 1 if points <= SMOOTH_ABOVE else points // 30


def _line_plot(
    runs: Sequence[Run],
    path: Path,
    title: str,
    ylabel: str,
    curves: Callable[[Run], list[tuple[str, list, list, str]]],
    *,
    percent: bool = False,
    empty: str = "no data in any run",
    extra: Callable[[Any, Run, Any], None] | None = None,
) -> bool:
    """One line per (run, curve) against the training step; ``curves(run)`` gives (label suffix, steps, values,
    line style) and ``extra(ax, run, colour)`` adds reference lines. Returns whether any curve had data."""
    from matplotlib.ticker import MaxNLocator

    fig, ax = _figure()
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    colours = _colours([run.name for run in runs])
    drawn, windows = False, set()
    for run in runs:
        for suffix, steps, values, style in curves(run):
            if steps:
                scale, window = (100 if percent else 1), smoothing_window(len(steps))
                windows.add(window)
                ax.plot(steps, [v * scale for v in smooth(values, window)], style, color=colours[run.name],
                        marker="." if window == 1 else None, label=f"{run.name}{suffix}")
                drawn = True
        if extra is not None:
            extra(ax, run, colours[run.name])
    if windows - {1}:  # say so: a smoothed curve is not the logged values
        title += f"\n(moving average over {' / '.join(map(str, sorted(windows - {1})))} logged steps)"
    ax.set_title(title)
    ax.set_xlabel("training step (optimizer steps)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if drawn:
        ax.legend(fontsize="small")
    else:
        _no_data(ax, empty)
    save_figure(fig, path)
    return drawn


def plot_accuracy_vs_step(runs: Sequence[Run], path: Path) -> bool:
    """Held-out accuracy logged during training, with each run's zero-shot accuracy as a dotted line."""
    def zero_line(ax, run, colour):
        trained = run.trained_result()
        zero = run.zero_shot_result(trained.max_tokens) if trained else None
        if zero is not None and series(run.log_history, "accuracy", eval_metric=True)[0]:
            ax.axhline(100 * zero.accuracy, color=colour, linestyle=":", label=f"{run.name} zero-shot")

    return _line_plot(
        runs, path, "Held-out accuracy during training", "accuracy (% of rows)",
        lambda run: [("", *series(run.log_history, "accuracy", eval_metric=True), "-")],
        percent=True, empty="no eval accuracy logged (eval_accuracy / eval/accuracy)", extra=zero_line,
    )


def plot_reward_vs_step(runs: Sequence[Run], path: Path) -> bool:
    """Mean training reward per logging step."""
    return _line_plot(runs, path, "Training reward", "mean reward per completion (sum of reward functions)",
                      lambda run: [("", *series(run.log_history, "reward"), "-")], empty="no reward logged")


def budget_over_steps(run: Run) -> tuple[list, list]:
    """The completion budget at each step that logged a completion length: the logged ``completion_budget`` (it
    follows a ``budget_schedule``), else the run's ``max_completion_length``; empty when neither is known.

    >>> log = [{"step": 1, "completions/mean_length": 30.0, "completion_budget": 40},
    ...        {"step": 2, "completions/mean_length": 45.0, "completion_budget": 64}]
    >>> budget_over_steps(Run("r", Path("r"), log, {"max_completion_length": 64}, None, None, []))
    ([1, 2], [40.0, 64.0])
    """
    steps, _ = series(run.log_history, "completions/mean_length")
    logged = dict(zip(*series(run.log_history, "completion_budget")))
    fixed = run.info.get("max_completion_length")
    if not steps or not (logged or fixed):
        return [], []
    budgets = [logged.get(step, fixed) for step in steps]
    kept = [(s, b) for s, b in zip(steps, budgets) if b is not None]
    return [s for s, _ in kept], [b for _, b in kept]


def plot_completion_length_vs_step(runs: Sequence[Run], path: Path) -> bool:
    """Mean completion length per logging step, with each run's budget dashed (a step line when it followed a
    ``budget_schedule``)."""
    def budget_line(ax, run, colour):
        steps, budgets = budget_over_steps(run)
        if steps:
            ax.step(steps, budgets, where="post", color=colour, linestyle="--", alpha=0.6, label=f"{run.name} budget")

    return _line_plot(
        runs, path, "Completion length during training", "mean completion length (tokens)",
        lambda run: [("", *series(run.log_history, "completions/mean_length"), "-")],
        empty="no completion length logged (completions/mean_length)", extra=budget_line,
    )


def plot_length_correct_vs_incorrect(runs: Sequence[Run], path: Path) -> bool:
    """Mean length of correct (solid) and incorrect (dashed) completions over training."""
    return _line_plot(
        runs, path, "Length of correct vs incorrect completions", "mean completion length (tokens)",
        lambda run: [(" correct", *series(run.log_history, "outcomes/mean_length_correct"), "-"),
                     (" incorrect", *series(run.log_history, "outcomes/mean_length_incorrect"), "--")],
        empty="no outcomes/mean_length_correct or _incorrect logged",
    )


def plot_accuracy_by_budget(runs: Sequence[Run], path: Path) -> bool:
    """Bars per budget: for each run (ordered by algorithm), zero-shot (hatched) next to trained (solid)."""
    from matplotlib.patches import Patch

    fig, ax = _figure()
    evaluated = sorted((run for run in runs if run.trained), key=lambda run: (run.info["algorithm"], run.name))
    algorithms = sorted({run.info["algorithm"] for run in evaluated})
    colour = _colours(algorithms)
    budgets = sorted({r.max_tokens for run in evaluated for r in run.trained["results"]})
    groups = {b: [run for run in evaluated if any(r.max_tokens == b for r in run.trained["results"])] for b in budgets}
    # Two bars (zero-shot, trained) per run, all groups equally wide.
    width = 0.8 / (2 * max((len(g) for g in groups.values()), default=1))

    def bar(x: float, result: BudgetResult, c, **style) -> None:
        ax.bar(x, 100 * result.accuracy, width, color=c, edgecolor=c, **style)
        ax.text(x, 100 * result.accuracy, format_percent(result.accuracy, 0), ha="center", va="bottom",
                fontsize="x-small")

    for g, budget in enumerate(budgets):
        left = g - width * len(groups[budget])
        for i, run in enumerate(groups[budget]):
            c = colour[run.info["algorithm"]]
            zero = run.zero_shot_result(budget)
            if zero is not None:
                bar(left + (2 * i + 0.5) * width, zero, c, alpha=0.35, hatch="//")
            bar(left + (2 * i + 1.5) * width, next(r for r in run.trained["results"] if r.max_tokens == budget), c)
    ax.set_xticks(range(len(budgets)), [f"{b} tokens" for b in budgets])
    ax.set_xlabel("evaluation budget (max new tokens)")
    ax.set_ylabel("accuracy (% of rows)")
    ax.set_title("Trained vs zero-shot accuracy per budget")
    ax.grid(axis="y", alpha=0.3)
    if budgets:
        handles = [Patch(color=colour[alg], label=f"{alg}: trained") for alg in algorithms]
        handles.append(Patch(facecolor="lightgray", hatch="//", edgecolor="gray", label="zero-shot (base model)"))
        # A band above the tallest bar for the legend, which would otherwise hide the last group's labels.
        ax.set_ylim(0, max(5.0, ax.get_ylim()[1] * 1.3))
        ax.legend(handles=handles, fontsize="small", loc="upper center", ncol=len(handles))
    else:
        _no_data(ax, "no eval/eval.json in any run")
    save_figure(fig, path)
    return bool(budgets)


# --------------------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------------------


def write_report(run_dirs: Sequence[str | Path], out_dir: str | Path, *, samples_per_kind: int = 2) -> list[Run]:
    """Read the runs and write results.md, results.csv, samples.md and the PNG plots into ``out_dir``."""
    paths = [Path(p) for p in run_dirs]
    runs = [load_run(p, name) for p, name in zip(paths, _unique_names(paths))]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    drawn = {
        "accuracy_vs_step": plot_accuracy_vs_step(runs, out / PLOTS["accuracy_vs_step"]),
        "accuracy_by_budget": plot_accuracy_by_budget(runs, out / PLOTS["accuracy_by_budget"]),
        "reward_vs_step": plot_reward_vs_step(runs, out / PLOTS["reward_vs_step"]),
        "completion_length_vs_step": plot_completion_length_vs_step(runs, out / PLOTS["completion_length_vs_step"]),
        "length_correct_vs_incorrect": plot_length_correct_vs_incorrect(
            runs, out / PLOTS["length_correct_vs_incorrect"]
        ),
    }
    rows = [result_row(run) for run in runs]
    markdown = results_markdown(runs, rows)
    empty = [PLOTS[k] for k, ok in drawn.items() if not ok]
    if empty:
        markdown += f"\nPlots without data (drawn empty, with a message): {', '.join(empty)}.\n"
    write_atomic(out / "results.csv", results_csv(rows))
    write_atomic(out / "samples.md", samples_markdown(runs, samples_per_kind))
    write_atomic(out / "results.md", markdown)
    return runs
