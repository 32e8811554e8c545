"""Target-blind rules: fixed expressions over a puzzle's numbers that never read its target.

A model that always answers "add the numbers" solves every puzzle whose target is the sum; at small sizes that is a
large share of Countdown (conditioned on a solution existing, most small puzzles are sums and differences). An
accuracy means little until it stands beside the best such rule on the same puzzles.

1. A *template* is a binary expression tree over ``k`` slots, each slot once, with fixed operators and brackets,
   read against the numbers either as given (``x1..xk``) or sorted largest first (``s1..sk``). Trees that differ only
   by the order of a ``+`` or ``*`` operands are one template (same value everywhere).
2. Every template is evaluated on every puzzle with ``k`` numbers (numpy float64, a whole pool at once, shared
   subtrees once); a float within ``1e-6`` of the target is only a candidate, confirmed exactly with ``Fraction``.
   Nothing is executed: the trees are built here, never parsed from text.
3. The best *rule* of a pool takes, for each count of numbers, the template that solves most of those puzzles
   (:func:`best_blind_rule`); its accuracy is what a model gets without reading a single target.
4. :class:`BlindCap` keeps running counts for the generator's ``balanced`` sampling: a puzzle is accepted only while
   every template it is solved by stays at or under its cap (one ``BlindCap`` per part of a pool that must hold the
   cap on its own).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any, Union

import numpy as np

__all__ = ["ORDERS", "BlindCap", "BlindRule", "best_blind_rule", "blind_shares", "render_template", "templates"]

ORDERS = ("given", "sorted")
"""How a template reads the numbers: as the puzzle lists them, or sorted largest first."""

# A template tree: a leaf is a slot index 0..k-1; a node is (operator, left, right).
Template = Union[int, tuple[str, "Template", "Template"]]

_LEAST = 2  # the smallest per-template limit of BlindCap (see its docstring)
_TOLERANCE = 1e-6  # floats only shortlist: a miss by a rational p/q (q <= 99**3 here) is at least ~1e-6 away


def _trees(slots: tuple[int, ...]) -> list[Template]:
    if len(slots) == 1:
        return [slots[0]]
    out: list[Template] = []
    n = len(slots)
    for mask in range(1, (1 << n) - 1):
        left = tuple(s for i, s in enumerate(slots) if mask >> i & 1)
        right = tuple(s for i, s in enumerate(slots) if not mask >> i & 1)
        for a in _trees(left):
            for b in _trees(right):
                # + and * are commutative: keep one operand order (the part holding the smallest slot first).
                if left[0] < right[0]:
                    out += [("+", a, b), ("*", a, b)]
                out += [("-", a, b), ("/", a, b)]
    return out


@lru_cache(maxsize=8)
def templates(k: int) -> tuple[Template, ...]:
    """Every template tree over ``k`` slots (operand order of ``+`` / ``*`` fixed), in a fixed order.

    >>> len(templates(2)), len(templates(3))
    (6, 108)
    """
    if not 1 <= k <= 6:
        raise ValueError(f"target-blind templates are built for 1..6 numbers, got {k}")
    return tuple(_trees(tuple(range(k))))


def render_template(tree: Template, order: str) -> str:
    """The template as text: slots ``x1..xk`` as given, ``s1..sk`` sorted largest first.

    >>> render_template(("+", ("-", 0, 1), 2), "sorted")
    '(s1 - s2) + s3'
    """
    name = "x" if order == "given" else "s"
    if isinstance(tree, int):
        return f"{name}{tree + 1}"
    op, left, right = tree

    def child(t: Template) -> str:
        return render_template(t, order) if isinstance(t, int) else f"({render_template(t, order)})"

    return f"{child(left)} {op} {child(right)}"


def _exact(tree: Template, nums: Sequence[int]) -> Fraction | None:
    if isinstance(tree, int):
        return Fraction(nums[tree])
    op, left, right = tree
    a, b = _exact(left, nums), _exact(right, nums)
    if a is None or b is None:
        return None
    if op == "/":
        return None if b == 0 else a / b
    return a + b if op == "+" else a - b if op == "-" else a * b


def _columns(nums: np.ndarray, k: int) -> np.ndarray:
    """Float values of every template of ``k`` slots on every row of ``nums`` (rows x templates)."""
    cache: dict[Template, np.ndarray] = {}

    def value(tree: Template) -> np.ndarray:
        hit = cache.get(tree)
        if hit is not None:
            return hit
        if isinstance(tree, int):
            out = nums[:, tree]
        else:
            op, left, right = tree
            a, b = value(left), value(right)
            if op == "/":
                out = np.divide(a, b, out=np.full_like(a, np.nan), where=b != 0)
            else:
                out = a + b if op == "+" else a - b if op == "-" else a * b
        cache[tree] = out
        return out

    with np.errstate(all="ignore"):
        return np.stack([value(t) for t in templates(k)], axis=1)


def _ordered(puzzles: Sequence[Mapping[str, Any]], order: str) -> list[list[int]]:
    if order == "given":
        return [[int(x) for x in p["nums"]] for p in puzzles]
    return [sorted((int(x) for x in p["nums"]), reverse=True) for p in puzzles]


def solved_matrix(puzzles: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Which template solves which puzzle: bool (puzzles x 2 * templates(k)), every puzzle with ``k`` numbers.

    Column ``j < T`` is ``templates(k)[j]`` read as given, ``T + j`` the same tree read sorted largest first.

    >>> solved_matrix([{"nums": [3, 4], "target": 7}])[0].nonzero()[0].tolist()
    [0, 6]
    """
    counts = {len(p["nums"]) for p in puzzles}
    if len(counts) != 1:
        raise ValueError(f"solved_matrix needs puzzles with one count of numbers, got counts {sorted(counts)}")
    (k,) = counts
    trees = templates(k)
    targets = np.array([float(p["target"]) for p in puzzles])
    parts = []
    for order in ORDERS:
        rows = _ordered(puzzles, order)
        floats = _columns(np.array(rows, dtype=np.float64), k)
        near = np.abs(floats - targets[:, None]) <= _TOLERANCE * np.maximum(1.0, np.abs(targets[:, None]))
        for i, j in zip(*near.nonzero()):
            near[i, j] = _exact(trees[j], rows[i]) == int(puzzles[i]["target"])
        parts.append(near)
    return np.concatenate(parts, axis=1)


