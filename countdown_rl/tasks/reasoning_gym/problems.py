"""reasoning-gym's generators behind the task: dataset names, their configs and difficulty levels checked, rows made
offline and regenerated for scoring.

1. Check (:func:`check_datasets`): each name is one reasoning-gym lists (else the nearest names), each weight a
   finite number >= 0 with a positive sum, each config key one the dataset's config class takes, each difficulty
   level one its curriculum has; the resolved config is then built and validated by reasoning-gym itself. A dataset
   whose questions depend on Python's string hashing (``HASH_SEEDED``) is refused without a fixed ``PYTHONHASHSEED``,
   unless asked for anyway (``allow_defective``). (The other defects the walk over every dataset found,
   tests/tasks/reasoning_gym/test_problems_datasets.py, are worked around: step 3, and ``verifier.OWN_CHECKS``.)
2. Generate (:func:`generate_rows`): each row draws its dataset by weight (seeded); the dataset's ``i``-th use takes
   its entry ``i`` of ``create_dataset(name, size=n, seed=s, **config)``, where ``s`` is drawn from the split seed
   and the name (reasoning-gym seeds entry ``i`` with ``s + i``, so seeds 0 and 1 would share all but one entry). A
   row keeps ``question``, ``answer`` (the reference) and ``source``: JSON naming dataset, config, levels, seed, size
   and index, all it takes to regenerate the entry, because a scorer reads the entry's metadata, which is not always
   JSON (tuples, sets, grids).
3. Regenerate (:func:`source_entry`): the entry a row's ``source`` names, cached per process; a row whose question
   differs from its regenerated entry's (another reasoning-gym version) cannot be scored. Python's and numpy's global
   random generators are seeded from the entry's seed and index while it is made, and restored after: a generator
   that draws from them (codeio's programs, one of list_functions') then makes the same entry every time.

reasoning-gym is imported on first use (about 3 s), never at import time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import functools
import hashlib
import json
import math
import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "COMPOSITE",
    "DatasetSpec",
    "EXTRA",
    "HASH_SEEDED",
    "check_datasets",
    "dataset_config",
    "dataset_names",
    "dataset_seed",
    "generate_rows",
    "parse_source",
    "require_library",
    "source_entry",
    "source_problem",
]

EXTRA = "pip install -e '.[reasoning-gym]'"
"""How a user gets the library (pinned in pyproject's ``reasoning-gym`` extra)."""
COMPOSITE = "composite"
"""reasoning-gym's own mixture; here a mixture is ``datasets=a:2,b:1`` instead, so the name is refused."""
_SEED_SIZE = ("seed", "size")

HASH_SEEDED = ("codeio", "isomorphic_strings", "polynomial_multiplication", "ransom_note")
"""Datasets whose rows depend on the process's string hashing (generators that pick from a set; some of codeio's
programs): rows made in one process regenerate in another (a resumed run, another rank, a later evaluation) only
under one fixed ``PYTHONHASHSEED``; refused without it unless ``allow_defective``."""  # config fields the task sets itself, from the split seed and the row count


def require_library() -> None:
    """Raise a one-line ValueError naming the extra when reasoning-gym is not installed."""
    try:
        import reasoning_gym  # noqa: F401
    except ImportError:
        raise ValueError(f"task reasoning_gym needs the reasoning-gym package: in the clone, {EXTRA}") from None


@functools.lru_cache(maxsize=1)
def dataset_names() -> tuple[str, ...]:
    """Every dataset reasoning-gym lists, sorted (its ``composite`` included).

    >>> "chain_sum" in dataset_names()
    True
    """
    from reasoning_gym.factory import DATASETS

    return tuple(sorted(DATASETS))


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset of a task: its name, its weight in a mixture, its config keys as given and its curriculum levels
    (None: the dataset's defaults); :func:`dataset_config` resolves the two."""

    name: str
    weight: float
    config: Mapping[str, Any]
    levels: Any = None

    @property
    def key(self) -> tuple[str, str, str]:
        """``(name, config JSON, levels JSON)``: what a row's ``source`` records, hashable for caches."""
        return self.name, json.dumps(dict(self.config), sort_keys=True), json.dumps(self.levels, sort_keys=True)


def _version() -> str:
    from importlib.metadata import version

    return version("reasoning-gym")


def _config_fields(name: str) -> tuple[str, ...]:
    from reasoning_gym.factory import DATASETS

    return tuple(f.name for f in dataclasses.fields(DATASETS[name][1]) if f.name not in _SEED_SIZE)


def _unknown_name(name: str, where: str) -> str:
    near = difflib.get_close_matches(name, dataset_names(), n=4, cutoff=0.5)
    hint = f"; near: {', '.join(near)}" if near else ""
    return (f"{where}: unknown reasoning-gym dataset {name!r}{hint} "
            f"(all {len(dataset_names())}: python -c 'import reasoning_gym; print(sorted(reasoning_gym.factory.DATASETS))')")


def _level_config(name: str, levels: Any) -> dict[str, Any]:
    """Config values of ``name``'s curriculum at ``levels`` (an int: every attribute at that level; a mapping:
    attribute -> level)."""
    from reasoning_gym.factory import CURRICULA, create_curriculum

    if name not in CURRICULA:
        raise ValueError(f"levels: dataset {name!r} has no difficulty curriculum in reasoning-gym; set its config instead")
    curriculum = create_curriculum(name)
    attributes = curriculum.attributes
    if isinstance(levels, bool) or not isinstance(levels, (int, Mapping)):
        raise ValueError(f"levels: {name}: expected a level (int) or {{attribute: level}}, got {levels!r}")
    wanted = {attr: levels for attr in attributes} if isinstance(levels, int) else dict(levels)
    for attr, level in wanted.items():
        if attr not in attributes:
            raise ValueError(f"levels: dataset {name!r} has no difficulty attribute {attr!r}; "
                             f"it has: {', '.join(sorted(attributes))}")
        top = len(attributes[attr].levels) - 1
        if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= top:
            raise ValueError(f"levels: {name}.{attr}={level!r}: expected a level from 0 to {top}")
        curriculum.set_attr_level(attr, level)
    config = curriculum.generate_configuration({"seed": 0, "size": 1})
    fields = set(_config_fields(name))
    return {k: v for k, v in dataclasses.asdict(config).items() if k in fields}


def dataset_config(name: str, config: Mapping[str, Any], levels: Any) -> dict[str, Any]:
    """The keyword config of ``name``: its curriculum's values at ``levels`` (when given), then ``config`` over them.

    Level values keep their types (some are tuples), so they are not JSON: a row records the levels, not the values.
    """
    resolved = _level_config(name, levels) if levels is not None else {}
    resolved.update(config)
    return resolved


def _defect(name: str) -> str | None:
    if name in HASH_SEEDED and not os.environ.get("PYTHONHASHSEED", "random").isdigit():
        return ("its questions depend on Python's string hashing, so rows do not regenerate in another process; "
                "export PYTHONHASHSEED=0 (any fixed number) for every process that makes or scores its rows")
    return None


def check_datasets(datasets: str, config: Mapping[str, Any], levels: Mapping[str, Any],
                   allow_defective: bool = False) -> tuple[DatasetSpec, ...]:
    """The task's datasets from the options' spellings, or a one-line ValueError saying what is wrong.

    ``datasets`` is ``name`` or ``name:weight,name:weight``; ``config`` and ``levels`` map dataset names to a config
    mapping and to a curriculum level (or ``{attribute: level}``); explicit config keys override levels.

    >>> spec, = check_datasets("chain_sum", {"chain_sum": {"max_terms": 2}}, {})
    >>> spec.name, spec.weight, spec.config["max_terms"]
    ('chain_sum', 1.0, 2)
    """
    from reasoning_gym.factory import DATASETS

    parsed: list[tuple[str, float]] = []
    for part in (p.strip() for p in str(datasets).split(",")):
        if not part:
            continue
        name, sep, raw = part.partition(":")
        name = name.strip()
        if name == COMPOSITE:
            raise ValueError("datasets: 'composite' is reasoning-gym's own mixture; "
                             "write the mixture here instead, e.g. datasets=chain_sum:2,basic_arithmetic:1")
        if name not in DATASETS:
            raise ValueError(_unknown_name(name, "datasets"))
        defect = _defect(name)
        if defect is not None and not allow_defective:
            raise ValueError(f"datasets: {name}: {defect} (reasoning-gym {_version()}); "
                             "allow_defective=true uses it anyway")
        try:
            weight = float(raw) if sep else 1.0
        except ValueError:
            raise ValueError(f"datasets: {part!r}: the weight after ':' must be a number") from None
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"datasets: {part!r}: a weight must be a finite number >= 0")
        if any(name == seen for seen, _ in parsed):
            raise ValueError(f"datasets: {name!r} is listed twice")
        parsed.append((name, weight))
    if not parsed:
        raise ValueError("datasets: name at least one reasoning-gym dataset, e.g. datasets=chain_sum")
    if sum(w for _, w in parsed) <= 0:
        raise ValueError(f"datasets: the weights of {datasets!r} sum to 0; give at least one a positive weight")
    names = {name for name, _ in parsed}
    for option, given in (("config", config), ("levels", levels)):
        for name in given:
            if name not in names:
                raise ValueError(f"{option}: {name!r} is not one of the datasets ({', '.join(sorted(names))}); "
                                 f"{option} maps a dataset name to its settings")
    specs = []
    for name, weight in parsed:
        overrides = config.get(name, {})
        if not isinstance(overrides, Mapping):
            raise ValueError(f"config: {name}: expected {{key: value}}, got {overrides!r}")
        fields = _config_fields(name)
        for key in overrides:
            if key in _SEED_SIZE:
                raise ValueError(f"config: {name}.{key} is set by the task (from split_seed and num_generated_rows)")
            if key not in fields:
                raise ValueError(f"config: dataset {name!r} takes no key {key!r}; it takes: {', '.join(fields)}")
        if json.loads(json.dumps(dict(overrides))) != overrides:
            raise ValueError(f"config: {name}: values must be JSON (numbers, strings, lists, objects), got {overrides!r}")
        resolved = dataset_config(name, overrides, levels.get(name))
        try:
            config_obj = DATASETS[name][1](**resolved, seed=0, size=1)
            if hasattr(config_obj, "validate"):
                config_obj.validate()
        except (AssertionError, TypeError, ValueError) as err:
            raise ValueError(f"config: {name} {resolved}: reasoning-gym refuses it: {err or type(err).__name__}") from None
        specs.append(DatasetSpec(name, weight, dict(overrides), levels.get(name)))
    return tuple(specs)


@contextlib.contextmanager
def _seeded_globals(*key: Any):
    """Python's and numpy's global random generators seeded from ``key`` inside the block, restored after."""
    import numpy as np  # reasoning-gym's dependency: imported where the task is used, not with the package

    digest = hashlib.sha256(repr(key).encode()).digest()
    python_state, numpy_state = random.getstate(), np.random.get_state()
    random.seed(digest)
    np.random.seed(int.from_bytes(digest[:4], "big"))
    try:
        yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)


