"""The demo's Countdown puzzles: generated, cut into parts no puzzle shares, and written as SFT traces.

1. :func:`demo_puzzles`: one seeded pool of easy generated puzzles (3 numbers in 1..20, targets 1..50; the generator
   keeps each ``(target, sorted nums)`` once; ``balanced``: no target-blind template, such as adding the numbers,
   solves more than 6% of the SFT, RL or held-out part, each capped on its own, so a gain cannot be one fixed rule),
   cut in three disjoint parts: ``num_sft`` for SFT, ``num_rl`` for RL, ``num_eval`` held out.
2. :func:`expression_puzzles`: more held-out puzzles of the expression pool (the public data's distribution, where a
   fixed sum or difference solves a fifth or more; :func:`expression_spec`), drawn at another seed and none in any
   part (:func:`unseen_puzzles`).
3. :func:`trace_examples`: the SFT warm-up's prompt-completion pairs: the template's prompt, then the puzzle's solver
   trace (``search``: checked wrong attempts before it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from countdown_rl.demo.config import DemoConfig, PuzzleSpec

TRACES = ("solver", "search")  # SFT completions: puzzles.solver_trace or puzzles.search_trace
# the expression-pool evaluations' puzzles (DemoConfig.expression_eval) come from another seed than the demo's pool
# (EXPRESSION_SEED = seed + this)
EXPRESSION_SEED = 104729


def demo_puzzles(spec: PuzzleSpec, seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    """``{"sft": [...], "rl": [...], "eval": [...]}``: disjoint lists of ``{"nums", "target"}``, fixed per seed.

    One generator call gives distinct puzzles, so no ``(target, sorted nums)`` is both trained on and evaluated.
    ``balanced``: the generator draws the three parts as its ``parts``, each holding the blind cap on its own (a
    random split of a capped pool does not: one template held 8.7% of a 300-puzzle held-out part). ``expression``:
    ``data.split_rows`` (dedupe + seeded hold-out) takes the eval set, as its figures were measured.
    """
    from countdown_rl.data.splits import split_rows
    from countdown_rl.tasks import get_task
    from countdown_rl.tasks.countdown.puzzles import generate_countdown

    total = spec.num_sft + spec.num_rl + spec.num_eval
    if spec.sampling == "balanced":
        pool = generate_countdown(total, seed=seed, parts=(spec.num_sft, spec.num_rl, spec.num_eval),
                                  **spec.generator_kwargs())
        cut = [spec.num_sft, spec.num_sft + spec.num_rl]
        return {"sft": pool[: cut[0]], "rl": pool[cut[0]: cut[1]], "eval": pool[cut[1]:]}
    pool = generate_countdown(total, seed=seed, **spec.generator_kwargs())
    train, test, _ = split_rows(get_task("countdown"), pool, test_size=spec.num_eval, seed=seed)
    train_rows = [{"nums": list(r["nums"]), "target": int(r["target"])} for r in train]
    return {
        "sft": train_rows[: spec.num_sft],
        "rl": train_rows[spec.num_sft:],
        "eval": [{"nums": list(r["nums"]), "target": int(r["target"])} for r in test],
    }


def unseen_puzzles(count: int, seed: int, generator_kwargs: Mapping[str, Any],
                   seen: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``count`` generated puzzles (``generate_countdown(..., seed=seed, **generator_kwargs)``), none of them in
    ``seen`` (the same target and numbers); a ValueError when fewer are left.

    >>> shape = {"min_numbers": 3, "max_numbers": 3, "max_number": 9, "max_target": 20}
    >>> first = unseen_puzzles(4, 0, shape, [])
    >>> [p in first[:2] for p in unseen_puzzles(4, 0, shape, first[:2])]
    [False, False, False, False]
    """
    from countdown_rl.tasks.countdown.puzzles import generate_countdown

    if count <= 0:
        return []
    known = {(int(p["target"]), tuple(sorted(p["nums"]))) for p in seen}
    pool = generate_countdown(2 * count + 16, seed=seed, **generator_kwargs)  # more than needed: some were seen
    kept = [{"nums": list(p["nums"]), "target": int(p["target"])} for p in pool
            if (int(p["target"]), tuple(sorted(p["nums"]))) not in known]
    if len(kept) < count:
        raise ValueError(f"only {len(kept)} of {len(pool)} generated puzzles are not already used, {count} wanted")
    return kept[:count]


def expression_spec(config: DemoConfig) -> PuzzleSpec:
    """The demo's puzzle shape drawn from the expression pool (:data:`DemoConfig.expression_eval`'s puzzles)."""
    return replace(config.puzzles, sampling="expression")


def expression_puzzles(config: DemoConfig, puzzles: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """``config.expression_eval`` puzzles of the demo's shape from the expression pool, none in any of the demo's
    parts (``puzzles``), fixed per seed; none when the demo's own puzzles are not balanced."""
    if config.puzzles.sampling != "balanced":
        return []
    shape = expression_spec(config).generator_kwargs()
    return unseen_puzzles(config.expression_eval, config.seed + EXPRESSION_SEED, shape,
                          [p for part in ("sft", "rl", "eval") for p in puzzles[part]])


def trace_examples(puzzles: Sequence[Mapping[str, Any]], *, trace: str = "solver", template: str = "r1_zero",
                   min_failed: int = 0, max_failed: int = 2, seed: int = 0) -> list[dict[str, Any]]:
    """``{"prompt", "completion"}`` per puzzle: the template's prompt and the puzzle's solver (or search) trace,
    opening ``<think>`` itself unless the prompt ends with it (r1_zero).

    >>> trace_examples([{"nums": [2, 3], "target": 6}], template="chat")[0]["completion"]
    '<think>2 * 3 = 6</think> <answer>2 * 3</answer>'
    """
    from countdown_rl.tasks.countdown.prompts import build_prompt
    from countdown_rl.tasks.countdown.puzzles import search_trace, solver_trace

    if trace not in TRACES:
        raise ValueError(f"trace must be one of {TRACES}, got {trace!r}")
    open_think = template != "r1_zero"  # only the r1_zero prompt ends with an open <think>

    def completion(p: Mapping[str, Any]) -> str:
        if trace == "search":
            return search_trace(p["nums"], p["target"], min_failed=min_failed, max_failed=max_failed, seed=seed,
                                open_think=open_think)
        return solver_trace(p["nums"], p["target"], open_think=open_think)

    return [{"prompt": build_prompt(p["nums"], p["target"], template), "completion": completion(p)} for p in puzzles]
