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

Running the runs is :mod:`countdown_rl.sweeps.runner`'s.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from countdown_rl.files import write_atomic, write_json_atomic
from countdown_rl.runs.record import read_run_record

SPEC_FILE = "sweep.json"
RUN_STATUS = "sweep_run.json"  # in each run folder: runs of one sweep may run at once (SLURM array tasks)
RUN_RECIPE = "recipe.yaml"
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
    "signal": "the signal SLURM sends to the run before the time limit: USR1 or TERM (default: USR1, TERM with "
              "accelerate_config: torchrun forwards TERM, not USR1)",
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
    if known_keys is None:
        from countdown_rl.training.recipe import recipe_keys

        known_keys = recipe_keys()
    known = known_keys

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
    if "time" in slurm:
        limit = slurm_seconds(slurm["time"])
        if limit is None:
            raise SweepError(f"{path}: slurm.time: not a SLURM time (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or "
                             f"D-HH:MM:SS), got {slurm['time']!r}")
        lead = slurm.get("signal_seconds", 600)
        if lead >= limit:
            raise SweepError(f"{path}: slurm.signal_seconds: {lead} s is not less than slurm.time {slurm['time']} "
                             f"({limit} s): the signal would come at once; lower signal_seconds")
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


def slurm_seconds(value: Any) -> int | None:
    """A SLURM time limit (``--time``) in seconds, or None when it is not one.

    >>> slurm_seconds("04:00:00"), slurm_seconds("90"), slurm_seconds("1-12"), slurm_seconds("2:30"), slurm_seconds("x")
    (14400, 5400, 129600, 150, None)
    """
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", str(value).strip())
    if match is None:
        return None
    days, a, b, c = match.groups()
    if days is not None:  # D-HH, D-HH:MM, D-HH:MM:SS
        return int(days) * 86400 + int(a) * 3600 + int(b or 0) * 60 + int(c or 0)
    if c is not None:  # HH:MM:SS
        return int(a) * 3600 + int(b) * 60 + int(c)
    return int(a) * 60 + int(b or 0)  # MM or MM:SS


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
    from countdown_rl.training.recipe import check_recipe, missing_setup, parse_args

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
            setup = missing_setup(spec.base, run.recipe)  # a path the base recipe's header says how to make
            if setup:
                raise SweepError(f"{spec.path}: run {run.name!r}: {setup}")
            checked[key] = run.name


def run_state(run: SweepRun) -> str:
    """``finished``, ``interrupted``, ``failed``, ``running`` (another process, or one that died), ``started``
    or ``new``: from the run's ``run_info.json`` status."""
    try:
        record = read_run_record(run.output_dir)
    except ValueError:
        return "failed"
    if record is None:
        return "new"
    return str((record.status or {}).get("state", "started"))


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


