"""The Countdown screen: where a small pretrained model has RL signal on Countdown after a format warm-up.

1. Settings (:data:`SETTINGS`): Countdown from easy to the reference shape, each a label, a source and its
   generator's keyword arguments. ``countdown``: the package's generator
   (``countdown_rl.tasks.countdown.puzzles.generate_countdown``): two numbers, three small numbers (1-9, 1-20), three
   numbers up to 99, and the reference shape (3-4 numbers up to 99, targets up to 100); targets near the numbers
   (small target ranges) against far from them (large ones: a product is needed); ``sampling`` ``expression`` (a
   random expression's value, sum-heavy) against ``balanced`` (no target-blind rule solves more than 6% of a part).
   ``countdown_subset``: the same rows (same prompt, same completions) scored under the verifier's ``subset`` rule,
   each number at most once (the reference setup's rule, reward ``countdown_subset``) instead of exactly once; the
   task itself has no such option (``CountdownOptions`` holds ``unary_minus`` and ``sampling`` only), so these are
   re-scored from the exactly-once setting's samples. ``reasoning_gym``: reasoning-gym's ``countdown`` dataset at easy
   levels (its config keys), through the ``reasoning_gym`` task as ``benchmarks/reasoning_gym_screen.py`` does.
   Each setting's rows are seeded and cut into warm-up rows and held-out rows; no held-out puzzle (the target and
   the numbers, whatever the prompt's wording) is a warm-up puzzle of any setting.
2. One warm-up on every setting's warm-up rows, mixed, in the model's chat template (loss on the assistant's turn):
   ``--warmup trace`` the solver's short worked trace (``<think>`` steps, then ``<answer>``), as the demo's SFT stage
   learns it (``countdown_rl.demo.puzzles.trace_examples``); ``--warmup answer`` the reference expression alone in
   ``<answer>`` tags (our rows: the solver's equation; reasoning-gym's: its own reference answer).
3. The warm-up model on each setting's held-out rows: greedy (accuracy, the answer-format rate, mean completion
   tokens), then ``--samples`` samples a row at temperature 1.0 (pass@1, pass@k). Beside them, the best target-blind
   rule of those rows (``countdown_rl.tasks.countdown.blind.best_blind_rule``: a fixed expression over the numbers
   that never reads the target; at most once: over any fixed choice of the numbers; reasoning-gym's rows: on the
   numbers and target their entries carry).
4. Beside them, a guesser that never reads the target either: each sample one expression drawn uniformly from the
   distinct ones over the row's numbers (its pass@1 and pass@k, exact from the share of expressions that hit). A
   model whose pass@1 is near it, and whose pass@k is what independent tries at its pass@1 give, guesses.
5. The table: a setting has RL signal where greedy is roughly 10-60%, pass@k lies 15 points or more above greedy
   (a group of samples has rewards to compare) and the blind rule is at most half of greedy (what RL would sharpen
   is not a fixed rule).

Evaluations go through one vLLM engine where vLLM is installed, else transformers ``generate``. Written: ``OUT/sft``
(the warm-up model), ``OUT/<label>/{greedy,sampled}`` (eval files; an at-most-once setting reads its twin's),
``OUT/screen.json``, ``OUT/screen.md``. ``--resume`` goes on from what ``OUT`` holds (a stopped screen; a finished
one tabulated again). From the repository root::

    python benchmarks/countdown_screen.py --model smollm2 --warmup trace --out outputs/countdown-screen

``--quick`` warms up 2 steps and scores 4 rows of 3 settings (one of each source: a smoke test of the script, not a
measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.ensure_repo_on_path()

SOURCES = ("countdown", "countdown_subset", "reasoning_gym")
"""A setting's rows: our generator scored exactly once, the same rows scored at most once, reasoning-gym's."""
_SMALL = {"min_numbers": 3, "max_numbers": 3}
_REFERENCE = {"min_numbers": 3, "max_numbers": 4, "min_number": 1, "max_number": 99, "min_target": 1,
              "max_target": 100}  # the reference setup's shape (countdown_rl.demo.pretrained.REFERENCE_PUZZLES)
# (label, source, generator keyword arguments), easy to hard. Two numbers in 1..9 hold only 138 distinct puzzles
# (fewer than the default warm-up and held-out rows), so the two-number settings take 1..20.
SETTINGS = (
    ("2x1-20", "countdown", {"min_numbers": 2, "max_numbers": 2, "max_number": 20, "max_target": 100}),
    ("3x1-9 t1-20 near", "countdown", {**_SMALL, "max_number": 9, "max_target": 20}),
    ("3x1-9 t21-100 far", "countdown", {**_SMALL, "max_number": 9, "min_target": 21, "max_target": 100}),
    ("3x1-20 t1-50", "countdown", {**_SMALL, "max_number": 20, "max_target": 50}),
    ("3x1-20 t1-50 balanced", "countdown", {**_SMALL, "max_number": 20, "max_target": 50, "sampling": "balanced"}),
    ("3x1-20 t51-200 far", "countdown", {**_SMALL, "max_number": 20, "min_target": 51, "max_target": 200}),
    ("3x1-99 t1-100", "countdown", {**_SMALL, "max_number": 99, "max_target": 100}),
    ("3-4x1-99 reference", "countdown", dict(_REFERENCE)),
    ("3-4x1-99 reference balanced", "countdown", {**_REFERENCE, "sampling": "balanced"}),
    ("3x1-20 t1-50 balanced, at most once", "countdown_subset",
     {**_SMALL, "max_number": 20, "max_target": 50, "sampling": "balanced"}),
    ("3-4x1-99 reference, at most once", "countdown_subset", dict(_REFERENCE)),
    ("rg 2x1-20 t1-100", "reasoning_gym", {"min_numbers": 2, "max_numbers": 2, "min_value": 1, "max_value": 20,
                                           "min_target": 1, "max_target": 100}),
    ("rg 3x1-9 t1-50", "reasoning_gym", {"min_numbers": 3, "max_numbers": 3, "min_value": 1, "max_value": 9,
                                         "min_target": 1, "max_target": 50}),
    ("rg 3x1-20 t1-50", "reasoning_gym", {"min_numbers": 3, "max_numbers": 3, "min_value": 1, "max_value": 20,
                                          "min_target": 1, "max_target": 50}),
)
QUICK_SETTINGS = ("3x1-20 t1-50 balanced", "3x1-20 t1-50 balanced, at most once", "rg 3x1-9 t1-50")
WARMUPS = ("trace", "answer")
SIGNAL = {"min_greedy": 0.10, "max_greedy": 0.60, "min_headroom": 0.15, "max_blind_share": 0.5}
"""RL signal: greedy in [min_greedy, max_greedy], pass@k at least ``min_headroom`` above it, and the blind rule at
most ``max_blind_share`` of greedy."""


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2", help="a model folder, .gguf file or packaged name (smollm2)")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--warmup", choices=WARMUPS, default="trace",
                        help="what the warm-up learns: the solver's worked trace, or the answer alone (default trace)")
    parser.add_argument("--sft_steps", type=int, default=60, help="warm-up steps (default 60)")
    parser.add_argument("--sft_batch_size", type=int, default=8, help="rows a warm-up step (default 8)")
    parser.add_argument("--sft_learning_rate", type=float, default=5e-5, help="warm-up learning rate (default 5e-5)")
    parser.add_argument("--warmup_rows", type=int, default=64, help="warm-up rows a setting (default 64)")
    parser.add_argument("--rows", type=int, default=100, help="held-out rows a setting (default 100)")
    parser.add_argument("--samples", type=int, default=8, help="samples a row for pass@k (default 8)")
    parser.add_argument("--max_tokens", type=int, default=96,
                        help="completion budget (default 96: the reference shape's longest solver trace is about 70 "
                        "SmolLM2 tokens)")
    parser.add_argument("--seed", type=int, default=0, help="rows, warm-up and sampling seed (default 0)")
    parser.add_argument("--sft", type=Path, default=None,
                        help="a warm-up model an earlier run made (OUT/sft) with the same settings, --seed, "
                        "--warmup_rows and --rows (the same rows: none held out was warmed up on): evaluate it")
    parser.add_argument("--resume", action="store_true",
                        help="go on from what OUT holds (run with the same flags): its warm-up model unless --sft "
                        "names one, and each evaluation it holds of the same model, setting, sampling and rows")
    parser.add_argument("--num_threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--quick", action="store_true", help="2 warm-up steps, 4 rows of 3 settings: a smoke test")
    args = parser.parse_args(argv)
    for name in ("sft_steps", "sft_batch_size", "warmup_rows", "rows", "samples", "max_tokens", "num_threads"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name} must be positive, got {getattr(args, name)}")
    if not args.sft_learning_rate > 0:
        parser.error(f"--sft_learning_rate must be positive, got {args.sft_learning_rate}")
    if args.quick:
        args.sft_steps, args.sft_batch_size, args.warmup_rows, args.rows, args.samples = 2, 2, 4, 4, 2
    if args.resume and args.sft is None and (args.out / "sft" / "config.json").exists():
        args.sft = args.out / "sft"  # the warm-up model the stopped run made
    args.reused = 0  # evaluations --resume read
    return args


def chosen_settings(quick: bool) -> list[tuple[str, str, dict]]:
    """The settings a run screens (``quick``: :data:`QUICK_SETTINGS`, one of each source).

    >>> [source for _, source, _ in chosen_settings(True)]
    ['countdown', 'countdown_subset', 'reasoning_gym']
    """
    return [s for s in SETTINGS if s[0] in QUICK_SETTINGS] if quick else list(SETTINGS)


def rows_key(source: str, kwargs: Mapping[str, Any]) -> str:
    """The rows a setting draws: an at-most-once setting draws (and generates for) its exactly-once twin's rows.

    >>> rows_key("countdown_subset", {"max_number": 9}) == rows_key("countdown", {"max_number": 9})
    True
    """
    family = "reasoning_gym" if source == "reasoning_gym" else "countdown"
    return f"{family} {json.dumps(dict(kwargs), sort_keys=True)}"


def slug(label: str) -> str:
    """A folder name for a label.

    >>> slug("3x1-20 t1-50 balanced, at most once")
    '3x1-20_t1-50_balanced_at_most_once'
    """
    return re.sub(r"[^\w.-]+", "_", label).strip("_")


def setting_task(source: str, config: Mapping[str, Any]):
    """The task scoring a setting's rows (reasoning-gym's options checked as ``--task_options`` are)."""
    from countdown_rl.tasks import get_task

    if source == "reasoning_gym":
        return get_task("reasoning_gym", task_options(source, config))
    return get_task("countdown")


def task_options(source: str, config: Mapping[str, Any]) -> list[str]:
    """The task's options (reasoning-gym: its countdown dataset and config; ours: none)."""
    if source != "reasoning_gym":
        return []
    return ["datasets=countdown", f"config={json.dumps({'countdown': dict(config)})}"]


