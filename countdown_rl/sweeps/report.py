"""The report of a sweep (``countdown-rl report <sweep dir>``, ``countdown-rl sweep SPEC --report``).

1. Read ``sweep.json`` and each run folder it lists (:func:`countdown_rl.evaluation.report.load_run`: the log history,
   ``run_info.json`` with the effective recipe, ``eval/eval.json`` and ``eval/samples.jsonl``). A run that has not
   finished is left out of the numbers and named in a note.
2. ``sweep.md`` / ``sweep.csv``: one row per point (axis values), over its seeds: final held-out accuracy and
   final held-out reward (mean +- sample standard deviation, and the number of seeds), the rollout reward of the
   last tenth of training, and the wall time.
3. One PNG per axis (per sweep for ``mode: zip``), the GR-REINFORCE study's figure: five panels against training
   progress, held-out accuracy, rollout reward, KL to the reference, clip fraction and gradient norm, one line per value
   (the mean over seeds, and over the other axes of a grid; the band spans the seeds). Progress is the optimizer
   step, or the rollout batch when the runs differ in optimizer steps per rollout (accumulation, PPO epochs).
4. :func:`paired_test`: the exact McNemar test of two points on the same held-out rows, pooled over seeds.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from countdown_rl.evaluation.paired import mcnemar_exact
from countdown_rl.evaluation.report import ReportError, Run, csv_text, load_run, save_figure, series, smooth
from countdown_rl.files import render_markdown_table, write_atomic
from countdown_rl.sweeps.spec import read_status

SWEEP_FILE = "sweep.json"
# (panel title, metric in the log history, is an eval metric, shown in percent, log scale)
PANELS = (
    ("held-out accuracy (greedy)", "accuracy", True, True, False),
    ("rollout reward", "reward", False, False, False),
    ("KL to the reference", "kl", False, False, False),
    ("clip fraction", "clip_ratio/region_mean", False, False, False),
    # log: a large KL coefficient multiplies the gradient by orders of magnitude (before clipping)
    ("gradient norm (log scale)", "grad_norm", False, False, True),
)
CSV_COLUMNS = ["point", "label", "seeds", "finished", "accuracy_mean_pct", "accuracy_sd_pct", "eval_reward_mean",
               "eval_reward_sd", "rollout_reward_mean", "rollout_reward_sd", "seconds_mean"]


@dataclass
class SweepRunResult:
    """One run of a sweep as reported: its sweep entry, the loaded run (None if it has no files yet) and numbers."""

    name: str
    point: str
    label: str  # the point as named in tables and figures (its label_axes)
    values: dict[str, Any]
    seed: int
    run: Run | None
    accuracy: float | None = None  # final held-out accuracy (0..1)
    eval_reward: float | None = None  # mean reward of the final held-out completions
    rollout_reward: float | None = None  # mean logged rollout reward over the last tenth of training
    seconds: float | None = None
    correct_rows: dict[str, bool] = field(default_factory=dict)  # held-out row -> correct (for paired tests)
    rollouts_per_step: float = 1.0


@dataclass
class Sweep:
    """A sweep folder as reported."""

    root: Path
    spec: dict[str, Any]
    results: list[SweepRunResult]
    notes: list[str]

    def points(self) -> list[str]:
        seen: dict[str, None] = {}
        for r in self.results:
            seen.setdefault(r.point, None)
        return list(seen)

    def of_point(self, point: str) -> list[SweepRunResult]:
        return [r for r in self.results if r.point == point]


def is_sweep_dir(path: str | Path) -> bool:
    """Whether ``path`` is a sweep's output root (holds ``sweep.json``)."""
    return (Path(path) / SWEEP_FILE).is_file()


def _rollouts_per_step(info: dict[str, Any]) -> float:
    """Rollout batches per optimizer step, from the run's effective recipe: TRL generates once every
    ``steps_per_generation * num_iterations`` micro-batches, and an optimizer step takes
    ``gradient_accumulation_steps`` of them."""
    recipe = info.get("recipe") or {}
    try:
        return recipe["gradient_accumulation_steps"] / (recipe["steps_per_generation"] * recipe["num_iterations"])
    except (KeyError, TypeError, ZeroDivisionError):
        return 1.0


