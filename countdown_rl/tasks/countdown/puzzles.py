"""Offline Countdown puzzles: an exact solver, a seeded generator and short solution traces (pure Python).

Solver (:func:`solve`):

1. The values reachable from a multiset of numbers are built bottom-up: split the multiset into two
   non-empty parts, and combine every value of one part with every value of the other by ``+ - * /``
   (both operand orders for ``-`` and ``/``; division only by a non-zero value), exactly, with ``Fraction``.
   Every binary expression tree that uses each number exactly once is reached this way.
2. Reachable sets are memoised on the sorted multiset, so parts shared by several splits are built once.
3. At the top level the full reachable set is never built: for each split and each value ``a`` of the
   smaller part, the value ``b`` that the other part would need to hit the target is computed for each
   operation and looked up (a 4-number unsolvable puzzle takes a few milliseconds).
4. Among expressions with the same value, one whose intermediate results are all non-negative integers
   ("tidy") is preferred, because it reads better and gives an integer-only trace; otherwise the first
   found wins, so the output is deterministic.

Generator (:func:`generate_countdown`):

1. Draw how many numbers the puzzle has (uniform in ``min_numbers..max_numbers``), then the numbers
   (uniform in ``min_number..max_number``).
2. Combine them in a random order with random operations into one expression; its value is the target.
   The puzzle is kept only if that value is an integer in ``min_target..max_target`` and the puzzle
   ``(target, sorted numbers)`` has not been generated before; otherwise redraw the numbers (same count).
   Solvable by construction.
3. :func:`solve` confirms each puzzle (``verify=True``), guarding the construction against regressions.

That is ``sampling="expression"``: at small sizes most of its targets are sums and differences (the best
target-blind rule of :mod:`.blind`, e.g. ``s1 - s2 + s3``, solves 19-38% of its puzzles). ``sampling="balanced"``
draws the same candidates and keeps one only while every target-blind template that solves it stays at or under
``blind_cap`` of the puzzles with as many numbers:

1. The count of numbers of every position in the pool is drawn first; ``parts`` (default: the whole pool) cuts the
   positions into consecutive slices, so each part knows how many puzzles of each size it will hold.
2. Each part has its own :class:`.blind.BlindCap`: a template of ``k`` numbers may solve at most
   ``floor(blind_cap * m)`` of the part's ``m`` puzzles with ``k`` numbers. The cap is therefore exact for every
   part, not just for the whole pool (whose counts are the parts' sums), at any seed.
3. A candidate goes to the first part that still wants a puzzle of its size and whose cap it fits, else is dropped
   (one part's full cap does not waste a draw another part can use).
4. Each part is shuffled (seeded) so any slice of it has its mix; the pool lists the parts in order. Deterministic
   per seed; with one part the pool is the one drawn before parts existed.

Default ranges mirror the public ``Countdown-Tasks-3to4`` data (3-4 numbers in 1..99, positive integer
targets, mostly at most 100): numbers 1..99 and targets 1..100 inclusive.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from functools import lru_cache
from numbers import Integral
from typing import Union

__all__ = [
    "BLIND_CAP", "SAMPLINGS", "SEARCH_LIMIT",
    "Expr", "generate_countdown", "generate_with_solutions", "render", "search_effort",
    "search_trace", "solve", "solve_tree", "solver_trace",
]

SEARCH_LIMIT = 5000
"""Node bound of :func:`search_effort`: a whole 4-number search tree (4573 nodes) fits under it."""
SAMPLINGS = ("expression", "balanced")
"""How :func:`generate_countdown` picks puzzles: a random expression's value, or that capped per blind template."""
BLIND_CAP = 0.06
"""``balanced`` sampling's cap: the most puzzles (share of those with as many numbers) any target-blind template
solves."""

# An expression tree: a leaf is a given number; a node is (operator, left, right).
Expr = Union[int, tuple[str, "Expr", "Expr"]]