@functools.lru_cache(maxsize=64)
def _dataset(name: str, config_json: str, levels_json: str, seed: int, size: int) -> Any:
    import reasoning_gym

    config = dataset_config(name, json.loads(config_json), json.loads(levels_json))
    with _seeded_globals(name, seed, size):
        return reasoning_gym.create_dataset(name, seed=seed, size=size, **config)


def dataset_seed(seed: int, name: str) -> int:
    """The seed reasoning-gym gets for ``name`` under the split seed ``seed``: drawn from both, so two split seeds give
    unrelated entries (reasoning-gym seeds entry ``i`` with ``seed + i``) and so do two datasets of a mixture.

    >>> dataset_seed(0, "chain_sum") == dataset_seed(0, "chain_sum") != dataset_seed(1, "chain_sum")
    True
    """
    digest = hashlib.sha256(f"countdown-rl/{seed}/{name}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def generate_rows(specs: Sequence[DatasetSpec], n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` rows (``question``, ``answer``, ``source``) drawn from ``specs`` by weight, deterministic per seed.

    >>> row, = generate_rows(check_datasets("chain_sum", {}, {}), 1, seed=3)
    >>> sorted(row), json.loads(row["source"])["dataset"]
    (['answer', 'question', 'source'], 'chain_sum')
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    weights = [spec.weight for spec in specs]
    used = [0] * len(specs)
    rows = []
    for _ in range(n):
        k = rng.choices(range(len(specs)), weights=weights)[0] if len(specs) > 1 else 0
        spec, index = specs[k], used[k]
        used[k] += 1
        dseed = dataset_seed(seed, spec.name)
        _, entry = _entry(*spec.key, dseed, n, index)
        source = {"dataset": spec.name, "config": dict(spec.config), "seed": dseed, "size": n, "index": index}
        if spec.levels is not None:
            source["levels"] = spec.levels
        rows.append({"question": entry["question"], "answer": entry["answer"],
                     "source": json.dumps(source, sort_keys=True)})
    return rows


def parse_source(source: Any) -> tuple[str, str, str, int, int, int] | str:
    """``(dataset, config JSON, levels JSON, seed, size, index)`` from a row's ``source``, or the problem with it."""
    try:
        fields = json.loads(source) if isinstance(source, str) else None
    except ValueError:
        fields = None
    if not isinstance(fields, dict):
        return "'source' is not a JSON object naming dataset, config, seed, size and index"
    name, config = fields.get("dataset"), fields.get("config", {})
    numbers = [fields.get(k) for k in ("seed", "size", "index")]
    if not isinstance(name, str) or not isinstance(config, dict):
        return "'source' needs 'dataset' (a name) and 'config' (an object)"
    if any(isinstance(v, bool) or not isinstance(v, int) for v in numbers) or not 0 <= numbers[2] < numbers[1]:
        return f"'source' needs integer seed, size and index with 0 <= index < size, got {numbers}"
    if name not in dataset_names():
        return _unknown_name(name, "'source'")
    return (name, json.dumps(config, sort_keys=True), json.dumps(fields.get("levels"), sort_keys=True),
            numbers[0], numbers[1], numbers[2])


@functools.lru_cache(maxsize=65536)
def _entry(name: str, config_json: str, levels_json: str, seed: int, size: int, index: int) -> tuple[Any, dict[str, Any]]:
    dataset = _dataset(name, config_json, levels_json, seed, size)
    with _seeded_globals(name, seed, index):  # a generator drawing from the global generators repeats itself
        return dataset, dataset[index]


def source_entry(source: str) -> tuple[str, Any, dict[str, Any]]:
    """The dataset name, the reasoning-gym dataset and the entry a valid row ``source`` names (regenerated once, then
    cached)."""
    parsed = parse_source(source)
    if isinstance(parsed, str):
        raise ValueError(parsed)
    return (parsed[0], *_entry(*parsed))


def source_problem(question: Any, source: Any) -> str | None:
    """Why a row's ``source`` cannot be scored, or None: it must parse and regenerate the row's own question."""
    parsed = parse_source(source)
    if isinstance(parsed, str):
        return parsed
    try:
        _, entry = _entry(*parsed)
    except Exception as err:  # a config this reasoning-gym refuses: the row's problem, named
        return f"'source' does not regenerate: {type(err).__name__}: {err}"
    if entry["question"] != question:
        return "'question' differs from the entry its 'source' regenerates (rows made by another reasoning-gym version?)"
    return None
