"""A second oracle for Countdown: reasoning-gym's countdown scorer against our verifier on the same completions.

1. Puzzles: ``--puzzles`` Countdown puzzles from ``generate_countdown`` (3-4 numbers in 1..99, targets 1..100) at
   ``--seed``. For each, an exhaustive search over ``+ - * /`` (exact fractions) gives correct equations (some with
   fractional steps), a wrong one, near misses (a value within reasoning-gym's float tolerance of the target but
   not equal) and a solution over all but one number; a second search over ``+ - * //`` gives an equation that
   reaches the target only because ``//`` truncates.
2. Completions: per puzzle the correct equations and systematic mutations of one (a number swapped, left out, used
   twice or added, an operator swapped, unary signs, decimals, ``×`` / ``÷`` / ``x`` / ``−`` signs, ``**``, ``^``,
   ``//``, ``= target``, unbalanced or deep parentheses, tabs, newlines, no-break spaces, Unicode digits, leading
   zeros, padding past our length cap, several / nested / empty / unclosed tags, text around the tags, ...), plus the
   adversarial strings our verifier's own tests use (fixed puzzles). Each completion carries a kind.
3. Ours: ``get_task("countdown").judge(text, {"nums", "target"})``; correct means outcome CORRECT.
4. Theirs: the answer is the last ``<answer>`` pair's content (``tasks.reasoning_gym.verifier.extract_answer``); it
   reaches reasoning-gym's ``CountdownDataset.score_answer`` (sympy ``parse_expr``, i.e. Python eval) only when
   ``screen_answer("countdown", answer)`` passes, and then under the graders' deadline. A screened-out answer is
   recorded as "screened" (our reasoning_gym task scores it 0); correct means a score of 1.0.
5. Printed (and written to ``--out`` as JSON): the confusion counts (both correct, both wrong, ours only, theirs
   only, screened), the counts per kind, and every disagreement class (kind x direction) with its count, the
   shortest example, which side is right and why.

Run from the repository root: ``python benchmarks/reasoning_gym_oracle.py --seed 0 --out OUT``
(``--quick``: 8 puzzles, a few hundred completions, seconds).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.ensure_repo_on_path()

SCORER_SECONDS = 2.0  # the deadline of one reasoning-gym call (the reasoning_gym task's default)
RTOL, ATOL = Fraction(1, 10**5), Fraction(1, 10**6)  # np.isclose's defaults as reasoning-gym calls it (atol=1e-6)
SOLUTIONS_PER_PUZZLE = 6
DIRECTIONS = ("ours only", "theirs only", "ours only (screened)")

# ------------------------------------------------------------------------------------------------- the search


def _wrap(text: str) -> str:
    return text if text.isdigit() else f"({text})"


def _combine(a: Fraction, b: Fraction, floor: bool) -> list[tuple[str, Fraction, bool]]:
    """(sign, value, clean) for every binary operation on ``a`` and ``b`` in this order; ``clean``: no division
    left a remainder (so ``/`` and ``//`` agree)."""
    out = [("+", a + b, True), ("-", a - b, True), ("*", a * b, True)]
    if b != 0:
        if floor:
            out.append(("//", Fraction(a.numerator // b.numerator), a.numerator % b.numerator == 0))
        else:
            q = a / b
            out.append(("/", q, q.denominator == 1))
    return out


def search(nums: list[int], target: int, *, floor: bool = False) -> dict:
    """Every value reachable with each subset of ``nums`` (one equation, clean ones preferred, per value), and for
    the whole set: the equations equal to ``target`` (``hits``, up to ``SOLUTIONS_PER_PUZZLE``), those within
    reasoning-gym's tolerance but not equal (``near``) and one that misses (``miss``). ``floor``: ``//`` instead
    of ``/`` (integers only)."""
    n = len(nums)
    full = (1 << n) - 1
    table: dict[int, dict[Fraction, tuple[str, bool]]] = {1 << i: {Fraction(v): (str(v), True)}
                                                          for i, v in enumerate(nums)}
    hits: list[tuple[str, bool]] = []
    near: list[str] = []
    miss: str | None = None
    target_f = Fraction(target)
    for mask in sorted(range(1, full + 1), key=lambda m: bin(m).count("1")):
        if mask in table:
            continue
        here: dict[Fraction, tuple[str, bool]] = {}
        sub = (mask - 1) & mask
        while sub:
            rest = mask ^ sub
            for va, (ta, ca) in table[sub].items():
                for vb, (tb, cb) in table[rest].items():
                    for sign, value, clean in _combine(va, vb, floor):
                        clean = clean and ca and cb
                        text = f"{_wrap(ta)} {sign} {_wrap(tb)}"
                        if mask == full:
                            if value == target_f:
                                if len(hits) < SOLUTIONS_PER_PUZZLE and text not in {h for h, _ in hits}:
                                    hits.append((text, clean))
                            elif abs(value - target_f) <= ATOL + RTOL * abs(target_f):
                                if len(near) < 2:
                                    near.append(text)
                            elif miss is None:
                                miss = text
                        if value not in here or (clean and not here[value][1]):
                            here[value] = (text, clean)
            sub = (sub - 1) & mask
        table[mask] = here
    return {"table": table, "hits": hits, "near": near, "miss": miss}


def _left_out(nums: list[int], target: int, table: dict) -> str | None:
    """An equation over all numbers but one: equal to the target if one is, else any."""
    full = (1 << len(nums)) - 1
    best = None
    for i in range(len(nums)):
        values = table[full ^ (1 << i)]
        if Fraction(target) in values:
            return values[Fraction(target)][0]
        best = best or next(iter(values.values()))[0]
    return best


# ------------------------------------------------------------------------------------------------- the completions

_FULLWIDTH = str.maketrans("0123456789", "".join(chr(0xFF10 + d) for d in range(10)))
_ARABIC_INDIC = str.maketrans("0123456789", "".join(chr(0x0660 + d) for d in range(10)))
_LITERAL = re.compile(r"[0-9]+")
_GARBAGE = "0123456789+-*/() "


def _first_literal(eq: str, new: Callable[[str], str]) -> str:
    m = _LITERAL.search(eq)
    return eq[: m.start()] + new(m.group()) + eq[m.end():]


def _swap_operator(eq: str) -> str:
    for old, new in ((" + ", " - "), (" - ", " + "), (" * ", " + "), (" / ", " * ")):
        if old in eq:
            return eq.replace(old, new, 1)
    return eq


# kind -> builder(rng, puzzle) -> answer-tag body (None: not applicable to this puzzle)
Body = Callable[[random.Random, dict], "str | None"]
BODIES: dict[str, Body] = {
    "correct": lambda r, p: p["eq"],
    "correct, no spaces": lambda r, p: p["eq"].replace(" ", ""),
    "correct, tabs": lambda r, p: p["eq"].replace(" ", "\t"),
    "correct, newline inside": lambda r, p: p["eq"].replace(" ", "\n", 1),
    "correct, trailing period": lambda r, p: p["eq"] + ".",
    "correct, outer parentheses": lambda r, p: f"(({p['eq']}))",
    "correct, 150 nested parentheses": lambda r, p: "(" * 150 + p["eq"] + ")" * 150,
    "correct, 250 nested parentheses": lambda r, p: "(" * 250 + p["eq"] + ")" * 250,
    "correct, leading zero": lambda r, p: _first_literal(p["eq"], lambda s: "0" + s),
    "correct, padded past 1024 chars": lambda r, p: p["eq"].replace(" ", " " * 1100, 1),
    "number swapped": lambda r, p: _first_literal(p["eq"], lambda s: str(int(s) + 1)),
    "number left out": lambda r, p: p["left_out"],
    "number used twice": lambda r, p: f"{p['eq']} + {p['nums'][0]} - {p['nums'][0]}",
    "extra number (+ 0)": lambda r, p: f"{p['eq']} + 0",
    "operator swapped": lambda r, p: _swap_operator(p["eq"]),
    "wrong equation": lambda r, p: p["miss"],
    "near miss (float tolerance)": lambda r, p: p["near"][0] if p["near"] else None,
    "unary minus": lambda r, p: f"-(-({p['eq']}))",
    "unary plus": lambda r, p: f"+({p['eq']})",
    "floor division (// for an exact /)": lambda r, p: p["floor_exact"],
    "floor division that truncates": lambda r, p: p["floor_trunc"],
    "decimal literal": lambda r, p: _first_literal(p["eq"], lambda s: s + ".0"),
    "× ÷ x − signs": lambda r, p: (p["eq"].replace("*", "\u00d7").replace("/", "\u00f7").replace("-", "\u2212")
                                   if any(c in p["eq"] for c in "*/-") else None),
    "x for *": lambda r, p: p["eq"].replace("*", "x") if "*" in p["eq"] else None,
    "** for *": lambda r, p: p["eq"].replace("*", "**", 1) if "*" in p["eq"] else None,
    "^ for +": lambda r, p: p["eq"].replace("+", "^", 1) if "+" in p["eq"] else None,
    "= target": lambda r, p: f"{p['eq']} = {p['target']}",
    "target alone": lambda r, p: str(p["target"]),
    "unbalanced (": lambda r, p: "(" + p["eq"],
    "unbalanced )": lambda r, p: p["eq"] + ")",
    "implicit multiplication": lambda r, p: _first_literal(p["eq"], lambda s: f"{s}(1)"),
    "no-break space": lambda r, p: p["eq"].replace(" ", "\u00a0"),
    "fullwidth digits": lambda r, p: p["eq"].translate(_FULLWIDTH),
    "Arabic-Indic digits": lambda r, p: p["eq"].translate(_ARABIC_INDIC),
    "LaTeX": lambda r, p: "$" + p["eq"].replace("*", "\\times").replace("/", "\\div") + "$",
    "code": lambda r, p: f"__import__('os').getcwd() and {p['eq']}",
    "empty tag": lambda r, p: "",
    "whitespace-only tag": lambda r, p: " \n\t ",
    "random arithmetic characters": lambda r, p: "".join(r.choice(_GARBAGE) for _ in range(r.randint(5, 400))),
}

# kind -> builder(rng, puzzle) -> the whole completion after the think part
Whole = Callable[[random.Random, dict], "str | None"]
WHOLES: dict[str, Whole] = {
    "no tag": lambda r, p: f"So the answer is {p['eq']} = {p['target']}.",
    "unclosed tag": lambda r, p: f"<answer>{p['eq']}",
    "capitalised tag": lambda r, p: f"<Answer>{p['eq']}</Answer>",
    "text around the tags": lambda r, p: f"The equation is <answer>{p['eq']}</answer>, which gives {p['target']}.",
    "several tags, correct last": lambda r, p: f"<answer>{p['miss']}</answer> no: <answer>{p['eq']}</answer>",
    "several tags, correct first": lambda r, p: f"<answer>{p['eq']}</answer> or <answer>{p['miss']}</answer>",
    "nested tags": lambda r, p: f"<answer><answer>{p['eq']}</answer></answer>",
}

# Our verifier's adversarial strings (tests/tasks/countdown/test_verifier.py), written out here with their cause:
# (kind, numbers, target, answer-tag body).
_AE = [7, 7, 65]  # the puzzle the adversarial equations are put to: 65 - 7 - 7 = 51
ADVERSARIAL: list[tuple[str, list[int], int, str]] = [
    ("unary minus", [5, 10], 5, "-5 + 10"),
    ("unary plus", [5], 5, "+5"),
    ("unary minus", [5, 3], 2, "5 + -3"),
    ("unary minus", [5, 3], 8, "5 - -3"),
    ("unary minus", [5], 5, "--5"),
    ("unary minus", _AE, 51, "-(7 - 65) - 7"),
    ("unary plus", [5, 3], 15, "5 * +3"),
    ("unary plus", _AE, 51, "+65 - 7 - 7"),
    ("** for *", [2, 3], 8, "2 ** 3"),
    ("** for *", [2, 3, 43], 51, "2 ** 3 + 43"),
    ("floor division (// for an exact /)", [8, 2], 4, "8 // 2"),
    ("floor division (// for an exact /)", [100, 2, 1], 51, "100 // 2 + 1"),
    ("floor division that truncates", [7, 2, 48], 51, "48 + 7 // 2"),
    ("near miss (float tolerance)", [50, 1, 99, 98], 50, "50 + 1 / (99 * 98)"),
    ("python operator", [8, 3], 2, "8 % 3"),
    ("python operator", [151, 100], 51, "151 % 100"),
    ("= target", [1, 2, 3], 3, "1 + 2 = 3"),
    ("python operator", [1, 1], 1, "1 == 1"),
    ("python operator", [1, 2], 1, "1 < 2"),
    ("^ for +", [1, 2], 3, "1 ^ 2"),
    ("python operator", [1, 3], 1, "1 & 3"),
    ("python operator", [1], 1, "~1"),
    ("python literal", [1, 3], 1000, "1e3"),
    ("python literal", [0, 10], 16, "0x10"),
    ("python literal", [1, 0], 1000, "1_000"),
    ("python literal", [1, 2], 1, "1,2"),
    ("python literal", [1, 2], 2, "1; 2"),
    ("python literal", [1], 1, "[1]"),
    ("python literal", [1], 1, "{1}"),
    ("python literal", [1, 1, 2], 1, "1 if 1 else 2"),
    ("python literal", [1], 1, "lambda: 1"),
    ("decimal literal", [7, 5], 7, "7.5"),
    ("correct, trailing period", [7], 7, "7."),  # the "." ends the sentence
    ("decimal literal", [5], 5, ".5"),
    ("decimal literal", [7, 5, 2], 15, "7.5 * 2"),
    ("decimal literal", [25, 5, 2], 51, "25.5 * 2"),
    ("implicit multiplication", [2, 3, 4], 14, "2(3 + 4)"),
    ("implicit multiplication", [2, 3], 6, "(2)(3)"),
    ("implicit multiplication", [2, 3], 6, "2 3"),
    ("implicit multiplication", [1, 2, 3], 9, "(1 + 2)3"),
    ("implicit multiplication", [1, 2, 3, 4], 21, "(1 + 2) (3 + 4)"),
    ("implicit multiplication", [3, 17], 51, "3(17)"),
    ("implicit multiplication", [3, 17], 51, "(3)(17)"),
    ("implicit multiplication", [3, 17], 51, "3 17"),
    ("× ÷ x − signs", [2, 3], 6, "2 \u00d7 3"),
    ("× ÷ x − signs", [6, 2], 3, "6 \u00f7 2"),
    ("× ÷ x − signs", [7, 2], 5, "7 \u2212 2"),
    ("× ÷ x − signs", [2, 3], 6, "2 \u22c5 3"),
    ("× ÷ x − signs", [3, 17], 51, "3 \u00d7 17"),
    ("× ÷ x − signs", [3, 17], 51, "3 \u22c5 17"),
    ("× ÷ x − signs", [102, 2], 51, "102 \u00f7 2"),
    ("× ÷ x − signs", _AE, 51, "65 \u2212 7 \u2212 7"),
    ("Arabic-Indic digits", [3, 1], 4, "\u0663 + 1"),
    ("Arabic-Indic digits", _AE, 51, "\u0666\u0665 - 7 - 7"),
    ("fullwidth digits", [1, 2], 3, "\uff11 + 2"),
    ("fullwidth digits", _AE, 51, "\uff16\uff15 - 7 - 7"),
    ("fullwidth digits", [1, 2], 3, "\uff081 + 2\uff09"),
    ("no-break space", [1, 2], 3, "1\u00a0+ 2"),
    ("no-break space", [1, 2], 3, "1\u2003+ 2"),
    ("no-break space", _AE, 51, "65\u00a0- 7 - 7"),
    ("control character", [1, 2], 3, "1 + 2\x00"),
    ("code", [1], 2, "x + 1"),
    ("code", [5], 5, "abs(5)"),
    ("code", [], 0, "__import__('os')"),
    ("code", [], 0, "__import__('os').system('echo pwned')"),
    ("code", [], 0, "().__class__"),
    ("code", [1], 2, "True + 1"),
    ("code", [], 0, "nan"),
    ("code", [], 0, "inf"),
    ("code", _AE, 51, "__import__('os').system('true') or 65 - 7 - 7"),
    ("code", _AE, 51, "int(65 - 7 - 7)"),
    ("empty tag", [1], 1, ""),
    ("whitespace-only tag", [1], 1, "   "),
    ("broken structure", [], 0, "()"),
    ("unbalanced (", [1, 2], 3, "(1 + 2"),
    ("unbalanced )", [1, 2], 3, "1 + 2)"),
    ("broken structure", [1], 1, ")1("),
    ("broken structure", [1], 1, "1 +"),
    ("broken structure", [1], 1, "* 1"),
    ("unary plus", [1, 2], 3, "1 + + 2"),
    ("broken structure", [], 0, "(+)"),
    ("broken structure", [1], 1, "1 + ()"),
    ("division by zero", [1, 0], 1, "1 / 0"),
    ("division by zero", [1, 2, 2], 1, "1 / (2 - 2)"),
    ("division by zero", [0, 0], 0, "0 / 0"),
    ("division by zero", [5, 1, 3, 1, 3], 5, "5 / (1 / 3 - 1 / 3)"),
    ("trailing punctuation", _AE, 51, "65 - 7 - 7;;"),
    ("unbalanced (", _AE, 51, "(65 - 7 - 7"),
    ("nested tags", _AE, 51, "<answer>65 - 7 - 7</answer>"),
    ("huge input", _AE, 51, "(" * 10_000 + "65 - 7 - 7" + ")" * 10_000),
    ("correct, padded past 1024 chars", _AE, 51, "65 - 7" + " " * 10_000 + "- 7"),
    ("huge input", [1], 1, "(" * 10_000 + "1" + ")" * 10_000),
    ("huge input", [1], 1, "9" * 10_000),
    ("huge input", [1], 1, "1+" * 5_000 + "1"),
    ("huge input", [1], 1, "x(+" * 350_000),
    ("huge input", [1], 1, "12345678 * " * 100_000),
    ("huge input", [1], 1, "(" * 100_000),
    ("huge input", _AE, 51, "65 - 7 - 7 + 0" + " + 0" * 5_000),
    ("huge input", _AE, 51, "x" * 1_000_000),
    # the examples of our scoring rules
    ("correct", _AE, 51, "65 - 7 - 7"),
    ("correct", _AE, 51, "(65 - 7) - 7 "),
    ("correct", [79, 17, 60], 36, "(79 - (60 - 17))"),
    ("number left out", _AE, 51, "65 - 14"),
    ("extra number (+ 0)", _AE, 51, "65 - 7 - 7 + 3 - 3"),
    ("= target", _AE, 51, "65 - 7 - 7 = 51"),
    ("target alone", _AE, 51, "51"),
    ("number left out", _AE, 51, "65 - 7 * 2"),
    ("nested tags", _AE, 51, "<answer>65 - 7 - 7"),
]

# Why the two sides disagree on a kind, and who is right: (kind, direction) -> (right side, why).
VERDICTS: dict[tuple[str, str], tuple[str, str]] = {
    ("unary minus", "theirs only"): (
        "ours", "Countdown's operations are binary; a sign in front of a number or group is no operation on two "
        "numbers. reasoning-gym's sympy reads Python's unary minus (our `unary_minus=true` option reads it too)"),
    ("unary plus", "theirs only"): (
        "ours", "a unary plus is no Countdown operation; sympy reads it as Python does"),
    ("floor division (// for an exact /)", "theirs only"): (
        "ours", "`//` is not one of the four signs; sympy evaluates it as Python's floor division, which here "
        "happens to equal the exact quotient"),
    ("floor division that truncates", "theirs only"): (
        "ours", "the arithmetic is wrong: `//` drops the remainder (7 // 2 is 3), so reasoning-gym credits an "
        "equation whose exact value is not the target"),
    ("near miss (float tolerance)", "theirs only"): (
        "ours", "the value is not the target: reasoning-gym compares floats with `np.isclose(atol=1e-6)`, whose "
        "default relative tolerance 1e-5 admits anything within 0.001 of a target of 100"),
    ("correct, 250 nested parentheses", "ours only"): (
        "ours", "a correct equation; Python's parser (behind sympy's `parse_expr`) refuses more than 200 nested "
        "parentheses, so reasoning-gym scores it as unparseable"),
    ("correct, leading zero", "ours only"): (
        "ours", "`07` names the given number 7 (our rule reads ASCII digit runs); Python's syntax forbids leading "
        "zeros in integers, so sympy's parse fails"),
    ("correct, padded past 1024 chars", "theirs only"): (
        "reasoning-gym", "a correct equation padded with spaces; our verifier rejects any equation longer than "
        "`MAX_EQUATION_CHARS` (1024) unread, a work bound (a real answer needs about 30 characters)"),
    ("correct, newline inside", "ours only (screened)"): (
        "ours", "a newline between tokens is whitespace to our verifier; the reasoning_gym task's screen admits "
        "only spaces and tabs, so the answer never reaches reasoning-gym's scorer (which, reading it as Python, "
        "would fail on a line break outside parentheses anyway)"),
    ("correct, trailing period", "ours only (screened)"): (
        "ours", "one sentence-ending `.` is not part of the answer (the shared rule of every task here); the "
        "reasoning_gym task's screen refuses `.` and reasoning-gym's extraction keeps it"),
}

# ------------------------------------------------------------------------------------------------- scoring


def puzzle(nums: list[int], target: int, eq: str) -> dict:
    """A puzzle with its correct equation, the search's equations and mutations' material."""
    found = search(nums, target)
    floor = search(nums, target, floor=True)
    from countdown_rl.tasks.countdown.verifier import evaluate_exact

    trunc = [t for t, clean in floor["hits"] if not clean and evaluate_exact(t.replace("//", "/")) != target]
    exact = [t.replace("/", "//") for t, clean in found["hits"] if clean and "/" in t]
    return {"nums": nums, "target": target, "eq": eq, "hits": found["hits"], "near": found["near"],
            "miss": found["miss"] or f"{eq} + 1", "left_out": _left_out(nums, target, found["table"]),
            "floor_exact": exact[0] if exact else None, "floor_trunc": trunc[0] if trunc else None}


def completions(n_puzzles: int, seed: int) -> list[dict]:
    """(kind, text, nums, target) rows: the generated puzzles' completions, then the adversarial ones."""
    from countdown_rl.tasks.countdown.puzzles import generate_countdown, solve

    rng = random.Random(seed)
    rows = []

    def think() -> str:
        return f"<think>Trying {rng.randint(1, 99)} first.</think>\n"

    for p in generate_countdown(n_puzzles, seed=seed):
        nums, target = list(p["nums"]), int(p["target"])
        eq = solve(nums, target)
        pz = puzzle(nums, target, eq)
        bodies = [("correct", eq)]
        bodies += [("correct, another equation" if clean else "correct, fractional step", text)
                   for text, clean in pz["hits"] if text != eq]
        bodies += [(kind, build(rng, pz)) for kind, build in BODIES.items() if kind != "correct"]
        rows += [{"kind": kind, "text": f"{think()}<answer>{body}</answer>", "nums": nums, "target": target}
                 for kind, body in bodies if body is not None]
        rows += [{"kind": kind, "text": think() + whole, "nums": nums, "target": target}
                 for kind, build in WHOLES.items() if (whole := build(rng, pz)) is not None]
    rows += [{"kind": kind, "text": f"<think>I know a trick.</think><answer>{body}</answer>", "nums": nums,
              "target": target} for kind, nums, target, body in ADVERSARIAL]
    return rows


class Judges:
    """Both sides on one completion: ours (the countdown task) and reasoning-gym's scorer, screened."""

    def __init__(self) -> None:
        try:
            from reasoning_gym.factory import DATASETS
        except ImportError:
            raise SystemExit("reasoning-gym is not installed: pip install -e '.[reasoning-gym]'") from None

        from countdown_rl.tasks import get_task

        self.task = get_task("countdown")
        cls, config = DATASETS["countdown"]
        self.dataset = cls(config(size=1, seed=0))

    @staticmethod
    def entry(nums: list[int], target: int) -> dict:
        """A reasoning-gym countdown entry for our puzzle (``score_answer`` reads the metadata's numbers and
        target)."""
        listed = ", ".join(str(n) for n in nums)
        return {"question": f"Calculate {target} using all of these numbers: {listed}.", "answer": None,
                "metadata": {"source_dataset": "countdown", "numbers": list(nums), "target": target}}

    def ours(self, text: str, nums: list[int], target: int) -> dict:
        from countdown_rl.tasks.base import Outcome

        verdict = self.task.judge(text, {"nums": nums, "target": target})
        return {"correct": verdict.outcome is Outcome.CORRECT, "outcome": verdict.outcome.value,
                "reward": verdict.reward}

    def theirs(self, text: str, nums: list[int], target: int) -> dict:
        from countdown_rl.tasks.deadline import run_with_deadline
        from countdown_rl.tasks.reasoning_gym.verifier import extract_answer, screen_answer

        answer = extract_answer(text)
        if answer is None:
            return {"correct": False, "status": "no answer", "score": 0.0}
        if not screen_answer("countdown", answer):  # never hand an unscreened answer to parse_expr
            return {"correct": False, "status": "screened", "score": 0.0}
        try:
            finished, score = run_with_deadline(self.dataset.score_answer, SCORER_SECONDS, answer,
                                                self.entry(nums, target))
        except Exception as exc:  # the scorer catches its own; anything else is its failure, not a verdict
            return {"correct": False, "status": f"error: {type(exc).__name__}", "score": 0.0}
        if not finished:
            return {"correct": False, "status": "timeout", "score": 0.0}
        return {"correct": score == 1.0, "status": "scored", "score": float(score)}


def bucket(ours: dict, theirs: dict) -> str:
    if theirs["status"] == "screened":
        return "screened"
    return {(True, True): "both correct", (False, False): "both wrong", (True, False): "ours only",
            (False, True): "theirs only"}[(ours["correct"], theirs["correct"])]


def direction(ours: dict, theirs: dict) -> str | None:
    """The disagreement's direction, or None when both sides agree (a screened answer scores 0 on their side)."""
    if ours["correct"] == theirs["correct"]:
        return None
    if ours["correct"]:
        return "ours only (screened)" if theirs["status"] == "screened" else "ours only"
    return "theirs only"


BUCKETS = ("both correct", "both wrong", "ours only", "theirs only", "screened")


def run(n_puzzles: int, seed: int) -> dict:
    started = time.perf_counter()
    rows = completions(n_puzzles, seed)
    built = time.perf_counter() - started
    judges = Judges()
    confusion: Counter = Counter()
    kinds: dict[str, Counter] = {}
    classes: dict[tuple[str, str], list[dict]] = {}
    status: Counter = Counter()
    for row in rows:
        ours = judges.ours(row["text"], row["nums"], row["target"])
        theirs = judges.theirs(row["text"], row["nums"], row["target"])
        b = bucket(ours, theirs)
        confusion[b] += 1
        status[theirs["status"]] += 1
        kinds.setdefault(row["kind"], Counter())[b] += 1
        way = direction(ours, theirs)
        if way is not None:
            classes.setdefault((row["kind"], way), []).append({**row, "ours": ours, "theirs": theirs})
    disagreements = []
    for (kind, way), members in sorted(classes.items(), key=lambda item: -len(item[1])):
        example = min(members, key=lambda m: len(m["text"]))
        right, why = VERDICTS.get((kind, way), ("unexplained", "no explanation written for this class"))
        disagreements.append({"kind": kind, "direction": way, "count": len(members), "right": right, "why": why,
                              "example": example})
    return {"seed": seed, "puzzles": n_puzzles, "completions": len(rows),
            "confusion": {b: confusion[b] for b in BUCKETS}, "reasoning_gym_status": dict(status),
            "kinds": {k: {b: c[b] for b in BUCKETS} for k, c in kinds.items()}, "disagreements": disagreements,
            "build_s": round(built, 3), "total_s": round(time.perf_counter() - started, 3)}


# ------------------------------------------------------------------------------------------------- the report


def _shown(text: str, limit: int = 60) -> str:
    shown = text.encode("unicode_escape").decode("ascii") if not text.isascii() or "\n" in text or "\t" in text \
        else text
    shown = re.sub(r" {4,}", lambda m: f" ...{len(m.group())} spaces... ", shown)
    if len(shown) > limit:
        shown = shown[:limit] + f"... ({len(text)} chars)"
    return "`" + shown.replace("|", "\\|").replace("`", "'") + "`"


def report(result: dict) -> str:
    from countdown_rl.tasks.reasoning_gym.verifier import extract_answer

    c = result["confusion"]
    lines = [f"{result['completions']} completions over {result['puzzles']} generated puzzles (seed "
             f"{result['seed']}) and {len(ADVERSARIAL)} adversarial ones; ours: correct = outcome CORRECT, "
             "theirs: correct = reasoning-gym score 1.0", "",
             _common.markdown_table(list(BUCKETS), [[c[b] for b in BUCKETS]]), ""]
    kinds = sorted(result["kinds"].items(), key=lambda kv: kv[0])
    lines += [_common.markdown_table(["kind", "n", *BUCKETS],
                                     [[k, sum(v.values()), *(v[b] or "" for b in BUCKETS)] for k, v in kinds]), ""]
    rows = []
    for d in result["disagreements"]:
        ex = d["example"]
        answer = extract_answer(ex["text"]) or ""
        rows.append([d["kind"], d["direction"], d["count"], f"{ex['nums']} -> {ex['target']}", _shown(answer),
                     d["right"], d["why"]])
    lines += [_common.markdown_table(["kind", "correct for", "n", "puzzle", "example answer", "right", "why"],
                                     rows) if rows else "no disagreements"]
    return "\n".join(lines)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--puzzles", type=int, default=200, help="generated puzzles")
    parser.add_argument("--seed", type=int, default=0, help="generator and mutation seed")
    parser.add_argument("--quick", action="store_true", help="8 puzzles (the test's smoke run)")
    parser.add_argument("--out", default=None, help="also write the result (with every example) as JSON here")
    args = parser.parse_args(argv)
    if args.quick:
        args.puzzles = 8
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    result = run(args.puzzles, args.seed)
    print(report(result))
    print(f"\n{result['completions']} completions judged twice in {result['total_s']:.1f} s")
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