# value -> (an expression with that value, whether all its intermediate results are non-negative integers)
_Reach = dict[Fraction, tuple[Expr, bool]]

OPERATORS = ("+", "-", "*", "/")


def _check_nums(nums: Sequence[int]) -> tuple[int, ...]:
    if isinstance(nums, (str, bytes)) or not isinstance(nums, Sequence) or len(nums) == 0:
        raise ValueError(f"nums must be a non-empty list of integers, got {nums!r}")
    for x in nums:
        # bool is Integral but never a puzzle number; negative leaves would need a unary minus to write.
        if isinstance(x, bool) or not isinstance(x, Integral) or x < 0:
            raise ValueError(f"nums must hold non-negative integers, got {x!r} in {list(nums)!r}")
    return tuple(sorted(int(x) for x in nums))


def _check_target(target: int) -> Fraction:
    if isinstance(target, bool) or not isinstance(target, Integral):
        raise ValueError(f"target must be an integer, got {target!r}")
    return Fraction(int(target))


def _is_tidy(value: Fraction) -> bool:
    return value.denominator == 1 and value >= 0


def _apply(op: str, a: Fraction, b: Fraction) -> Fraction:
    return a + b if op == "+" else a - b if op == "-" else a * b if op == "*" else a / b


def _combine(a: Fraction, b: Fraction) -> Iterator[tuple[str, bool, Fraction]]:
    """Yield (operator, swapped, value) for every way to combine a and b; swapped means ``b op a``."""
    yield "+", False, a + b
    yield "*", False, a * b
    yield "-", False, a - b
    yield "-", True, b - a
    if b != 0:
        yield "/", False, a / b
    if a != 0:
        yield "/", True, b / a