def _row_key(sample: dict[str, Any]) -> str:
    """A held-out row's identity in samples.jsonl: its ground-truth columns (what is not a sample field)."""
    from countdown_rl.evaluation.scoring import SAMPLE_FIELDS

    return json.dumps({k: v for k, v in sample.items() if k not in (*SAMPLE_FIELDS, "max_tokens")}, sort_keys=True)


def _result(root: Path, entry: dict[str, Any], notes: list[str]) -> SweepRunResult:
    result = SweepRunResult(entry["name"], entry["point"], entry.get("label", entry["point"]), entry["values"],
                            entry["seed"], None)
    path = root / entry["name"]  # every run lives in <output_root>/<name>: the sweep folder can move
    status = read_status(path)
    result.seconds = status.get("seconds") if status.get("state") == "finished" else None
    try:
        run = load_run(path, entry["name"])
    except ReportError:
        notes.append(f"{entry['name']}: no training files yet ({path})")
        return result
    result.run = run
    result.rollouts_per_step = _rollouts_per_step(run.info)
    final = run.trained_result()
    if final is None or (run.info.get("status") or {}).get("state") not in (None, "finished"):
        notes.append(f"{entry['name']}: not finished ({(run.info.get('status') or {}).get('state', 'no final eval')}); "
                     "left out of the numbers")
        return result
    result.accuracy = final.accuracy
    first = [s for s in run.samples if s.get("sample_index", 0) == 0]
    if first:
        result.eval_reward = statistics.fmean(float(s["reward"]) for s in first)
        result.correct_rows = {_row_key(s): s["outcome"] == "correct" for s in first}
    steps, rewards = series(run.log_history, "reward")
    if rewards:
        last = max(steps)
        tail = [v for s, v in zip(steps, rewards) if s > last - max(1, last // 10)]
        result.rollout_reward = statistics.fmean(tail)
    return result


def load_sweep(root: str | Path) -> Sweep:
    """Read a sweep folder (its ``sweep.json`` and every run it lists)."""
    root = Path(root)
    spec_file = root / SWEEP_FILE
    if not spec_file.is_file():
        raise ReportError(f"{root}: no {SWEEP_FILE} (not a sweep's output_root)")
    try:
        spec = json.loads(spec_file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ReportError(f"{root}: unreadable sweep file ({err})") from None
    notes: list[str] = []
    results = [_result(root, entry, notes) for entry in spec["runs"]]
    return Sweep(root, spec, results, notes)


# --------------------------------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------------------------------


def mean_sd(values: Sequence[float | None]) -> tuple[float | None, float | None, int]:
    """Mean, sample standard deviation (None for fewer than 2) and count of the known values.

    >>> mean_sd([0.5, None, 0.7])
    (0.6, 0.14142135623730948, 2)
    """
    known = [v for v in values if v is not None]
    if not known:
        return None, None, 0
    return statistics.fmean(known), (statistics.stdev(known) if len(known) > 1 else None), len(known)


def summary_rows(sweep: Sweep) -> list[dict[str, Any]]:
    """One dict per point (in spec order): the CSV's columns."""
    rows = []
    for point in sweep.points():
        runs = sweep.of_point(point)
        acc, acc_sd, finished = mean_sd([r.accuracy for r in runs])
        reward, reward_sd, _ = mean_sd([r.eval_reward for r in runs])
        rollout, rollout_sd, _ = mean_sd([r.rollout_reward for r in runs])
        seconds, _, _ = mean_sd([r.seconds for r in runs])
        rows.append({
            "point": point, "label": runs[0].label, "seeds": len(runs), "finished": finished,
            "accuracy_mean_pct": None if acc is None else 100 * acc,
            "accuracy_sd_pct": None if acc_sd is None else 100 * acc_sd,
            "eval_reward_mean": reward, "eval_reward_sd": reward_sd,
            "rollout_reward_mean": rollout, "rollout_reward_sd": rollout_sd, "seconds_mean": seconds,
        })
    return rows


def paired_test(sweep: Sweep, point_a: str, point_b: str) -> dict[str, Any]:
    """Exact two-sided McNemar test of ``point_a`` vs ``point_b`` on the same held-out rows, pairing run of seed s
    with run of seed s and pooling the discordant pairs over seeds.

    Returns ``{"only_a", "only_b", "pairs", "p_value"}``: rows only A solved, only B solved, pairs compared.
    """
    by_seed_b = {r.seed: r for r in sweep.of_point(point_b)}
    only_a = only_b = pairs = 0
    for a in sweep.of_point(point_a):
        b = by_seed_b.get(a.seed)
        if b is None or not a.correct_rows or not b.correct_rows:
            continue
        for row in a.correct_rows.keys() & b.correct_rows.keys():
            pairs += 1
            only_a += a.correct_rows[row] and not b.correct_rows[row]
            only_b += b.correct_rows[row] and not a.correct_rows[row]
    return {"only_a": only_a, "only_b": only_b, "pairs": pairs, "p_value": mcnemar_exact(only_a, only_b)}


def _fmt(mean: float | None, sd: float | None, digits: int, suffix: str = "") -> str:
    if mean is None:
        return "—"
    return f"{mean:.{digits}f}{suffix}" + ("" if sd is None else f" ± {sd:.{digits}f}")


def sweep_markdown(sweep: Sweep, rows: Sequence[dict[str, Any]], figures: Sequence[str]) -> str:
    """``sweep.md``: the summary table, the figures and the notes."""
    spec = sweep.spec
    axes = ", ".join(f"`{k}` {v}" for k, v in spec["axes"].items())
    lines = [f"# Sweep {spec['name']}", "", f"{spec['mode']} over {axes}; seeds {spec['seeds']}; "
             f"base `{spec['base']}`" + (f"; overrides {spec['overrides']}" if spec.get("overrides") else ""), ""]
    table = [[r["label"], f"{r['finished']}/{r['seeds']}",
              _fmt(r["accuracy_mean_pct"], r["accuracy_sd_pct"], 1, "%"),
              _fmt(r["eval_reward_mean"], r["eval_reward_sd"], 3),
              _fmt(r["rollout_reward_mean"], r["rollout_reward_sd"], 3),
              "—" if r["seconds_mean"] is None else f"{r['seconds_mean']:.0f}"] for r in rows]
    lines += [render_markdown_table(["point", "finished / seeds", "held-out accuracy", "held-out reward",
                                     "rollout reward (last 10%)", "seconds per run"], table), "",
              "Mean ± sample standard deviation over seeds. Held-out: the final greedy evaluation of each run "
              "(`eval/eval.json`, `eval/samples.jsonl`); rollout reward: the mean logged training reward over the "
              "last tenth of the steps.", ""]
    lines += [f"![{name}]({name})" for name in figures]
    if sweep.notes:
        lines += ["", "## Notes", ""] + [f"- {note}" for note in sweep.notes]
    return "\n".join(lines) + "\n"


def sweep_csv(rows: Sequence[dict[str, Any]]) -> str:
    return csv_text(rows, CSV_COLUMNS)


# --------------------------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------------------------


def _curve(results: Sequence[SweepRunResult], metric: str, eval_metric: bool, per_rollout: bool):
    """(x, mean, low, high) over the runs at each x that every run with data logged."""
    by_x: dict[float, list[float]] = {}
    for r in results:
        if r.run is None:
            continue
        steps, values = series(r.run.log_history, metric, eval_metric=eval_metric)
        for step, value in zip(steps, values):
            by_x.setdefault(step * r.rollouts_per_step if per_rollout else step, []).append(value)
    xs = sorted(by_x)
    return xs, [statistics.fmean(by_x[x]) for x in xs], [min(by_x[x]) for x in xs], [max(by_x[x]) for x in xs]


def plot_axis(sweep: Sweep, groups: dict[str, list[SweepRunResult]], title: str, path: Path) -> bool:
    """The GR-REINFORCE study's figure: five panels (accuracy, reward, KL, clip fraction, gradient norm), one line a
    group."""
    from matplotlib import colormaps
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(22, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(PANELS))
    factors = {r.rollouts_per_step for rs in groups.values() for r in rs if r.run is not None}
    per_rollout = len(factors) > 1
    cmap = colormaps["viridis"]
    drawn = False
    for ax, (panel, metric, eval_metric, percent, log_scale) in zip(axes, PANELS):
        any_line = False
        for i, (label, results) in enumerate(groups.items()):
            xs, mean, low, high = _curve(results, metric, eval_metric, per_rollout)
            if not xs:
                continue
            window = len(xs) // 50 if not eval_metric else 1  # long per-step curves: a moving average
            if window > 1:
                mean, low, high = (smooth(v, window) for v in (mean, low, high))
            scale = 100 if percent else 1
            colour = cmap(i / max(1, len(groups) - 1) * 0.9)
            ax.plot(xs, [v * scale for v in mean], color=colour, label=label, linewidth=1.6)
            if len(results) > 1:
                ax.fill_between(xs, [v * scale for v in low], [v * scale for v in high], color=colour, alpha=0.15)
            any_line = True
        ax.set_title(panel + ("" if eval_metric else "\n(moving average over 2% of the run)"), fontsize="medium")
        ax.set_xlabel("rollout batch" if per_rollout else "optimizer step")
        ax.grid(alpha=0.3)
        if percent:
            ax.set_ylabel("%")
        if log_scale and any_line:
            ax.set_yscale("symlog", linthresh=1e-3)
        if not any_line:
            ax.text(0.5, 0.5, "not logged" + (" (beta = 0)" if metric == "kl" else ""), ha="center", va="center",
                    transform=ax.transAxes, color="gray")
        drawn = drawn or any_line
    handles, labels = next(((h, l) for h, l in (ax.get_legend_handles_labels() for ax in axes) if h), ([], []))
    if handles:
        fig.legend(handles, labels, loc="outside right center", fontsize="small", title=title)
    fig.suptitle(f"{sweep.spec['name']}: {title} (mean over seeds; band: min-max)")
    save_figure(fig, path)
    return drawn


def _groups(sweep: Sweep) -> list[tuple[str, str, dict[str, list[SweepRunResult]]]]:
    """(file stem, title, {line label: runs}) per figure: per axis for a grid, one for zip."""
    axes = list(sweep.spec.get("label_axes") or sweep.spec["axes"])
    if sweep.spec["mode"] == "zip" or len(axes) == 1:
        groups: dict[str, list[SweepRunResult]] = {}
        for r in sweep.results:
            groups.setdefault(r.label, []).append(r)
        return [("axis_" + "+".join(axes), " + ".join(axes), groups)]
    figures = []
    for axis in axes:
        groups = {}
        for r in sweep.results:
            groups.setdefault(f"{axis}={json.dumps(r.values[axis])}", []).append(r)
        figures.append((f"axis_{axis}", axis, groups))
    return figures


def write_sweep_report(root: str | Path, out_dir: str | Path) -> Sweep:
    """``sweep.md``, ``sweep.csv`` and one PNG per axis into ``out_dir``; returns the loaded sweep."""
    sweep = load_sweep(root)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = summary_rows(sweep)
    figures = []
    for stem, title, groups in _groups(sweep):
        name = "".join(c if c.isalnum() or c in "._+=-" else "_" for c in stem) + ".png"
        plot_axis(sweep, groups, title, out / name)
        figures.append(name)
    write_atomic(out / "sweep.csv", sweep_csv(rows).encode("utf-8"))
    write_atomic(out / "sweep.md", sweep_markdown(sweep, rows, figures).encode("utf-8"))
    return sweep
