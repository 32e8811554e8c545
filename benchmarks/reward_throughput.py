"""Reward throughput per task: the task's default reward function against a plain reference, per 64-completion batch.

1. For each registered task (``countdown_rl.tasks.TASKS``; a task whose module does not import yet is skipped with
   a note), build batches of 64 completions as GRPO makes them: 8 prompts from the task's ``generate`` (fresh
   rows for every batch, so no batch repeats another's golds) x 8 completions each, mixing right answers, right
   answers in another notation, wrong answers and answers without the format, each after 200-2,000 characters
   of reasoning (deterministic: ``random.Random(seed)``).
2. Score every batch with the task's default reward function (``task.default_reward_funcs[0]``, called as TRL
   calls it) and with the reference, alternating the two batch by batch so drift in machine load hits both alike.
   The references are the plain way to score without the task's engineering:
   - math: the task's own answer extraction (cheap, and not what is compared), then
     ``math_verify.verify(parse(gold), parse(answer))`` per completion, both wrapped in ``\\boxed{}`` as ours
     are, with math-verify's defaults (its signal-based 5 s timeouts, all extractors): no caching of parsed golds
     or answers, no shortcuts, no screen;
   - countdown: the regex-whitelist + Python ``eval`` reward of ``verifier_throughput.py`` (the common public
     style; its ``eval`` stays outside the package);
   - any other task: the text of the last ``<answer>`` tag (a lazy regex) compared as a string with the row's
     last ground-truth column (``task.columns[-1]``), a floor that does no parsing at all.
3. Print, per task: the first (cold) batch of ours, which includes importing the verifier's dependencies; the
   median ms per 64-batch and completions/s of ours and of the reference; the speed-up; the share of a 12.76 s GRPO
   step that one 64-batch of ours costs (the step measured on an H100, 2026-11-23, 8 prompts x 8 completions,
   ``../shared/notes/gpu-h100-2026-11-23.md``; the goal is under ~3%); and how often ours and the reference agree on
   "right".

Run from the repository root: ``python benchmarks/reward_throughput.py [--batches 20] [--quick] [--tasks math]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from re import compile as _regex
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

try:
    from countdown_rl.tasks import TASKS, get_task
except ImportError:  # run as a script from a checkout without an installed package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from countdown_rl.tasks import TASKS, get_task

GPU_STEP_SECONDS = 12.76
"""One GRPO step (8 prompts x 8 completions, 256 tokens, Qwen3-1.7B-shaped, H100), measured 2026-11-23."""
STEP_SHARE_GOAL = 0.03
PROMPTS_PER_BATCH = 8
GROUP = 8
SENTENCES = [
    "Let me set up the equation first.",
    "Multiplying both sides by 4 gives 12x = 36.",
    "So the denominator is 15 and the numerator is 7.",
    "Check: 3 + 4 = 7, which matches.",
    "We can write $\\frac{a}{b}$ in lowest terms.",
    "The remainder when 101 is divided by 7 is 3.",
    "Hmm, that does not look right; let me recompute.",
    "There are 12 ways to choose the first item and 11 for the second.",
]


def reasoning(rng: random.Random) -> str:
    """200-2,000 characters of plausible reasoning, numbers included (they feed the last-number rule)."""
    out: list[str] = []
    target = rng.randint(200, 2000)
    while sum(map(len, out)) < target:
        out.append(rng.choice(SENTENCES))
    return " ".join(out)


# ------------------------------------------------------------------------------------------------------------------
# Completions per task: (kind, text) for one prepared row
# ------------------------------------------------------------------------------------------------------------------


def _other_notation(gold: str) -> str:
    """The gold value in another notation: a decimal or a/b for fractions, n.0 for integers."""
    match = _regex(r"(-?)\\frac\{(\d+)\}\{(\d+)\}").fullmatch(gold)
    if match:
        sign, num, den = match.groups()
        value = Fraction(int(num), int(den))
        d = value.denominator
        while d % 2 == 0:
            d //= 2
        while d % 5 == 0:
            d //= 5
        return f"{sign}{float(value)}" if d == 1 else f"{sign}{num}/{den}"
    return f"{gold}.0"


def _wrong(gold: str) -> str:
    match = _regex(r"(-?)\\frac\{(\d+)\}\{(\d+)\}").fullmatch(gold)
    if match:
        sign, num, den = match.groups()
        return f"{sign}\\frac{{{int(num) + 1}}}{{{den}}}"
    return str(int(gold) + 1) if gold.lstrip("-").isdigit() else gold + "+1"


def _tagged_completion(think: str, gold: str, kind: str, inside_tags: dict[str, str]) -> str:
    """One completion of ``kind``: ``inside_tags`` holds the text inside <answer> for the kinds that have the tags."""
    if kind in inside_tags:
        return f"{think} </think> <answer>{inside_tags[kind]}</answer>"
    if kind == "boxed, no tags":
        return f"{think} So the answer is $\\boxed{{{gold}}}$."
    return f"{think} I am not sure."  # no format at all


def math_completion(row: dict, kind: str, rng: random.Random) -> str:
    gold = row["gold"]
    return _tagged_completion(reasoning(rng), gold, kind, {
        "right": gold,
        "right, other notation": _other_notation(gold),
        "right, boxed in tags": f"$\\boxed{{{gold}}}$",
        "wrong": _wrong(gold),
    })


def countdown_completion(row: dict, kind: str, rng: random.Random) -> str:
    from countdown_rl.tasks.countdown.puzzles import solve

    equation = solve(row["nums"], row["target"]) or "0"
    think = reasoning(rng)
    if kind.startswith("right"):
        return f"{think} </think> <answer>{equation}</answer>"
    if kind == "wrong":
        return f"{think} </think> <answer>{equation} + 1</answer>"
    if kind == "boxed, no tags":
        return f"{think} So {equation} = {row['target']}."
    return f"{think} I am not sure."


def generic_completion(task: Any, row: dict, kind: str, rng: random.Random) -> str:
    gold, think = str(row[task.columns[-1]]), reasoning(rng)
    if kind.startswith("right"):
        return f"{think} </think> <answer>{gold}</answer>"
    if kind == "wrong":
        return f"{think} </think> <answer>{gold}1</answer>"
    return f"{think} The answer is {gold}."


def math_like_gold(rng: random.Random) -> str:
    """A gold of one of the answer shapes MATH's test set has beyond integers and fractions, numbers drawn fresh."""
    a, b, c = rng.randint(2, 30), rng.randint(2, 30), rng.randint(2, 30)
    return rng.choice([
        f"\\frac{{{a}\\sqrt{{{b}}}}}{{{c}}}",
        f"{a}\\sqrt{{{b}}}",
        f"({a}, {a + b}]",
        f"[{a}, \\infty)",
        f"(-\\infty, {a}) \\cup ({a + b}, \\infty)",
        f"{a}\\pi",
        f"x^2+{a}x+{b}",
        f"\\left({a}, \\frac{{{b}}}{{{c}}}\\right)",
        f"{a}^\\circ",
        f"\\${a}.{b:02d}",
        f"\\begin{{pmatrix}} {a} \\\\ -{b} \\end{{pmatrix}}",
        f"\\{{{a}, {a + b}\\}}",
        f"{a}, {a + b}, {a + b + c}",
        f"\\frac{{{a}}}{{{a + b}}}",
        f"{a * 100 + b}",
        f"-{a}",
    ])