def _splits(ms: tuple[int, ...]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Each unordered split of a sorted multiset into two non-empty sorted parts, once, in a fixed order."""
    n = len(ms)
    seen: dict[tuple[tuple[int, ...], tuple[int, ...]], None] = {}
    for mask in range(1, (1 << n) - 1):
        left = tuple(ms[i] for i in range(n) if mask >> i & 1)
        right = tuple(ms[i] for i in range(n) if not mask >> i & 1)
        # (A, B) and (B, A) are the same split: _combine already tries both operand orders.
        key = (left, right) if (len(left), left) <= (len(right), right) else (right, left)
        seen.setdefault(key, None)
    return list(seen)


@lru_cache(maxsize=4096)
def _reachable(ms: tuple[int, ...]) -> _Reach:
    """All values reachable from the sorted multiset ``ms`` using each number once (cached; do not mutate)."""
    if len(ms) == 1:
        return {Fraction(ms[0]): (ms[0], True)}
    out: _Reach = {}
    for left, right in _splits(ms):
        for a, (ea, ta) in _reachable(left).items():
            for b, (eb, tb) in _reachable(right).items():
                for op, swapped, value in _combine(a, b):
                    tidy = ta and tb and _is_tidy(value)
                    old = out.get(value)
                    if old is None or (tidy and not old[1]):
                        out[value] = ((op, eb, ea) if swapped else (op, ea, eb), tidy)
    return out


def _needed(a: Fraction, t: Fraction) -> Iterator[tuple[str, bool, Fraction]]:
    """For a known operand ``a``, yield (operator, a_on_right, b) such that ``a op b`` (or ``b op a``) == t.

    Only called with a != 0 and t != 0, where each equation has exactly one solution b.
    """
    yield "+", False, t - a  # a + b = t
    yield "*", False, t / a  # a * b = t
    yield "-", False, a - t  # a - b = t
    yield "-", True, a + t  # b - a = t
    yield "/", False, a / t  # a / b = t
    yield "/", True, t * a  # b / a = t


def solve_tree(nums: Sequence[int], target: int) -> Expr | None:
    """Return an expression tree over all of ``nums`` whose exact value is ``target``, or None.

    >>> solve_tree([7, 7, 65], 51)
    ('-', ('-', 65, 7), 7)
    >>> solve_tree([1, 1, 1], 99) is None
    True
    """
    ms = _check_nums(nums)
    t = _check_target(target)
    if len(ms) == 1:
        return ms[0] if ms[0] == t else None
    first: Expr | None = None
    for left, right in _splits(ms):
        small, large = _reachable(left), _reachable(right)
        if len(small) > len(large):
            small, large = large, small
        for a, (ea, ta) in small.items():
            if a == 0 or t == 0:
                # Zero makes * and / degenerate (many or no solutions for b): just try every b.
                for b, (eb, tb) in large.items():
                    for op, swapped, value in _combine(a, b):
                        if value == t:
                            expr: Expr = (op, eb, ea) if swapped else (op, ea, eb)
                            if ta and tb and _is_tidy(t):
                                return expr
                            first = expr if first is None else first
                continue
            for op, a_on_right, b in _needed(a, t):
                hit = large.get(b)
                if hit is None:
                    continue
                eb, tb = hit
                expr = (op, eb, ea) if a_on_right else (op, ea, eb)
                if ta and tb and _is_tidy(t):
                    return expr
                first = expr if first is None else first
    return first


def search_effort(nums: Sequence[int], target: int, *, limit: int = SEARCH_LIMIT) -> int:
    """How much search a puzzle takes: the nodes a fixed depth-first search enters before it reaches ``target``.

    1. A node is a list of values (the root: the numbers, sorted). Its children replace one pair of values
       (positions i < j, in order) by each combination of :func:`_combine` (``+``, ``*``, both ``-``, both ``/``;
       no division by zero), exactly, with ``Fraction``.
    2. The search enters nodes depth-first in that fixed order, counting each (the root included), and stops at
       the first node holding one value equal to ``target``, i.e. an expression using every number once.
    3. The count is capped at ``limit``: an unsolvable puzzle (or one solved later than that) scores ``limit``.

    This is the trial-and-error a solver writing its attempts out would go through, so it grows with the number
    of numbers and, among puzzles with as many numbers, with how hidden the solution is.

    >>> search_effort([1, 2], 3), search_effort([1, 2], 1), search_effort([1, 1, 1], 99)
    (2, 5, 5000)
    """
    return _search_effort(_check_nums(nums), _check_target(target), int(limit))


@lru_cache(maxsize=65536)
def _search_effort(ms: tuple[int, ...], t: Fraction, limit: int) -> int:
    entered = 0

    def visit(values: list[Fraction]) -> bool:
        nonlocal entered
        entered += 1
        if len(values) == 1:
            return values[0] == t
        for i in range(len(values)):
            for j in range(i + 1, len(values)):
                rest = values[:i] + values[i + 1:j] + values[j + 1:]
                for _op, _swapped, value in _combine(values[i], values[j]):
                    if entered >= limit or visit([*rest, value]):
                        return True
        return False

    found = visit([Fraction(x) for x in ms])
    return min(entered, limit) if found else limit


def render(expr: Expr) -> str:
    """Render a tree as an equation, parenthesising every operation below the top one.

    >>> render(("*", ("+", 1, 2), 3))
    '(1 + 2) * 3'
    """
    if isinstance(expr, int):
        return str(expr)
    op, left, right = expr

    def child(e: Expr) -> str:
        return str(e) if isinstance(e, int) else f"({render(e)})"

    return f"{child(left)} {op} {child(right)}"


def solve(nums: Sequence[int], target: int) -> str | None:
    """Return an equation using every number of ``nums`` exactly once that equals ``target``, or None.

    >>> solve([7, 7, 65], 51)
    '(65 - 7) - 7'
    >>> solve([1, 1, 1], 99) is None
    True
    """
    tree = solve_tree(nums, target)
    return None if tree is None else render(tree)


def _fmt(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def _steps(expr: Expr, out: list[str]) -> Fraction:
    """Append one ``a op b = c`` line per operation, innermost first; return the value of ``expr``."""
    if isinstance(expr, int):
        return Fraction(expr)
    op, left, right = expr
    a, b = _steps(left, out), _steps(right, out)
    value = _apply(op, a, b)
    out.append(f"{_fmt(a)} {op} {_fmt(b)} = {_fmt(value)}")
    return value


def solver_trace(nums: Sequence[int], target: int, *, open_think: bool = True) -> str:
    """A short worked solution: the solver's intermediate results in ``<think>``, then ``<answer>``.

    ``open_think=False`` drops the leading ``<think>`` for prompts that already end with it (r1_zero).
    Raises ValueError when the puzzle has no solution.

    >>> solver_trace([7, 7, 65], 51)
    '<think>65 - 7 = 58, 58 - 7 = 51</think> <answer>(65 - 7) - 7</answer>'
    """
    think, answer = _worked_solution(nums, target)
    return f"{'<think>' if open_think else ''}{think}</think> <answer>{answer}</answer>"


def _worked_solution(nums: Sequence[int], target: int) -> tuple[str, str]:
    """(the solver's steps as ``a op b = c, ...``, its equation); ValueError when there is none."""
    tree = solve_tree(nums, target)
    if tree is None:
        raise ValueError(f"no equation over {list(nums)} equals {target}")
    steps: list[str] = []
    _steps(tree, steps)
    return (", ".join(steps) if steps else f"{target} is given"), render(tree)


def search_trace(nums: Sequence[int], target: int, *, max_failed: int = 2, min_failed: int = 0, seed: int = 0,
                 open_think: bool = True) -> str:
    """A worked search: a few wrong attempts written out and checked, then the solver's solution, in ``<think>``.

    Each attempt is a chain of ``a op b = c`` steps over all the numbers; attempts are separated by ``"; "``.
    The number of failed attempts (each ending on a value other than ``target``, no two alike) is drawn
    uniformly from ``min_failed..max_failed``, deterministically per ``(seed, nums, target)``; the last attempt is
    :func:`solver_trace`'s. With a length budget, a model trained on these traces must learn to try less
    (guess better) to finish in time: the toy analogue of a long reasoning trace cut by ``max_tokens``.
    ``open_think=False`` drops the leading ``<think>``. Raises ValueError when the puzzle has no solution.

    >>> search_trace([7, 7, 65], 51, max_failed=0) == solver_trace([7, 7, 65], 51)
    True
    >>> search_trace([3, 4, 5], 35, seed=1)
    '<think>4 * 5 = 20, 20 + 3 = 23; 3 + 4 = 7, 5 * 7 = 35</think> <answer>5 * (3 + 4)</answer>'
    """
    if not 0 <= min_failed <= max_failed:
        raise ValueError(f"need 0 <= min_failed <= max_failed, got min_failed={min_failed}, max_failed={max_failed}")
    think, answer = _worked_solution(nums, target)
    rng = random.Random(f"{seed}|{list(nums)}|{target}")
    wanted, attempts, seen = rng.randint(min_failed, max_failed), [], {think}
    for _ in range(20 * max_failed):  # bounded: a puzzle may have fewer distinct wrong chains than wanted
        if len(attempts) == wanted:
            break
        steps: list[str] = []
        value = _random_reduction(nums, rng, _exact_operators, steps)
        text = ", ".join(steps)
        if value != target and text not in seen:
            seen.add(text)
            attempts.append(text)
    return f"{'<think>' if open_think else ''}{'; '.join([*attempts, think])}</think> <answer>{answer}</answer>"


def _random_reduction(nums: Sequence[int], rng: random.Random,
                      operators: Callable[[Fraction, Fraction], Sequence[str]],
                      steps: list[str] | None = None) -> Fraction:
    """Value of a random expression tree over all of ``nums``: combine two random numbers at a time by a random
    operator from ``operators(a, b)`` until one value is left; appends ``a op b = c`` lines to ``steps`` if given."""
    pool = [Fraction(x) for x in nums]
    while len(pool) > 1:
        i, j = rng.sample(range(len(pool)), 2)
        a, b = pool[i], pool[j]
        op = rng.choice(operators(a, b))
        value = _apply(op, a, b)
        if steps is not None:
            steps.append(f"{_fmt(a)} {op} {_fmt(b)} = {_fmt(value)}")
        pool = [x for k, x in enumerate(pool) if k not in (i, j)] + [value]
    return pool[0]


def _any_operator(a: Fraction, b: Fraction) -> Sequence[str]:
    """The generator's choice: any operator with a defined result."""
    return OPERATORS if b != 0 else OPERATORS[:3]


def _exact_operators(a: Fraction, b: Fraction) -> Sequence[str]:
    """A written attempt's choice: non-negative, exact results only (the integer steps a trace shows)."""
    return ["+", "*"] + (["-"] if a >= b else []) + (["/"] if b != 0 and (a / b).denominator == 1 else [])


def generate_countdown(
    n: int,
    *,
    seed: int = 0,
    min_numbers: int = 3,
    max_numbers: int = 4,
    min_number: int = 1,
    max_number: int = 99,
    min_target: int = 1,
    max_target: int = 100,
    verify: bool = True,
    sampling: str = "expression",
    blind_cap: float = BLIND_CAP,
    parts: Sequence[int] | None = None,
) -> list[dict]:
    """Generate ``n`` distinct solvable puzzles ``{"nums": [...], "target": int}``, deterministic per seed.

    ``sampling`` is ``"expression"`` (today's pools) or ``"balanced"`` (no target-blind template solves more than
    ``blind_cap`` of the puzzles with as many numbers; a part under ``2 / blind_cap`` puzzles of a size: two each).
    ``parts`` (sizes summing to ``n``; default one part) cuts the pool into consecutive slices that each hold the
    balanced cap on their own (e.g. training and held-out puzzles); every puzzle is still distinct across parts.

    >>> puzzles = generate_countdown(3, seed=1)
    >>> len(puzzles), all(solve(p["nums"], p["target"]) for p in puzzles)
    (3, True)
    >>> puzzles == generate_countdown(3, seed=1)
    True
    >>> len(generate_countdown(40, seed=1, sampling="balanced", max_numbers=3))
    40
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not 1 <= min_numbers <= max_numbers:
        raise ValueError(f"need 1 <= min_numbers <= max_numbers, got {min_numbers}, {max_numbers}")
    if not 0 <= min_number <= max_number:
        raise ValueError(f"need 0 <= min_number <= max_number, got {min_number}, {max_number}")
    if min_target > max_target:
        raise ValueError(f"need min_target <= max_target, got {min_target}, {max_target}")
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {list(SAMPLINGS)}, got {sampling!r}")
    sizes = [n] if parts is None else list(parts)
    if not sizes or any(isinstance(m, bool) or not isinstance(m, Integral) or m < 0 for m in sizes) or sum(sizes) != n:
        raise ValueError(f"parts must be non-negative sizes summing to n={n}, got {parts!r}")
    rng = random.Random(seed)
    seen: set[tuple[int, tuple[int, ...]]] = set()
    # Rejection sampling: most random expressions miss the target range; this bound only trips when the
    # ranges cannot hold n distinct puzzles (or, balanced, when the cap leaves too few).
    budget = 2000 * n + 10_000

    def candidate(count: int) -> dict | None:
        nums = [rng.randint(min_number, max_number) for _ in range(count)]
        value = _random_reduction(nums, rng, _any_operator)
        if value.denominator != 1 or not min_target <= value <= max_target:
            return None
        target = int(value)
        if (target, tuple(sorted(nums))) in seen:
            return None
        if verify and solve_tree(nums, target) is None:
            raise RuntimeError(f"generator bug: no solution found for nums={nums}, target={target}")
        return {"nums": nums, "target": target}

    def keep(puzzle: dict) -> None:
        seen.add((puzzle["target"], tuple(sorted(puzzle["nums"]))))

    puzzles: list[dict] = []
    draws = 0
    if sampling == "expression":
        while len(puzzles) < n and draws < budget:
            # Fix the count first and retry within it: 4-number expressions miss the target range more often,
            # so drawing the count per attempt would skew the output towards 3 numbers.
            count = rng.randint(min_numbers, max_numbers)
            while draws < budget:
                draws += 1
                puzzle = candidate(count)
                if puzzle is not None:
                    keep(puzzle)
                    puzzles.append(puzzle)
                    break
        if len(puzzles) < n:
            raise RuntimeError(f"only {len(puzzles)} of {n} distinct puzzles found in {budget} draws; "
                               "widen the ranges")
        return puzzles

    from countdown_rl.tasks.countdown.blind import BlindCap, solved_matrix

    counts = [rng.randint(min_numbers, max_numbers) for _ in range(n)]
    # Part p is the slice ends[p-1]:ends[p] of the pool, with a cap of its own on its own counts of each size.
    ends = list(itertools.accumulate(sizes))
    part_of = [bisect.bisect_right(ends, i) for i in range(n)]
    need = [{k: 0 for k in sorted(set(counts))} for _ in sizes]
    for k, p in zip(counts, part_of):
        need[p][k] += 1
    caps = [BlindCap(blind_cap, {k: c for k, c in wanted.items() if c}) for wanted in need]
    made: list[dict[int, list[dict]]] = [{k: [] for k in wanted} for wanted in need]

    def short(k: int) -> list[int]:
        return [p for p in range(len(sizes)) if len(made[p][k]) < need[p][k]]

    for k in sorted(set(counts)):
        while short(k) and draws < budget:
            batch: list[dict] = []
            while len(batch) < 64 and draws < budget:
                draws += 1
                puzzle = candidate(k)
                if puzzle is not None and all(puzzle["target"] != b["target"] or sorted(puzzle["nums"])
                                              != sorted(b["nums"]) for b in batch):
                    batch.append(puzzle)
            if not batch:
                continue
            # Each puzzle goes to the first part that still wants one of k numbers and whose cap it fits.
            for puzzle, row in zip(batch, solved_matrix(batch)):
                hit = row.nonzero()[0]
                for p in short(k):
                    if caps[p].fits(k, hit):
                        caps[p].take(k, hit)
                        keep(puzzle)
                        made[p][k].append(puzzle)
                        break
        if short(k):
            p = short(k)[0]
            where = f" in part {p} (of {len(sizes)})" if len(sizes) > 1 else ""
            raise RuntimeError(f"only {len(made[p][k])} of {need[p][k]} balanced {k}-number puzzles{where} (blind_cap "
                               f"{blind_cap}) found in {budget} draws; widen the ranges or raise blind_cap")
    # Acceptance order is not random: the first puzzles fill the caps of the common templates (sums and
    # differences), the last ones are those no capped template solves. Shuffled, any slice of a part has the part's
    # mix; unshuffled, the demo's RL part held 4% sum-or-difference puzzles against 39% in its SFT part.
    for part in made:
        for drawn in part.values():
            rng.shuffle(drawn)
    # The pool lists the puzzles in the order their counts were drawn, each in its part.
    queues = [{k: iter(drawn) for k, drawn in part.items()} for part in made]
    return [next(queues[p][k]) for k, p in zip(counts, part_of)]


def generate_with_solutions(n: int, **kwargs) -> list[dict]:
    """Like :func:`generate_countdown`, with a ``solution`` equation added to each puzzle.

    >>> [sorted(p) for p in generate_with_solutions(1)]
    [['nums', 'solution', 'target']]
    """
    puzzles = generate_countdown(n, **kwargs)
    return [{**p, "solution": solve(p["nums"], p["target"])} for p in puzzles]
