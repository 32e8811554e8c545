"""Sweeps: one base recipe, many runs (the library behind ``countdown-rl sweep``).

1. A spec (YAML, :class:`SweepSpec`): a base recipe, ``axes`` (recipe keys, each with a list of values),
   ``mode`` (``grid``: every combination; ``zip``: the i-th values together), ``seeds``, ``overrides`` (fixed keys
   on top of the base) and ``output_root``. Relative paths are read from the current directory, like the
   recipe's own paths.
2. Expand (:func:`expand`): one :class:`SweepRun` per point x seed, named from its values
   (``beta=0.02,seed=1``), so a name never changes when values are added to an axis. Its effective recipe is the
   base + overrides + the point's values + ``seed`` + ``output_dir: <output_root>/<name>`` + ``resume: true``.
3. Check (:func:`check_runs`): every run's recipe goes through ``countdown-rl train``'s strict parser and checks
   before anything runs or is written, so a key the recipe does not know, an empty axis or a value the recipe
   rejects is one line naming the spec file and the key (and the run).
4. Write (:func:`write_sweep`): ``sweep.json`` (the spec and its runs) and each run's ``recipe.yaml``. A run
   directory that already ran with a different recipe is refused (one line), never overwritten.
5. Run, locally (:func:`run_local`): one ``countdown-rl train`` process per run, one after another (a fresh
   process each: no state, compiled graph or memory carried between runs). A finished run is skipped, an
   unfinished one resumes from its newest complete checkpoint, a failed one is recorded with its error in its
   ``sweep_run.json`` and the sweep goes on. Each run's output is appended to ``<run>/train.log``; the
   console shows ``[sweep i/n name] step k/N ...``. A signal (SIGTERM, SIGINT, SIGUSR1) is passed to the run in
   flight, which saves a checkpoint; the sweep then stops with exit code 75, like ``train``.
6. Or on a cluster (:func:`slurm_script`): a SLURM job array, one task per run, each running
   ``countdown-rl sweep SPEC --index $SLURM_ARRAY_TASK_ID`` (through ``accelerate launch`` when the spec names an
   ``accelerate_config``); exit 75 requeues the task. We write the sbatch script; SLURM schedules.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from countdown_rl.files import write_atomic, write_json_atomic
from countdown_rl.run_record import read_run_info

SPEC_FILE = "sweep.json"
RUN_STATUS = "sweep_run.json"  # in each run folder: runs of one sweep may run at once (SLURM array tasks)
RUN_RECIPE = "recipe.yaml"
RUN_LOG = "train.log"
SBATCH_FILE = "sweep.sbatch"
PROGRESS_ENV = "COUNTDOWN_RL_SWEEP_RUN"
"""Set by the sweep for each run (``i/n name``): ``countdown-rl train`` then prints one short progress line per
logging step, prefixed ``[sweep i/n name]``."""
PREEMPTED = 75  # train's exit code after a signal (checkpoint saved): the sweep stops with it too
MODES = ("grid", "zip")
SLURM_KEYS = {
    "partition": "SBATCH --partition",
    "account": "SBATCH --account",
    "qos": "SBATCH --qos",
    "time": "SBATCH --time (e.g. 04:00:00)",
    "nodes": "SBATCH --nodes",
    "gpus_per_task": "SBATCH --gpus-per-task",
    "cpus_per_task": "SBATCH --cpus-per-task",
    "mem": "SBATCH --mem (e.g. 64G)",
    "max_parallel": "array tasks running at once (the %N of --array)",
    "signal": "the signal SLURM sends before the time limit: USR1 (default) or TERM (with accelerate_config: "
              "torchrun forwards TERM, not USR1)",
    "signal_seconds": "seconds before the time limit that SLURM sends the signal (default 600): a checkpoint is "
                      "saved",
    "sbatch_args": "more #SBATCH lines, verbatim (a list of strings)",
    "setup": "shell lines run before the run (a list of strings: module load ..., source .venv/bin/activate)",
}
SPEC_KEYS = {
    "base": "the base recipe (a train --config YAML)",
    "name": "the sweep's name (default: the spec file's name)",
    "output_root": "folder of the runs (default: outputs/sweeps/<name>)",
    "axes": "recipe keys -> lists of values",
    "mode": "grid (every combination) or zip (the i-th values together)",
    "seeds": "seeds; each point runs once per seed (default: the base recipe's seed)",
    "overrides": "recipe keys fixed for every run, on top of the base",
    "accelerate_config": "run each run through accelerate launch --config_file this (else a plain process)",
    "slurm": "SLURM settings for --slurm: " + ", ".join(SLURM_KEYS),
    "label_axes": "the axes that name a point in the report's tables and figures (default: all); the others "
                  "are derived from them, e.g. max_steps zipped with num_iterations",
}
RESERVED = {"seed": "use the spec's seeds", "output_dir": "each run's output_dir is <output_root>/<name>",
            "resume": "the sweep always resumes", "overwrite_output_dir": "a sweep never overwrites a run"}


class SweepError(ValueError):
    """A spec or sweep folder that cannot be used (one line, exit code 2)."""


@dataclass(frozen=True)
class SweepSpec:
    """A parsed sweep spec (see the module docstring); ``path`` is the spec file it came from."""

    path: Path
    name: str
    base: Path
    base_recipe: dict[str, Any]
    axes: dict[str, list[Any]]
    mode: str = "grid"
    seeds: tuple[int, ...] = ()
    overrides: dict[str, Any] = field(default_factory=dict)
    output_root: Path = Path("outputs/sweeps")
    accelerate_config: str | None = None
    slurm: dict[str, Any] = field(default_factory=dict)
    label_axes: tuple[str, ...] = ()


@dataclass(frozen=True)
class SweepRun:
    """One run of a sweep: its index, name, the axis values of its point, its seed and effective recipe."""

    index: int
    name: str
    values: dict[str, Any]
    seed: int
    recipe: dict[str, Any]

    @property
    def output_dir(self) -> Path:
        return Path(self.recipe["output_dir"])

    @property
    def point(self) -> str:
        """The name without the seed: runs of the same point differ only in their seed."""
        return value_name(self.values)


# --------------------------------------------------------------------------------------------------------------
# The spec
# --------------------------------------------------------------------------------------------------------------


def _load_yaml(path: Path, what: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise SweepError(f"{what}: {err.strerror or err}: {path}") from None
    except yaml.YAMLError as err:
        raise SweepError(f"{path}: not valid YAML: {' '.join(str(err).split())}") from None


def recipe_keys() -> set[str]:
    """Every key a train recipe accepts (the fields of train's three argument dataclasses; imports TRL)."""
    import dataclasses

    from trl import ModelConfig

    from countdown_rl.commands.train import ScriptArguments
    from countdown_rl.trainer import CountdownGRPOConfig

    return {f.name for cls in (ScriptArguments, CountdownGRPOConfig, ModelConfig) for f in dataclasses.fields(cls)}


def parse_spec(path: str | Path, *, known_keys: set[str] | None = None) -> SweepSpec:
    """Read and check a spec file: every problem is one :class:`SweepError` naming the file and the key.

    ``known_keys`` (default :func:`recipe_keys`) are the keys an axis or override may set.
    """
    path = Path(path)
    raw = _load_yaml(path, "spec")
    if not isinstance(raw, dict):
        raise SweepError(f"{path}: a sweep spec is a YAML mapping with keys {', '.join(SPEC_KEYS)}")
    unknown = [k for k in raw if k not in SPEC_KEYS]
    if unknown:
        raise SweepError(f"{path}: unknown key {unknown[0]!r}; a spec has {', '.join(SPEC_KEYS)}")
    for key in ("base", "axes"):
        if key not in raw:
            raise SweepError(f"{path}: {key}: missing ({SPEC_KEYS[key]})")
    if not isinstance(raw["base"], str) or not raw["base"]:
        raise SweepError(f"{path}: base: must be the path of a recipe file, got {raw['base']!r}")
    base = Path(raw["base"])
    if not base.is_file():
        raise SweepError(f"{path}: base: no such recipe file: {base} (relative paths are read from {Path.cwd()})")
    base_recipe = _load_yaml(base, "base")
    if not isinstance(base_recipe, dict):
        raise SweepError(f"{path}: base: {base} is not a YAML mapping of recipe keys")
    known = recipe_keys() if known_keys is None else known_keys

    def check_keys(where: str, keys: Sequence[str]) -> None:
        for key in keys:
            if key in RESERVED:
                raise SweepError(f"{path}: {where}.{key}: set by the sweep ({RESERVED[key]})")
            if key not in known:
                raise SweepError(f"{path}: {where}.{key}: not a recipe key (see countdown-rl train --help)")

    axes = raw["axes"]
    if not isinstance(axes, dict) or not axes:
        raise SweepError(f"{path}: axes: must map recipe keys to lists of values, e.g. axes: {{beta: [0.0, 0.04]}}")
    for key, values in axes.items():
        if not isinstance(values, list) or not values:
            raise SweepError(f"{path}: axes.{key}: must be a non-empty list of values, got {values!r}")
    check_keys("axes", list(axes))
    mode = raw.get("mode", "grid")
    if mode not in MODES:
        raise SweepError(f"{path}: mode: must be one of {list(MODES)}, got {mode!r}")
    if mode == "zip" and len({len(v) for v in axes.values()}) > 1:
        lengths = ", ".join(f"{k} {len(v)}" for k, v in axes.items())
        raise SweepError(f"{path}: axes: mode zip needs lists of one length, got {lengths}")
    # Two equal points would share one run folder: a value listed twice (grid), the same values twice (zip).
    groups = {"values": list(zip(*axes.values()))} if mode == "zip" else axes
    for key, values in groups.items():
        if len({json.dumps(v, sort_keys=True) for v in values}) != len(values):
            where = "axes" if mode == "zip" else f"axes.{key}"
            raise SweepError(f"{path}: {where}: the same value(s) listed twice: {values!r}")
    overrides = raw.get("overrides") or {}
    if not isinstance(overrides, dict):
        raise SweepError(f"{path}: overrides: must map recipe keys to values")
    check_keys("overrides", list(overrides))
    clash = sorted(set(overrides) & set(axes))
    if clash:
        raise SweepError(f"{path}: overrides.{clash[0]}: also an axis; set it in one place")
    seeds = raw.get("seeds", [base_recipe.get("seed", 42)])
    if (not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool)
                                                            for s in seeds)):
        raise SweepError(f"{path}: seeds: must be a non-empty list of integers, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise SweepError(f"{path}: seeds: a seed is listed twice: {seeds!r}")
    name = raw.get("name", path.stem)
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise SweepError(f"{path}: name: letters, digits, '.', '_' and '-' only, got {name!r}")
    root = raw.get("output_root", f"outputs/sweeps/{name}")
    if not isinstance(root, str) or not root:
        raise SweepError(f"{path}: output_root: must be a folder path, got {root!r}")
    accelerate_config = raw.get("accelerate_config")
    if accelerate_config is not None and not Path(str(accelerate_config)).is_file():
        raise SweepError(f"{path}: accelerate_config: no such file: {accelerate_config}")
    slurm = raw.get("slurm") or {}
    if not isinstance(slurm, dict):
        raise SweepError(f"{path}: slurm: must be a mapping with keys {', '.join(SLURM_KEYS)}")
    for key, value in slurm.items():
        if key not in SLURM_KEYS:
            raise SweepError(f"{path}: slurm.{key}: unknown; slurm has {', '.join(SLURM_KEYS)}")
        if key == "signal" and value not in ("USR1", "TERM", "INT"):
            raise SweepError(f"{path}: slurm.signal: must be USR1, TERM or INT, got {value!r}")
        if key in ("sbatch_args", "setup") and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise SweepError(f"{path}: slurm.{key}: must be a list of strings")
        if key in ("max_parallel", "signal_seconds", "nodes", "gpus_per_task", "cpus_per_task") and (
                not isinstance(value, int) or isinstance(value, bool) or value <= 0):
            raise SweepError(f"{path}: slurm.{key}: must be a positive integer, got {value!r}")
    label_axes = raw.get("label_axes", list(axes))
    if not isinstance(label_axes, list) or not label_axes or any(k not in axes for k in label_axes):
        raise SweepError(f"{path}: label_axes: must be a non-empty list of the axes {list(axes)}, got {label_axes!r}")
    spec = SweepSpec(path=path, name=name, base=base, base_recipe=base_recipe, axes=dict(axes), mode=mode,
                     seeds=tuple(seeds), overrides=dict(overrides), output_root=Path(root),
                     accelerate_config=None if accelerate_config is None else str(accelerate_config), slurm=slurm,
                     label_axes=tuple(label_axes))
    labels = [json.dumps([p[k] for k in label_axes], sort_keys=True) for p in points(spec)]
    if len(set(labels)) != len(labels):
        raise SweepError(f"{path}: label_axes: {label_axes} do not tell every point apart; add an axis")
    return spec


# --------------------------------------------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------------------------------------------


def _label(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}" if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        return "_".join(_label(v) for v in value)
    if isinstance(value, dict):
        return "_".join(f"{k}-{_label(v)}" for k, v in value.items())
    return str(value)


def value_name(values: Mapping[str, Any]) -> str:
    """A folder-safe name for a point: ``key=value`` joined by commas.

    >>> value_name({"beta": 0.02, "num_iterations": 2})
    'beta=0.02,num_iterations=2'
    >>> value_name({"budget_schedule": [[0, 40], [150, 64]]})
    'budget_schedule=0_40_150_64'
    """
    text = ",".join(f"{key}={_label(value)}" for key, value in values.items())
    return re.sub(r"[^A-Za-z0-9._=,+-]", "_", text)


def points(spec: SweepSpec) -> list[dict[str, Any]]:
    """The axis values of each point, in order: grid = every combination (the last axis fastest), zip = i-th.

    >>> spec = SweepSpec(Path("s.yaml"), "s", Path("b.yaml"), {}, {"a": [1, 2], "b": [3, 4]})
    >>> points(spec)
    [{'a': 1, 'b': 3}, {'a': 1, 'b': 4}, {'a': 2, 'b': 3}, {'a': 2, 'b': 4}]
    """
    keys = list(spec.axes)
    combos = zip(*spec.axes.values()) if spec.mode == "zip" else itertools.product(*spec.axes.values())
    return [dict(zip(keys, combo)) for combo in combos]


def expand(spec: SweepSpec) -> list[SweepRun]:
    """Every run of the sweep: each point once per seed, named ``<point>,seed=<seed>``."""
    runs = []
    for values in points(spec):
        for seed in spec.seeds:
            name = value_name({**values, "seed": seed})
            recipe = {**spec.base_recipe, **spec.overrides, **values, "seed": seed,
                      "output_dir": str(spec.output_root / name), "resume": True}
            recipe.pop("overwrite_output_dir", None)
            runs.append(SweepRun(len(runs), name, dict(values), seed, recipe))
    return runs


def _dump_recipe(recipe: Mapping[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(dict(recipe), sort_keys=False, default_flow_style=None)


def check_runs(spec: SweepSpec, runs: Sequence[SweepRun]) -> None:
    """Parse and check every run's recipe as ``countdown-rl train`` would, before any run starts (no model loads).

    A rejected value is one :class:`SweepError` naming the spec, the run and train's own message (which names the
    key).
    """
    from countdown_rl.commands.train import check_recipe, parse_args

    checked: dict[str, str] = {}  # recipes that differ only in output_dir / seed check the same
    with tempfile.TemporaryDirectory(prefix="sweep-check-") as tmp:
        for run in runs:
            key = json.dumps({k: v for k, v in run.recipe.items() if k not in ("output_dir", "seed")},
                             sort_keys=True, default=str)
            if key in checked:
                continue
            file = Path(tmp) / f"{run.index}.yaml"
            file.write_text(_dump_recipe(run.recipe), encoding="utf-8")
            try:
                check_recipe(*parse_args(["--config", str(file)]))
            except (ValueError, TypeError) as err:
                message = " ".join(str(err).replace(str(file), "recipe").split())
                raise SweepError(f"{spec.path}: run {run.name!r}: {message}") from None
            checked[key] = run.name


def run_state(run: SweepRun) -> str:
    """``finished``, ``interrupted``, ``failed``, ``running`` (another process, or one that died), ``started``
    or ``new``: from the run's ``run_info.json`` status."""
    try:
        info = read_run_info(run.output_dir)
    except ValueError:
        return "failed"
    if info is None:
        return "new"
    return str((info.get("status") or {}).get("state", "started"))


def write_sweep(spec: SweepSpec, runs: Sequence[SweepRun]) -> None:
    """``<output_root>/sweep.json`` and each run's ``recipe.yaml``; a run folder whose recipe differs is refused."""
    for run in runs:
        saved = run.output_dir / RUN_RECIPE
        if saved.is_file() and run_state(run) != "new":
            old = _load_yaml(saved, "recipe")
            if json.dumps(old, sort_keys=True, default=str) != json.dumps(run.recipe, sort_keys=True, default=str):
                diff = sorted(k for k in set(old) | set(run.recipe) if old.get(k) != run.recipe.get(k))
                raise SweepError(f"{run.output_dir}: ran with another recipe (keys {', '.join(diff[:5])}); "
                                 f"choose another output_root or remove that run")
    for run in runs:
        write_atomic(run.output_dir / RUN_RECIPE, _dump_recipe(run.recipe).encode("utf-8"))
    write_json_atomic(spec.output_root / SPEC_FILE, {
        "name": spec.name, "spec": str(spec.path.resolve()), "base": str(spec.base), "mode": spec.mode,
        "axes": spec.axes, "label_axes": list(spec.label_axes or spec.axes), "seeds": list(spec.seeds), "overrides": spec.overrides,
        "runs": [{"index": r.index, "name": r.name, "point": r.point, "seed": r.seed, "values": r.values,
                  "label": value_name({k: r.values[k] for k in (spec.label_axes or spec.axes)}),
                  "output_dir": str(r.output_dir)} for r in runs],
    })


def prepare(spec_path: str | Path) -> tuple[SweepSpec, list[SweepRun]]:
    """Parse, expand and check a spec, then write ``sweep.json`` and the run recipes (nothing runs)."""
    spec = parse_spec(spec_path)
    runs = expand(spec)
    check_runs(spec, runs)
    write_sweep(spec, runs)
    return spec, runs


# --------------------------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------------------------


def train_command(run: SweepRun, accelerate_config: str | None = None) -> list[str]:
    """The command that runs (or resumes) one run."""
    recipe = str(run.output_dir / RUN_RECIPE)
    if accelerate_config:
        return [sys.executable, "-m", "accelerate.commands.launch", "--config_file", accelerate_config,
                "-m", "countdown_rl.commands.train", "--config", recipe]
    return [sys.executable, "-m", "countdown_rl.commands.train", "--config", recipe]


def record_status(run: SweepRun, **status: Any) -> None:
    """Write the run's ``sweep_run.json`` (its state under the sweep: running, finished, failed with the error,
    interrupted; seconds). One file per run, so array tasks running at once never write the same file."""
    write_json_atomic(run.output_dir / RUN_STATUS, {"index": run.index, "name": run.name, **status})


def read_status(run_dir: str | Path) -> dict[str, Any]:
    """A run folder's ``sweep_run.json`` ({} if none or unreadable)."""
    path = Path(run_dir) / RUN_STATUS
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, json.JSONDecodeError):
        data = {}
    return data if isinstance(data, dict) else {}


def _last_error(lines: Sequence[str]) -> str:
    """The child's one-line error if it printed one, else its last non-empty line."""
    errors = [line for line in lines if ": error: " in line or line.startswith(("Traceback", "RuntimeError"))]
    tail = [line for line in lines if line.strip()]
    return (errors[-1] if errors else tail[-1] if tail else "no output").strip()


def run_one(run: SweepRun, total: int, *, accelerate_config: str | None = None,
            echo: bool = False) -> tuple[int, list[str]]:
    """Run (or resume) one run in a child process; its output is appended to ``<run>/train.log``. Returns the exit
    code and the output's last lines. A signal to this process is passed on to the child, which saves a
    checkpoint and exits 75."""
    run.output_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, PROGRESS_ENV: f"{run.index + 1}/{total} {run.name}", "PYTHONUNBUFFERED": "1"}
    recent: deque[str] = deque(maxlen=200)  # the output's tail, for the error line of a failed run
    with open(run.output_dir / RUN_LOG, "a", encoding="utf-8") as log:
        log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {shlex.join(train_command(run, accelerate_config))}\n")
        log.flush()
        child = subprocess.Popen(train_command(run, accelerate_config), stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, env=env, errors="replace")
        forwarded = {}

        def forward(signum, _frame):
            if child.poll() is None:
                child.send_signal(signum)

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
            forwarded[sig] = signal.signal(sig, forward)
        try:
            for line in child.stdout:
                log.write(line)
                recent.append(line.rstrip("\n"))
                progress = line.find("[sweep ")  # may follow a progress bar's last frame on the same line
                if echo or ": error: " in line:
                    print(line, end="", flush=True)
                elif progress >= 0:
                    print(line[progress:], end="", flush=True)
            return child.wait(), list(recent)
        finally:
            for sig, handler in forwarded.items():
                signal.signal(sig, handler)
            if child.poll() is None:
                child.kill()


def run_local(spec: SweepSpec, runs: Sequence[SweepRun], *, only: Sequence[int] | None = None,
              echo: bool = False) -> int:
    """Run the runs one after another (``only``: these indices); returns 0, 1 (some run failed) or 75 (stopped by a
    signal; rerun the same command to go on)."""
    chosen = [r for r in runs if only is None or r.index in only]
    failed = []
    for run in chosen:
        head = f"[sweep {run.index + 1}/{len(runs)} {run.name}]"
        state = run_state(run)
        if state == "finished":
            print(f"{head} finished before: skipped", flush=True)  # its sweep_run.json (time taken) is kept
            continue
        print(f"{head} {'resuming' if state != 'new' else 'starting'} -> {run.output_dir}", flush=True)
        started = time.time()
        record_status(run, state="running", started=started)
        code, lines = run_one(run, len(runs), accelerate_config=spec.accelerate_config, echo=echo)
        seconds = round(time.time() - started, 1)
        if code == 0:
            record_status(run, state="finished", seconds=seconds)
            print(f"{head} finished in {seconds:.0f} s", flush=True)
        elif code == PREEMPTED or run_state(run) == "interrupted":  # accelerate's launcher exits 1, not 75
            record_status(run, state="interrupted", seconds=seconds, returncode=code)
            print(f"{head} interrupted (checkpoint saved); rerun the same command to go on", flush=True)
            return PREEMPTED
        else:
            error = _last_error(lines)
            record_status(run, state="failed", seconds=seconds, returncode=code, error=error)
            print(f"{head} failed (exit {code}): {error}; see {run.output_dir / RUN_LOG}", flush=True)
            failed.append(run.name)
    if failed:
        print(f"{len(failed)} of {len(chosen)} run(s) failed: {', '.join(failed)} (details in each {RUN_STATUS})")
        return 1
    return 0


# --------------------------------------------------------------------------------------------------------------
# SLURM
# --------------------------------------------------------------------------------------------------------------


def slurm_script(spec: SweepSpec, runs: Sequence[SweepRun], *, executable: str = "countdown-rl") -> str:
    """An sbatch script: a job array with one task per run, each running its run through ``sweep --index``.

    The task's time limit sends SIGUSR1 ``signal_seconds`` before the end (``train`` saves a checkpoint and exits
    75) and a task that exits 75 requeues itself; the requeued task resumes from that checkpoint.
    """
    s = spec.slurm
    root = spec.output_root.resolve()
    array = f"0-{len(runs) - 1}" + (f"%{s['max_parallel']}" if "max_parallel" in s else "")
    lines = [
        "#!/bin/bash",
        f"# countdown-rl sweep {spec.name}: {len(runs)} runs ({spec.path}), one array task each.",
        f"# Submit: sbatch {root / SBATCH_FILE}   Report: countdown-rl report {root}",
        f"#SBATCH --job-name={spec.name}",
        f"#SBATCH --array={array}",
        f"#SBATCH --output={root}/slurm/%A_%a.out",
        f"#SBATCH --signal={s.get('signal', 'USR1')}@{s.get('signal_seconds', 600)}",
        "#SBATCH --requeue",
        "#SBATCH --ntasks=1",
    ]
    for key, flag in (("partition", "partition"), ("account", "account"), ("qos", "qos"), ("time", "time"),
                      ("nodes", "nodes"), ("gpus_per_task", "gpus-per-task"), ("cpus_per_task", "cpus-per-task"),
                      ("mem", "mem")):
        if key in s:
            lines.append(f"#SBATCH --{flag}={s[key]}")
    lines += [f"#SBATCH {arg}" for arg in s.get("sbatch_args", [])]
    lines += ["", "set -uo pipefail", f"cd {shlex.quote(str(Path.cwd()))}"]
    lines += list(s.get("setup", []))
    lines += [
        "",
        "# The array index is the run's index in sweep.json (the run table: countdown-rl sweep SPEC --dry-run).",
        f"{executable} sweep {shlex.quote(str(spec.path.resolve()))} --index \"$SLURM_ARRAY_TASK_ID\"",
        "code=$?",
        f"if [ \"$code\" -eq {PREEMPTED} ]; then",
        "  # interrupted with a checkpoint saved: back in the queue, the requeued task resumes",
        "  scontrol requeue \"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\"",
        "fi",
        "exit \"$code\"",
        "",
    ]
    return "\n".join(lines)


def write_slurm(spec: SweepSpec, runs: Sequence[SweepRun]) -> Path:
    """Write ``<output_root>/sweep.sbatch`` (and the ``slurm/`` log folder); returns the script's path."""
    path = spec.output_root / SBATCH_FILE
    (spec.output_root / "slurm").mkdir(parents=True, exist_ok=True)
    write_atomic(path, slurm_script(spec, runs).encode("utf-8"))
    path.chmod(0o755)
    return path