def _name(k: int, column: int) -> str:
    trees = templates(k)
    return render_template(trees[column % len(trees)], ORDERS[column // len(trees)])


@dataclass(frozen=True)
class BlindRule:
    """The best target-blind rule of a pool: per count of numbers its best template, and what it solves.

    ``solved[i]`` says whether the rule solves puzzle ``i``; ``accuracy`` is their share.
    """

    templates: dict[int, str]
    solved: tuple[bool, ...]

    @property
    def accuracy(self) -> float:
        return sum(self.solved) / len(self.solved) if self.solved else 0.0

    def describe(self) -> str:
        """One line: the templates per count of numbers."""
        return "; ".join(f"{k} numbers: {t}" for k, t in sorted(self.templates.items())) or "no puzzles"

    def as_dict(self) -> dict[str, Any]:
        return {"accuracy": self.accuracy, "solved": sum(self.solved), "total": len(self.solved),
                "templates": {str(k): t for k, t in sorted(self.templates.items())}}


def _by_count(puzzles: Sequence[Mapping[str, Any]]) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for i, p in enumerate(puzzles):
        groups.setdefault(len(p["nums"]), []).append(i)
    return groups


def best_blind_rule(puzzles: Sequence[Mapping[str, Any]]) -> BlindRule:
    """The target-blind rule that solves the most of ``puzzles`` (rows with ``nums`` and ``target``).

    Ties between templates go to the first in a fixed order (as given before sorted; trees in :func:`templates`'
    order), so the result is deterministic.

    >>> rule = best_blind_rule([{"nums": [1, 2, 3], "target": 6}, {"nums": [5, 4, 2], "target": 11}])
    >>> rule.templates, rule.accuracy
    ({3: 'x1 + (x2 + x3)'}, 1.0)
    """
    solved = [False] * len(puzzles)
    chosen: dict[int, str] = {}
    for k, index in sorted(_by_count(puzzles).items()):
        matrix = solved_matrix([puzzles[i] for i in index])
        best = int(np.argmax(matrix.sum(axis=0)))
        chosen[k] = _name(k, best)
        for i, hit in zip(index, matrix[:, best]):
            solved[i] = bool(hit)
    return BlindRule(chosen, tuple(solved))


def blind_shares(puzzles: Sequence[Mapping[str, Any]], top: int = 3) -> list[tuple[str, int, float]]:
    """The ``top`` templates of each count of numbers: ``(template, k, share of the puzzles with k numbers)``.

    >>> blind_shares([{"nums": [1, 2], "target": 3}, {"nums": [4, 2], "target": 2}], top=1)
    [('x1 + x2', 2, 0.5)]
    """
    out = []
    for k, index in sorted(_by_count(puzzles).items()):
        counts = solved_matrix([puzzles[i] for i in index]).sum(axis=0)
        for column in np.argsort(-counts, kind="stable")[:top]:
            out.append((_name(k, int(column)), k, float(counts[column]) / len(index)))
    return out


class BlindCap:
    """Running per-template counts that keep every target-blind template at or under ``cap`` of a pool.

    ``counts`` says how many puzzles of each count of numbers the finished pool will hold; a template of ``k``
    numbers may then solve at most ``max(2, floor(cap * counts[k]))`` of them, so the cap is exact from
    ``2 / cap`` puzzles of a size (34 at 6%). Two at least: every solvable puzzle is solved by several templates
    (each tree read as given and sorted), and at one each the sampler could not fill a 32-puzzle part.

    >>> cap = BlindCap(0.5, {2: 4})
    >>> [cap.offer([p])[0] for p in ({"nums": [1, 2], "target": 3}, {"nums": [2, 3], "target": 5},
    ...                              {"nums": [4, 5], "target": 9}, {"nums": [5, 2], "target": 3})]
    [True, True, False, True]
    """

    def __init__(self, cap: float, counts: Mapping[int, int]):
        if not 0 < cap <= 1:
            raise ValueError(f"the blind cap must be in (0, 1], got {cap}")
        self.cap = cap
        self.limits = {k: max(_LEAST, math.floor(cap * n + 1e-9)) for k, n in counts.items()}
        self.used = {k: np.zeros(2 * len(templates(k)), dtype=np.int64) for k in counts}

    def fits(self, k: int, hit: np.ndarray) -> bool:
        """Whether a puzzle of ``k`` numbers solved by the templates ``hit`` (column indices of
        :func:`solved_matrix`) leaves every one of them at or under its cap."""
        return bool((self.used[k][hit] < self.limits[k]).all())

    def take(self, k: int, hit: np.ndarray) -> None:
        """Count a puzzle of ``k`` numbers solved by the templates ``hit`` as accepted."""
        self.used[k][hit] += 1

    def offer(self, batch: Sequence[Mapping[str, Any]], want: int | None = None) -> list[bool]:
        """Accept each puzzle of ``batch`` in turn (all with one count of numbers) if no template it is solved by
        is full, until ``want`` are accepted (the rest: False); the counts move with every acceptance."""
        if not batch:
            return []
        k = len(batch[0]["nums"])
        out = []
        for row in solved_matrix(batch):
            hit = row.nonzero()[0]
            ok = (want is None or sum(out) < want) and self.fits(k, hit)
            if ok:
                self.take(k, hit)
            out.append(ok)
        return out