def math_like_completion(row: dict, kind: str, rng: random.Random) -> str:
    """Like :func:`math_completion`; right answers differ from the gold as text, so they go through math-verify."""
    gold = row["gold"]
    return _tagged_completion(reasoning(rng), gold, kind, {
        "right": f"${gold}$",
        "right, other notation": f"\\displaystyle {gold.replace(',', ' , ')}",
        "right, boxed in tags": f"The answer is $\\boxed{{ {gold} }}$",
        "wrong": _regex(r"[0-9]").sub(lambda m: str((int(m.group()) + 1) % 10), gold, 1),
    })


# Per group of 8: 3 right, 1 right in another notation, 1 right boxed inside the tags, 1 wrong, 1 boxed without
# tags, 1 without any format. Shuffled per group.
GROUP_KINDS = ["right"] * 3 + ["right, other notation", "right, boxed in tags", "wrong", "boxed, no tags", "no format"]

# ------------------------------------------------------------------------------------------------------------------
# References
# ------------------------------------------------------------------------------------------------------------------


def math_reference() -> Callable[[str, dict], float]:
    from math_verify import parse, verify

    from countdown_rl.tasks.math import extract

    def score(text: str, row: dict) -> float:
        answer = extract(text).answer  # the same extraction as ours: the comparison is what is timed
        if answer is None:
            return 0.0
        return float(verify(parse("\\boxed{" + row["gold"] + "}"), parse("\\boxed{" + answer + "}")))

    return score