def puzzle(source: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """``{"nums", "target"}`` of a row: ours hold them; a reasoning-gym row's entry (regenerated) carries them."""
    if source == "reasoning_gym":
        from countdown_rl.tasks.reasoning_gym import source_entry

        metadata = source_entry(row["source"])[2]["metadata"]
        return {"nums": [int(x) for x in metadata["numbers"]], "target": int(metadata["target"])}
    return {"nums": [int(x) for x in row["nums"]], "target": int(row["target"])}


def puzzle_key(p: Mapping[str, Any]) -> tuple[int, tuple[int, ...]]:
    """A puzzle whatever its prompt: the target and the sorted numbers (``CountdownTask.dedupe_key``)."""
    return int(p["target"]), tuple(sorted(int(x) for x in p["nums"]))


def draw_rows(source: str, kwargs: Mapping[str, Any], task, warmup_rows: int, rows: int, seed: int
              ) -> dict[str, list[dict[str, Any]]]:
    """``{"warmup", "eval", "spare"}``: disjoint seeded rows of a setting; ``spare`` replaces held-out rows that are
    another setting's warm-up puzzles. Ours: one generator call cut into its ``parts`` (a balanced pool holds the cap
    on each part, so the held-out part is capped on its own until a spare row replaces one of its rows);
    reasoning-gym's: the demo's split (``countdown_rl.demo.task_rows.task_parts``)."""
    spare = rows // 2 + 8
    if source == "reasoning_gym":
        from countdown_rl.demo.task_rows import task_parts

        parts = task_parts(task, warmup_rows, 1, rows + spare, seed)
        return {"warmup": parts["sft"], "eval": parts["eval"][:rows], "spare": parts["eval"][rows:]}
    from countdown_rl.tasks.countdown.puzzles import generate_countdown

    pool = generate_countdown(warmup_rows + rows + spare, seed=seed, parts=(warmup_rows, rows, spare), **kwargs)
    return {"warmup": pool[:warmup_rows], "eval": pool[warmup_rows:warmup_rows + rows],
            "spare": pool[warmup_rows + rows:]}


def held_out(source: str, drawn: Mapping[str, Sequence[Mapping[str, Any]]], seen: set, rows: int) -> list[dict]:
    """``rows`` held-out rows: the drawn ones, less any puzzle in ``seen`` (every setting's warm-up puzzles) or met
    before, topped up from the spare rows; a ValueError when too few are left."""
    kept, keys = [], set(seen)
    for row in [*drawn["eval"], *drawn["spare"]]:
        key = puzzle_key(puzzle(source, row))
        if key not in keys:
            keys.add(key)
            kept.append(dict(row))
        if len(kept) == rows:
            return kept
    raise ValueError(f"only {len(kept)} of {rows} held-out puzzles are not warm-up puzzles; widen the ranges")


def warmup_examples(kind: str, source: str, task, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``{"prompt", "completion"}`` in the chat template: ``trace`` the solver's worked trace (as the demo's SFT stage
    writes it), ``answer`` the reference expression alone in ``<answer>`` tags."""
    from countdown_rl.demo.puzzles import trace_examples
    from countdown_rl.tasks.countdown.puzzles import solve, solver_trace
    from countdown_rl.training.warmup import task_examples

    if source == "reasoning_gym":
        if kind == "answer":
            return task_examples(task, rows, "chat")  # its reference answer in tags
        return [{"prompt": task.prompt(row, "chat"),
                 "completion": solver_trace(**puzzle(source, row))} for row in rows]
    if kind == "trace":
        return trace_examples(rows, trace="solver", template="chat")
    return [{"prompt": task.prompt(row, "chat"), "completion": f"<answer>{solve(row['nums'], row['target'])}</answer>"}
            for row in rows]


def subset_blind_rule(puzzles: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The best target-blind rule when each number may be used at most once: per count of numbers, the template
    (``blind.templates``) over a fixed choice of the numbers' positions (as given, or sorted largest first) that
    solves most puzzles. Its choices include every position, so it solves at least what ``best_blind_rule`` does.

    >>> rule = subset_blind_rule([{"nums": [9, 1, 2], "target": 9}, {"nums": [7, 3, 5], "target": 7}])
    >>> rule["accuracy"], rule["templates"]
    (1.0, {'3': 'x1'})
    """
    from itertools import combinations

    import numpy as np

    from countdown_rl.tasks.countdown.blind import ORDERS, render_template, solved_matrix, templates

    def placed(tree, positions):  # a template over chosen slots, its leaves renamed to the positions they read
        if isinstance(tree, int):
            return positions[tree]
        op, left, right = tree
        return op, placed(left, positions), placed(right, positions)

    solved, chosen = [False] * len(puzzles), {}
    groups: dict[int, list[int]] = {}
    for i, p in enumerate(puzzles):
        groups.setdefault(len(p["nums"]), []).append(i)
    for k, index in sorted(groups.items()):
        best = (-1, "", np.zeros(0, dtype=bool))
        for order in ORDERS:
            ordered = [[int(x) for x in puzzles[i]["nums"]] for i in index]
            if order == "sorted":
                ordered = [sorted(nums, reverse=True) for nums in ordered]
            for size in range(1, k + 1):
                trees = templates(size)
                for positions in combinations(range(k), size):
                    sub = [{"nums": [nums[j] for j in positions], "target": puzzles[i]["target"]}
                           for i, nums in zip(index, ordered)]
                    matrix = solved_matrix(sub)[:, :len(trees)]  # the sub-list read as it is (already ordered)
                    counts = matrix.sum(axis=0)
                    column = int(np.argmax(counts))
                    if counts[column] > best[0]:
                        best = (int(counts[column]), render_template(placed(trees[column], positions), order),
                                matrix[:, column])
        chosen[str(k)] = best[1]
        for i, hit in zip(index, best[2]):
            solved[i] = bool(hit)
    return {"accuracy": sum(solved) / len(solved) if solved else 0.0, "solved": sum(solved), "total": len(solved),
            "templates": chosen}


def blind_rule(source: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The best target-blind rule of a setting's held-out rows, under its numbers rule."""
    from countdown_rl.tasks.countdown.blind import best_blind_rule

    puzzles = [puzzle(source, row) for row in rows]
    return subset_blind_rule(puzzles) if source == "countdown_subset" else best_blind_rule(puzzles).as_dict()


def rescored(samples: Sequence[Mapping[str, Any]], numbers_rule: str, max_tokens: int, num_samples: int):
    """An evaluation's samples judged again under the verifier's ``numbers_rule`` (``subset``: each number at most
    once), summarised as the evaluation was (``countdown_rl.evaluation.scoring.summarise``)."""
    from countdown_rl.evaluation.scoring import summarise
    from countdown_rl.tasks.countdown.verifier import score_completion

    judged = [{**s, "outcome": score_completion(s["completion"], s["nums"], s["target"], numbers_rule).outcome.value}
              for s in samples]
    return summarise(judged, max_tokens, num_samples)


def has_signal(greedy: float, pass_k: float, blind: float) -> bool:
    """Whether a setting has RL signal (:data:`SIGNAL`).

    >>> has_signal(0.3, 0.7, 0.05), has_signal(0.05, 0.5, 0.0), has_signal(0.4, 0.45, 0.0), has_signal(0.3, 0.7, 0.2)
    (True, False, False, False)
    """
    return (SIGNAL["min_greedy"] <= greedy <= SIGNAL["max_greedy"] and pass_k - greedy >= SIGNAL["min_headroom"]
            and blind <= SIGNAL["max_blind_share"] * greedy)


def prepare(settings: Sequence[tuple[str, str, dict]], args) -> tuple[dict, dict, dict]:
    """Each setting's task, drawn rows and held-out rows (``(tasks, drawn, held)`` by rows key), before any model
    loads: a setting its generator refuses is one line (SystemExit)."""
    tasks, drawn = {}, {}
    for label, source, kwargs in settings:
        key = rows_key(source, kwargs)
        if key in drawn:
            continue
        try:
            if source not in SOURCES:
                raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
            tasks[key] = setting_task(source, kwargs)
            drawn[key] = draw_rows(source, kwargs, tasks[key], args.warmup_rows, args.rows, args.seed)
        except (ValueError, TypeError, RuntimeError) as err:
            raise SystemExit(f"{Path(__file__).name}: error: setting {label!r}: {err}") from None
    sources = {rows_key(source, kwargs): source for _, source, kwargs in settings}
    seen = {puzzle_key(puzzle(sources[key], row)) for key, rows in drawn.items() for row in rows["warmup"]}
    held = {}
    for label, source, kwargs in settings:
        key = rows_key(source, kwargs)
        if key not in held:
            try:
                held[key] = held_out(source, drawn[key], seen, args.rows)
            except ValueError as err:
                raise SystemExit(f"{Path(__file__).name}: error: setting {label!r}: {err}") from None
    return tasks, drawn, held


def done_before(eval_dir: Path, source: str, rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any],
                sampling: Mapping[str, Any], max_tokens: int) -> bool:
    """Whether ``eval_dir`` holds this evaluation already (``--resume``): its meta names the same warm-up model,
    setting and warm-up kind (``meta``) and sampling, its one budget is ``max_tokens``, and its rows are ``rows``'
    puzzles in their order."""
    from countdown_rl.demo.run_dir import read_json_or_none
    from countdown_rl.evaluation.eval_files import EVAL_JSON, read_samples

    previous = read_json_or_none(eval_dir / EVAL_JSON)
    if not isinstance(previous, dict):
        return False
    held = previous.get("meta", {})
    wanted = {"temperature": 0.0, "num_samples": 1, **meta, **sampling}
    if any(held.get(key) != value for key, value in wanted.items()):
        return False
    if [r.get("max_tokens") for r in previous.get("results", [])] != [max_tokens]:
        return False
    firsts = [s for s in read_samples(eval_dir) if s.get("sample_index", 0) == 0]
    return [puzzle_key(puzzle(source, s)) for s in firsts] == [puzzle_key(puzzle(source, r)) for r in rows]


def random_guess(source: str, rows: Sequence[Mapping[str, Any]], k: int) -> tuple[float, float]:
    """``(pass@1, pass@k)`` of a guesser that writes, for each sample, one expression drawn uniformly from the
    distinct ones over the row's numbers (``blind.templates``: brackets and operators, ``+`` / ``*`` operand order
    once), each number exactly once (at most once: over every non-empty choice of them); it never reads the target.

    >>> [round(x, 4) for x in random_guess("countdown", [{"nums": [3, 4], "target": 7}], 2)]  # 1 in 6: 3 + 4
    [0.1667, 0.3056]
    """
    from itertools import combinations

    import numpy as np

    from countdown_rl.tasks.countdown.blind import solved_matrix, templates

    shares = []  # each row's share of expressions that hit its target
    for row in rows:
        p = puzzle(source, row)
        n = len(p["nums"])
        sizes = range(1, n + 1) if source == "countdown_subset" else (n,)
        hits = [solved_matrix([{"nums": [p["nums"][j] for j in chosen], "target": p["target"]}])[0]
                [:len(templates(size))]  # the numbers as chosen (the sorted reading repeats them)
                for size in sizes for chosen in combinations(range(n), size)]
        shares.append(np.concatenate(hits).mean())
    hit = np.array(shares)
    return float(hit.mean()), float((1 - (1 - hit) ** k).mean())


def evaluate_settings(model, backend: str, settings: Sequence[tuple[str, str, dict]], tasks: Mapping[str, Any],
                      held: Mapping[str, list], sft_dir: Path, args) -> list[dict[str, Any]]:
    """Each setting's held-out rows through ``model()`` (a vLLM engine, or the warm-up model's folder; called only
    when an evaluation runs): greedy, then ``args.samples`` samples a row; an at-most-once setting re-scores its
    twin's evaluation; ``args.resume``: an evaluation folder that holds the same evaluation is read. One result row
    each."""
    from countdown_rl.demo.stages import evaluate_stage
    from countdown_rl.evaluation.eval_files import read_eval, read_samples
    from countdown_rl.evaluation.readings import format_rate
    from countdown_rl.files import format_percent

    evaluated: dict[str, tuple] = {}  # rows key -> (greedy, sampled, eval folder): an at-most-once twin reads them
    results = []
    for label, source, kwargs in settings:
        key = rows_key(source, kwargs)
        task, rows = tasks[key], held[key]
        if key not in evaluated:
            out = args.out / slug(label)
            meta = {"model": str(sft_dir), "setting": label, "generator": kwargs, "warmup": args.warmup}
            common = {"budgets": [args.max_tokens], "template": "chat", "backend": backend, "task": task,
                      "show_progress": False, "batch_size": 256, "task_options": task_options(source, kwargs),
                      "meta": meta}
            runs = {"greedy": {}, "sampled": {"temperature": 1.0, "num_samples": args.samples, "seed": args.seed}}
            pair = []
            for name, sampling in runs.items():
                if args.resume and done_before(out / name, source, rows, meta, sampling, args.max_tokens):
                    print(f"{label}: reusing {out / name}", flush=True)
                    args.reused += 1
                    pair.append(read_eval(out / name)["results"][0])
                else:
                    pair.append(evaluate_stage(model(), None, rows, out_dir=out / name, **sampling, **common)[0])
            evaluated[key] = (*pair, out)
        greedy, sampled, out = evaluated[key]
        if source == "countdown_subset":
            greedy = rescored(read_samples(out / "greedy"), "subset", args.max_tokens, 1)
            sampled = rescored(read_samples(out / "sampled"), "subset", args.max_tokens, args.samples)
        k = max(sampled.pass_at_k)
        blind = blind_rule(source, rows)
        guess_1, guess_k = random_guess(source, rows, k)
        row = {"setting": label, "source": source, "generator": kwargs, "rows": len(rows),
               "numbers_rule": "at most once" if source == "countdown_subset" else "exactly once",
               "eval_dir": str(out), "greedy": greedy.accuracy,
               "format_rate": format_rate(read_samples(out / "greedy")),
               "pass_at_1": sampled.pass_at_k.get(1), "k": k, "pass_at_k": sampled.pass_at_k[k],
               "blind": blind["accuracy"], "blind_rule": blind["templates"], "random_pass_at_1": guess_1,
               "random_pass_at_k": guess_k, "mean_tokens": greedy.mean_tokens,
               "truncation_rate": greedy.truncation_rate}
        row["signal"] = has_signal(row["greedy"], row["pass_at_k"], row["blind"])
        results.append(row)
        print(f"{label}: greedy {format_percent(row['greedy'])}, pass@{k} {format_percent(row['pass_at_k'])}, "
              f"blind rule {format_percent(row['blind'])}", flush=True)
    return results


def main(argv=None) -> dict:
    args = parse_args(argv)
    from countdown_rl.demo.run_dir import setup_environment

    setup_environment(args.num_threads)
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB, as the demo's engines: short prompts, 2 cores
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    settings = chosen_settings(args.quick)
    tasks, drawn, held = prepare(settings, args)  # a bad setting: before anything loads

    from countdown_rl.files import format_percent
    from countdown_rl.runs.memory import release_memory

    sources = {rows_key(source, kwargs): source for _, source, kwargs in settings}
    examples = [e for key, rows in drawn.items()
                for e in warmup_examples(args.warmup, sources[key], tasks[key], rows["warmup"])]
    sft_dir, sft_s, bf16 = _common.screen_warmup(
        args, examples, f"{len(settings)} settings, {args.warmup_rows} warm-up and {args.rows} held-out rows each; "
                        f"warm-up on {args.warmup}s")

    t = time.time()
    from countdown_rl.generation.backends import get_backend

    backend = "vllm" if get_backend("vllm").installed() else "transformers"  # as screen_engine chooses
    engines: list = []

    def model():  # the engine, started by the first evaluation that runs (with --resume perhaps none)
        if not engines:
            engines.append(_common.screen_engine(sft_dir, args.seed)[0])
        return engines[0]

    try:
        results = evaluate_settings(model, backend, settings, tasks, held, sft_dir, args)
    finally:
        # Shut the engine down here, as the demo's evaluator does: left to the interpreter's exit, a vllm-cpu 0.31
        # engine never stops (its worker waits) and the process hangs after the table is printed
        engines.clear()
        release_memory()
    eval_s = time.time() - t

    headers = ["setting", "greedy", "format", "pass@1", f"pass@{args.samples}", "blind rule",
               f"random expression: pass@1 / pass@{args.samples}", "mean tokens", "RL signal"]
    table = _common.markdown_table(headers, [
        [r["setting"], format_percent(r["greedy"]), format_percent(r["format_rate"]), format_percent(r["pass_at_1"]),
         format_percent(r["pass_at_k"]), format_percent(r["blind"]),
         f"{format_percent(r['random_pass_at_1'])} / {format_percent(r['random_pass_at_k'])}",
         f"{r['mean_tokens']:.1f}", "yes" if r["signal"] else "no"] for r in results])
    summary = {"model": args.model, "warmup": args.warmup, "settings": results, "seed": args.seed,
               "sft_steps": args.sft_steps, "sft_batch_size": args.sft_batch_size,
               "sft_learning_rate": args.sft_learning_rate, "warmup_rows": args.warmup_rows,
               "warmup_examples": len(examples), "max_tokens": args.max_tokens, "samples": args.samples,
               "signal": SIGNAL, "backend": backend, "bf16": bf16, "sft_s": sft_s, "eval_s": eval_s,
               "reused_evaluations": args.reused,
               "quick": args.quick}
    if args.reused:
        print(f"{args.reused} evaluations read from {args.out} (--resume)")
    return _common.write_screen(args.out, table, summary)


if __name__ == "__main__":
    main()
