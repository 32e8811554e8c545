"""Throughput of ``countdown_rl.tasks.countdown.verifier.reward_fn`` against the common public Countdown reward.

The reference is written here in the style found in many public GRPO/R1-Zero Countdown repos: a lazy regex for
the last ``<answer>`` tag, a ``\\d+`` numbers check, a ``^[\\d+\\-*/().\\s]+$`` whitelist, then Python's ``eval``
with empty builtins and a 1e-5 float tolerance. That ``eval`` is the only one in this project, and it sits
outside the package on purpose.

1. Build a deterministic corpus (``random.Random(0)``) of ``--n`` completions over generated puzzles: correct,
   wrong value, wrong numbers, no tag, and adversarial answers (unary signs, ``//``, ``**``, Unicode, leading
   zeros, deep nesting, nested tags, garbage...). Each completion carries a "kind" label.
2. Time both reward functions over the whole corpus, alternating ours / reference for ``--repeats`` rounds, and
   report the median completions/second of each and the ratio ours/reference (> 1: ours is faster).
3. Count the completions on which the two rewards differ, per kind, with the reason.

Run from the repository root: ``python benchmarks/verifier_throughput.py [--n 100000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path

try:
    from countdown_rl.tasks.countdown.verifier import reward_fn
except ImportError:  # run as a script from a checkout without an installed package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from countdown_rl.tasks.countdown.verifier import reward_fn

GroundTruth = dict  # {"numbers": list[int], "target": int}

# --------------------------------------------------------------------------------------------------------------
# The reference: the common public style (regex whitelist + eval with empty builtins).
# --------------------------------------------------------------------------------------------------------------

_REF_ANSWER = re.compile(r"<answer>(.*?)</answer>")  # no DOTALL, as commonly written
_REF_DIGITS = re.compile(r"\d+")
_REF_ALLOWED = re.compile(r"^[\d+\-*/().\s]+$")


def reference_reward(text: str, ground_truth: GroundTruth) -> float:
    """1.0 / 0.1 / 0.0 like ours, but with the common regex + eval verifier."""
    matches = _REF_ANSWER.findall(text)
    if not matches:
        return 0.0
    equation = matches[-1].strip()
    try:
        used = sorted(int(n) for n in _REF_DIGITS.findall(equation))
        if used != sorted(ground_truth["numbers"]):
            return 0.1
        if not _REF_ALLOWED.match(equation):
            return 0.1
        value = eval(equation, {"__builtins__": None}, {})  # the reference's whole point; never in the package
        if abs(value - ground_truth["target"]) < 1e-5:
            return 1.0
        return 0.1
    except Exception:
        return 0.1


# --------------------------------------------------------------------------------------------------------------
# The corpus
# --------------------------------------------------------------------------------------------------------------

_FILLER = [
    "Let me try combining the numbers.",
    "First, add the two largest.",
    "That overshoots, so subtract instead.",
    "Maybe multiplication gets closer to the target.",
    "Dividing does not give an integer here, skip it.",
    "Check: that uses every number once.",
    "Hmm, not quite.",
    "Let me reconsider the order of operations.",
]


def make_puzzle(rng: random.Random) -> tuple[list[int], int, str]:
    """Random numbers, a target reachable with them, and one correct equation (integer steps only)."""
    while True:
        numbers = [rng.randint(1, 99) for _ in range(rng.choice((3, 4)))]
        items = [(str(n), n) for n in numbers]
        while len(items) > 1:
            (a_text, a), (b_text, b) = items.pop(rng.randrange(len(items))), items.pop(rng.randrange(len(items)))
            op = rng.choice("+-*/")
            if op == "-" and a < b:
                (a_text, a), (b_text, b) = (b_text, b), (a_text, a)
            if op == "/" and (b == 0 or a % b):
                op = rng.choice("+*")
            value = {"+": a + b, "-": a - b, "*": a * b, "/": a // b if b else 0}[op]
            items.append((f"({a_text} {op} {b_text})", value))
        text, target = items[0]
        if 1 <= target <= 1000:
            return numbers, target, text[1:-1]


def think(rng: random.Random) -> str:
    return "<think>" + " ".join(rng.choice(_FILLER) for _ in range(rng.randint(2, 12))) + "</think>\n"


def _first_number(eq: str, numbers: list[int], new: Callable[[int], str]) -> str:
    """``eq`` with its first occurrence of ``numbers[0]`` rewritten by ``new``."""
    return eq.replace(str(numbers[0]), new(numbers[0]), 1)


def _wrong_value(eq: str) -> str:
    """Swap one operator: almost always a different value with the same numbers."""
    if " + " in eq:
        return eq.replace(" + ", " * ", 1)
    return eq.replace(" - ", " + ", 1).replace(" * ", " + ", 1).replace(" / ", " * ", 1)


_ARABIC_INDIC = str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669")
_GARBAGE = "0123456789+-*/() x."

# Builders get (rng, numbers, target, correct equation). Most return the answer-tag body, which build_corpus wraps
# in "<think>...</think>\n<answer>BODY</answer>"; those in _WHOLE return the whole completion after the think.
Builder = Callable[[random.Random, list[int], int, str], str]
KINDS: dict[str, tuple[float, Builder]] = {  # kind -> (weight, builder)
    "correct": (40, lambda r, ns, t, eq: eq),
    "wrong value": (10, lambda r, ns, t, eq: _wrong_value(eq)),
    "wrong numbers": (8, lambda r, ns, t, eq: f"{eq} + {ns[0]}"),
    "no tag": (10, lambda r, ns, t, eq: f"So the answer is {eq} = {t}."),
    "unclosed tag": (3, lambda r, ns, t, eq: f"<answer>{eq}"),
    "multi-line answer": (3, lambda r, ns, t, eq: f"<answer>\n{eq}\n</answer>"),
    "unary minus": (2, lambda r, ns, t, eq: f"-(-({eq}))"),
    "unary plus": (2, lambda r, ns, t, eq: f"+({eq})"),
    "floor division": (2, lambda r, ns, t, eq: eq.replace(" / ", " // ")),
    "power": (2, lambda r, ns, t, eq: eq.replace(" * ", " ** ", 1)),
    "equals sign": (2, lambda r, ns, t, eq: f"{eq} = {t}"),
    "implicit mult.": (1, lambda r, ns, t, eq: eq.replace(" * ", "", 1)),
    "unicode operator": (2, lambda r, ns, t, eq: eq.replace(" - ", " \u2212 ").replace(" * ", " \u00d7 ")),
    "unicode digits": (1, lambda r, ns, t, eq: eq.translate(_ARABIC_INDIC)),
    "leading zero": (2, lambda r, ns, t, eq: _first_number(eq, ns, lambda n: f"0{n}")),
    "decimal literal": (1, lambda r, ns, t, eq: _first_number(eq, ns, lambda n: f"{n}.0")),
    "deep nesting (300)": (1, lambda r, ns, t, eq: "(" * 300 + eq + ")" * 300),
    "nested tags": (1, lambda r, ns, t, eq: f"<answer>{eq}</answer>"),
    "empty tag": (1, lambda r, ns, t, eq: ""),
    "code injection": (1, lambda r, ns, t, eq: f"__import__('os').getcwd() and {eq}"),
    "garbage 4k": (1, lambda r, ns, t, eq: "".join(r.choice(_GARBAGE) for _ in range(4000))),
}
_WHOLE = {"no tag", "unclosed tag", "multi-line answer"}

# Why the two rewards differ on a kind (ours vs reference), where they do.
EXPLANATIONS = {
    "unary minus": "reference evaluates '-(-(x))' (Python unary minus); Countdown has no unary operators",
    "unary plus": "reference accepts unary plus; ours does not",
    "floor division": "reference evaluates '//' (Python floor division, equal to '/' when exact); ours rejects it",
    "power": "reference evaluates '**'; ours rejects it (and 9 ** 9 ** 9, not in the corpus, would hang eval)",
    "multi-line answer": "reference's '.*?' regex (no DOTALL) misses an answer spanning lines; ours extracts it",
    "leading zero": "Python rejects '07' as a literal; ours reads it as 7",
    "deep nesting (300)": "Python's parser stops at 200 nested parentheses; ours is iterative (<= 1024 chars)",
    "wrong value": "only where the float tolerance differs from exact equality",
}


def build_corpus(n: int, seed: int = 0) -> list[tuple[str, str, GroundTruth]]:
    """``n`` (kind, completion, ground truth) triples, the same for the same ``n`` and ``seed``."""
    rng = random.Random(seed)
    names = list(KINDS)
    weights = [KINDS[name][0] for name in names]
    corpus = []
    for kind in rng.choices(names, weights, k=n):
        numbers, target, eq = make_puzzle(rng)
        body = KINDS[kind][1](rng, numbers, target, eq)
        text = think(rng) + (body if kind in _WHOLE else f"<answer>{body}</answer>")
        corpus.append((kind, text, {"numbers": numbers, "target": target}))
    return corpus


# --------------------------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------------------------


def time_scorer(scorer: Callable[[str, GroundTruth], float], corpus: list[tuple[str, str, GroundTruth]]) -> float:
    """Completions per second for one pass over the corpus."""
    start = time.perf_counter()
    for _kind, text, gt in corpus:
        scorer(text, gt)
    return len(corpus) / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="completions in the corpus (default 100000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per scorer (default 3)")
    args = parser.parse_args(argv)
    # eval of "7(3)" emits "SyntaxWarning: 'int' object is not callable" on every call; silence it so the
    # reference is timed without stderr writes (and the report stays readable).
    warnings.simplefilter("ignore", SyntaxWarning)

    start = time.perf_counter()
    corpus = build_corpus(args.n)
    kinds = Counter(kind for kind, _, _ in corpus)
    print(f"corpus: {len(corpus)} completions, {len(kinds)} kinds, built in {time.perf_counter() - start:.1f}s")

    ours_rates, ref_rates = [], []
    for repeat in range(args.repeats):
        # Alternate so drift in machine load hits both scorers alike.
        ours_rates.append(time_scorer(reward_fn, corpus))
        ref_rates.append(time_scorer(reference_reward, corpus))
        print(f"  repeat {repeat + 1}: ours {ours_rates[-1]:>10,.0f}/s   reference {ref_rates[-1]:>10,.0f}/s")
    ours, ref = statistics.median(ours_rates), statistics.median(ref_rates)
    print(f"median completions/second: ours {ours:,.0f}   reference (regex + eval) {ref:,.0f}")
    print(f"ratio ours/reference: {ours / ref:.2f}x")

    disagreements: Counter[str] = Counter()
    pairs: dict[str, Counter[tuple[float, float]]] = {}
    for kind, text, gt in corpus:
        a, b = reward_fn(text, gt), reference_reward(text, gt)
        if a != b:
            disagreements[kind] += 1
            pairs.setdefault(kind, Counter())[(a, b)] += 1
    total = sum(disagreements.values())
    print(f"disagreements: {total} of {len(corpus)} ({100 * total / len(corpus):.2f}%)")
    for kind, count in disagreements.most_common():
        (a, b), _ = pairs[kind].most_common(1)[0]
        why = EXPLANATIONS.get(kind, "UNEXPECTED: investigate")
        print(f"  {kind:<20} {count:>6} of {kinds[kind]:>6}  (ours {a}, ref {b}): {why}")


if __name__ == "__main__":
    main()