def countdown_reference() -> Callable[[str, dict], float]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from verifier_throughput import reference_reward  # the regex + eval reward, kept outside the package

    warnings.simplefilter("ignore", SyntaxWarning)
    return lambda text, row: reference_reward(text, {"numbers": list(row["nums"]), "target": row["target"]})


_ANSWER = _regex(r"<answer>(.*?)</answer>")


def generic_reference(task: Any) -> Callable[[str, dict], float]:
    column = task.columns[-1]

    def score(text: str, row: dict) -> float:
        found = _ANSWER.findall(text)
        return float(bool(found) and found[-1].strip() == str(row[column]).strip())

    return score


# ------------------------------------------------------------------------------------------------------------------
# Timing
# ------------------------------------------------------------------------------------------------------------------


Batch = tuple[list[str], list[dict], list[str]]  # completions, their prepared rows, their kinds


def clear_library_caches() -> None:
    """Empty math-verify's internal LRU caches (20 entries each), so neither scorer inherits the other's parses."""
    parser = sys.modules.get("math_verify.parser")
    if parser is not None:
        for name in ("parse_latex_cached", "extract_latex", "parse_expr_cached"):
            cached = getattr(parser, name, None)
            if hasattr(cached, "cache_clear"):  # private names of math-verify 0.9; absent elsewhere: nothing to do
                cached.cache_clear()


def make_batches(task: Any, batches: int, seed: int, variant: str = "") -> list[Batch]:
    """``batches`` batches of 64 (completion, prepared row, kind), fresh rows for every batch."""
    rng = random.Random(seed)
    rows = [task.prepare_row(r) for r in task.generate(batches * PROMPTS_PER_BATCH, seed=seed)]
    if variant == "MATH-like golds":
        rows = [{**row, "gold": math_like_gold(rng)} for row in rows]
    build: Callable[[dict, str, random.Random], str] = {
        "math": math_like_completion if variant else math_completion,
        "countdown": countdown_completion,
    }.get(task.name, lambda row, kind, r: generic_completion(task, row, kind, r))
    out = []
    for b in range(batches):
        texts, batch_rows, kinds_out = [], [], []
        for row in rows[b * PROMPTS_PER_BATCH : (b + 1) * PROMPTS_PER_BATCH]:
            kinds = GROUP_KINDS[:]
            rng.shuffle(kinds)
            for kind in kinds:
                texts.append(build(row, kind, rng))
                batch_rows.append(row)
                kinds_out.append(kind)
        out.append((texts, batch_rows, kinds_out))
    return out


def score_ours(func: Callable[..., list], task: Any, texts: Sequence[str], rows: Sequence[dict]) -> list:
    columns = {c: [row[c] for row in rows] for c in task.columns}
    return func(completions=list(texts), **columns, log_metric=lambda name, value: None)


