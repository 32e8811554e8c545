"""The demo's before/after tables and the statistics under them, read from the evaluations' files.

1. :func:`paired_test`: the exact McNemar test of the RL model against the SFT model on the same held-out rows.
2. :func:`blind_rule_of`: the best target-blind rule on an evaluation's puzzles; :func:`blind_rule_by_model`: it
   with each model's correct answers split by whether the rule solves the puzzle (``demo_results.json``).
3. :func:`results_table`: the Markdown table: the rule's row, then the SFT and RL models' accuracy, correct / partial
   / failed, correct answers beyond the rule, completion lengths (:data:`TOKEN_HEADERS`) and pass@1 / pass@k. Its
   cells (:func:`blind_row`, :func:`beyond_rule`, :func:`token_cells`, ...) make the real-model demo's tables too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from countdown_rl.algorithms.presets import display_name


def paired_test(before_dir: str | Path, after_dir: str | Path, budget: int,
                columns: Sequence[str] = ("nums", "target")) -> dict[str, Any]:
    """The exact McNemar test of the model evaluated into ``after_dir`` against the one in ``before_dir`` on the same
    rows (the same ``columns``: the task's, Countdown's by default) at ``budget`` (``only_a``: rows only the after
    model solved)."""
    from countdown_rl.evaluation.eval_files import read_samples
    from countdown_rl.evaluation.paired import paired_counts

    before, after = read_samples(before_dir, budget), read_samples(after_dir, budget)
    if [[r.get(c) for c in columns] for r in before] != [[r.get(c) for c in columns] for r in after]:
        raise ValueError(f"{before_dir} and {after_dir} hold different puzzles: no paired test")
    return paired_counts([r["outcome"] == "correct" for r in after], [r["outcome"] == "correct" for r in before])


def blind_rule_of(eval_dir: str | Path) -> dict[str, Any] | None:
    """The best target-blind rule on an evaluation's puzzles, as its ``eval.json`` holds it (None: not recorded)."""
    from countdown_rl.evaluation.eval_files import read_eval

    return read_eval(eval_dir)["blind_rule"]


def blind_rule_by_model(blinds: Mapping[str, Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """``demo_results.json``'s ``blind_rule``: the rule on the held-out puzzles (the same for every model) and each
    model's correct answers split by whether the rule solves the puzzle (``by_model``: name -> its ``by_budget``).

    >>> split = {"rule": "a+b+c", "accuracy": 0.1, "solved": 1, "total": 10, "by_budget": {"8": {"correct_on_rest": 2}}}
    >>> blind_rule_by_model({"sft": split, "trained": None})["by_model"]
    {'sft': {'8': {'correct_on_rest': 2}}, 'trained': None}
    """
    known = [blind for blind in blinds.values() if blind]
    if not known:
        return None
    common = {key: value for key, value in known[0].items() if key != "by_budget"}
    if any({key: value for key, value in blind.items() if key != "by_budget"} != common for blind in known):
        raise ValueError("the evaluations' target-blind rules differ: they were not on the same puzzles")
    return {**common, "by_model": {name: blind["by_budget"] if blind else None for name, blind in blinds.items()}}


def beyond_rule(blind: Mapping[str, Any] | None, budget: int) -> str:
    """A table cell: correct answers at ``budget`` on the puzzles the blind rule does not solve."""
    from countdown_rl.evaluation.scoring import correct_beyond_rule

    count = correct_beyond_rule(blind, budget)
    return "—" if count is None else str(count)


def blind_row(blind: Mapping[str, Any] | None, width: int) -> list[list[str]]:
    """The best target-blind rule as the first row of a ``width``-column demo table (none if not recorded)."""
    if blind is None:
        return []
    from countdown_rl.files import format_percent

    row = [f"best target-blind rule ({blind['rule']})", format_percent(blind["accuracy"]), "—", "0"]
    return [row + ["—"] * (width - len(row))]


def beyond_header(blind: Mapping[str, Any] | None) -> str:
    """The header of :func:`beyond_rule`'s column: how many puzzles the rule misses."""
    others = "?" if blind is None else blind["total"] - blind["solved"]
    return f"correct of the {others} the rule misses"


# The length columns: the Dr.GRPO paper's length-bias signature (GRPO's per-sequence mean lets wrong answers grow
# longer) is read from the mean length of the correct and of the incorrect completions, before and after RL.
TOKEN_HEADERS = ("mean completion tokens", "tokens: correct / incorrect")


def token_cells(result) -> list[str]:
    """The :data:`TOKEN_HEADERS` cells of a ``BudgetResult``: the mean completion length over all completions, then
    over the correct and over the incorrect ones (``—`` where there are none).

    >>> from types import SimpleNamespace
    >>> token_cells(SimpleNamespace(mean_tokens=20.25, mean_tokens_correct=14.0, mean_tokens_incorrect=None))
    ['20.2', '14.0 / —']
    """
    from countdown_rl.files import format_number

    return [format_number(result.mean_tokens),
            f"{format_number(result.mean_tokens_correct)} / {format_number(result.mean_tokens_incorrect)}"]


def pass_header(sampled) -> list[str]:
    """The pass@k column's header for a sampled ``BudgetResult`` (none when there is none)."""
    if sampled is None:
        return []
    return [f"pass@1 / pass@{sampled.num_samples} (sampled)"]


def pass_cell(sampled) -> list[str]:
    """``pass@1 / pass@k`` of a sampled ``BudgetResult`` (none when there is none).

    >>> from types import SimpleNamespace
    >>> pass_cell(SimpleNamespace(num_samples=16, pass_at_k={1: 0.139, 2: 0.2, 16: 0.717}))
    ['13.9% / 71.7%']
    """
    from countdown_rl.files import format_percent

    if sampled is None:
        return []
    return [f"{format_percent(sampled.pass_at_k[1])} / {format_percent(sampled.pass_at_k[sampled.num_samples])}"]


def results_table(before, after, algorithm: str, max_steps: int, blind: Mapping[str, Any] | None = None,
                  blind_after: Mapping[str, Any] | None = None, sampled: Sequence[Any] = (None, None)) -> str:
    """The before/after Markdown table printed at the end (and stored in demo_results.json), under the best
    target-blind rule on the same puzzles (``blind`` and ``blind_after``: the two evaluations' ``blind_rule``);
    ``sampled``: the two models' sampled evaluations (pass@k), or None."""
    from countdown_rl.files import format_percent, render_markdown_table

    name = display_name(algorithm)
    headers = ["model", "accuracy", "correct / partial / failed", beyond_header(blind), *TOKEN_HEADERS,
               *pass_header(sampled[0])]
    rows = blind_row(blind, len(headers)) + [
        [label, format_percent(r.accuracy), f"{r.correct} / {r.partial} / {r.failed}",
         beyond_rule(split, r.max_tokens), *token_cells(r), *pass_cell(sample)]
        for label, r, split, sample in ((f"SFT warm-up (before {name})", before, blind, sampled[0]),
                                        (f"after {name} ({max_steps} steps)", after, blind_after, sampled[1]))
    ]
    return render_markdown_table(headers, rows)