def bench_task(name: str, batches: int, seed: int, variant: str = "") -> dict[str, Any] | None:
    try:
        task = get_task(name)
    except (ImportError, AttributeError) as err:
        print(f"  {name}: skipped, its module does not import yet ({type(err).__name__}: {err})")
        return None
    reward_name = task.default_reward_funcs[0]
    ours = task.get_reward_funcs([reward_name])[0]
    data = make_batches(task, batches + 1, seed, variant)

    start = time.perf_counter()
    score_ours(ours, task, *data[0][:2])  # cold: imports (sympy, ...) and first parses
    cold = time.perf_counter() - start
    reference = {"math": math_reference, "countdown": countdown_reference}.get(name, lambda: generic_reference(task))()
    for text, row in zip(*data[0][:2]):
        reference(text, row)  # the reference's warm-up, untimed

    ours_times, ref_times, total = [], [], 0
    disagree: Counter[str] = Counter()
    for texts, rows, kinds in data[1:]:
        clear_library_caches()
        start = time.perf_counter()
        score_ours(ours, task, texts, rows)
        ours_times.append(time.perf_counter() - start)
        clear_library_caches()  # else the reference would find ours' parses in math-verify's own caches
        start = time.perf_counter()
        theirs = [reference(text, row) for text, row in zip(texts, rows)]
        ref_times.append(time.perf_counter() - start)
        # "right" for ours: the task's judge (the reward's scale differs per task)
        right = [task.judge(text, row).outcome.value == "correct" for text, row in zip(texts, rows)]
        disagree.update(kind for kind, a, b in zip(kinds, right, theirs) if a != (b >= 1.0))
        total += len(texts)
    ours_s, ref_s = statistics.median(ours_times), statistics.median(ref_times)
    size = PROMPTS_PER_BATCH * GROUP
    if disagree:
        print(f"  {name}{f' ({variant})' if variant else ''}: ours and the reference disagree on 'right' for "
              + ", ".join(f"{count} '{kind}'" for kind, count in disagree.most_common()) + f" of {total}")
    return {
        "task": name + (f" ({variant})" if variant else ""),
        "reward": getattr(ours, "__name__", reward_name),
        "cold_ms": 1000 * cold,
        "ours_ms": 1000 * ours_s,
        "ours_rate": size / ours_s,
        "ours_max_ms": 1000 * max(ours_times),
        "ref_ms": 1000 * ref_s,
        "ref_rate": size / ref_s,
        "speedup": ref_s / ours_s,
        "step_share": ours_s / GPU_STEP_SECONDS,
        "agree": 1 - sum(disagree.values()) / total,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=20, help="timed 64-completion batches per task (default 20)")
    parser.add_argument("--quick", action="store_true", help="3 timed batches per task (a smoke run)")
    parser.add_argument("--tasks", nargs="*", default=None, help="tasks to run (default: every registered task)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    batches = 3 if args.quick else args.batches
    names = args.tasks or list(TASKS)
    print(f"{batches} timed batches of {PROMPTS_PER_BATCH} prompts x {GROUP} completions per task; "
          f"GPU step {GPU_STEP_SECONDS} s (H100, 2026-11-23); Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs visible")
    runs = [(name, "") for name in names]
    if "math" in names:  # generate's golds are integers and fractions; MATH has harder shapes too
        runs.insert(runs.index(("math", "")) + 1, ("math", "MATH-like golds"))
    results = [r for r in (bench_task(name, batches, args.seed, v) for name, v in runs) if r is not None]
    print()
    print("| task | reward | cold 1st batch ms | ours ms / 64 (median) | ours compl/s | max ms / 64 | "
          "reference ms / 64 | reference compl/s | speed-up | share of 12.76 s step | agree on right |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['task']} | {r['reward']} | {r['cold_ms']:,.0f} | {r['ours_ms']:,.1f} | {r['ours_rate']:,.0f} | "
              f"{r['ours_max_ms']:,.1f} | {r['ref_ms']:,.1f} | {r['ref_rate']:,.0f} | {r['speedup']:.2f}x | "
              f"{100 * r['step_share']:.2f}% | {100 * r['agree']:.1f}% |")
    over = [r["task"] for r in results if r["step_share"] > STEP_SHARE_GOAL]
    print(f"\ngoal: a 64-batch under {100 * STEP_SHARE_GOAL:.0f}% of the GPU step: "
          + (f"MISSED by {', '.join(over)}" if over else "met by every task measured"))


if __name__ == "__main__":
    main()
