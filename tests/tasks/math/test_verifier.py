"""The MATH verifier (countdown_rl.tasks.math.verifier): extraction, the R1-Zero format, equivalence, deadlines."""

from __future__ import annotations

import gc
import signal
import threading
import time
from fractions import Fraction

import pytest

from countdown_rl.tasks.extraction import last_boxed, last_number
from countdown_rl.tasks.math.screening import MAX_ANSWER_CHARS, screen_problem
from countdown_rl.tasks.math.verifier import (
    DEFAULT_TIMEOUT_SECONDS, GOLD_ATTEMPTS, Extraction, equivalent, extract, r1_zero_format,
)
from tests.helpers.task_samples import BIG, fmt

# A right answer's check is about correctness, not the deadline (its own tests are below): on a loaded 2-core machine
# a right answer's parse once ran past the 2 s default, so these checks give it time.
RIGHT_GIVEN_TIME = 60.0


# ----------------------------------------------------------------------------------------------------------------
# Extraction
# ----------------------------------------------------------------------------------------------------------------

BOXED_CASES = [
    (r"\boxed{5}", "5"),
    (r"first \boxed{1} then \boxed{2}", "2"),  # the last box
    (r"$\boxed{\frac{3}{4}}$.", r"\frac{3}{4}"),  # nested braces matched
    (r"\boxed{\{1, 2\}}", r"\{1, 2\}"),  # escaped braces are not groups
    (r"\boxed{a\\}", "a\\\\"),  # an escaped backslash, then the closing brace
    (r"\fbox{7}", "7"),
    (r"\boxed {8}", "8"),  # a space before the brace
    (r"The answer is $\boxed 5$.", "5"),  # MATH's brace-less form
    (r"\boxed{\frac{1}{2}", None),  # unclosed: the last box never closes
    (r"\boxed{1} and then \boxed{2", None),  # the last box decides even when truncated
    (r"\boxed{}", ""),
    ("\\boxed", None),  # no brace, nothing after
    (r"\boxedx{3}", None),  # another command
    (r"\boxed{3} \boxedfoo{4}", "3"),  # a look-alike after the real box
    ("no box at all", None),
    ("\\boxed{" + "{" * BIG, None),  # deeply nested, never closed
    ("\\boxed{" + "{" * 400 + "1" + "}" * 401, "{" * 400 + "1" + "}" * 400),
    ("\\boxed{" + "{" * 600 + "1" + "}" * 601, None),  # closes only past MAX_BOXED_SCAN: read as unclosed
    ("\\boxed{٣}", "٣"),  # unicode content is returned as is
    ("\\boxed" * 20_000, None),  # many look-alikes: still linear
]


@pytest.mark.parametrize("text,expected", BOXED_CASES, ids=[repr(c[0][:30]) for c in BOXED_CASES])
def test_last_boxed(text, expected):
    assert last_boxed(text) == expected


EXTRACT_CASES = [
    (fmt("5"), Extraction("tag", "5", True)),
    (fmt(r"$\boxed{\frac{1}{2}}$"), Extraction("tag", r"\frac{1}{2}", True)),  # a box inside the tags
    (fmt(r"\boxed{\frac{1}{2}"), Extraction("tag", None, True)),  # unclosed box inside: unreadable
    (r"so \boxed{7}", Extraction("box", "7", False)),
    (r"\boxed{7} <answer>8</answer>", Extraction("tag", "8", False)),  # tags win over boxes
    ("<answer>1</answer> then <answer>2</answer>", Extraction("tag", "2", False)),  # the last complete pair
    ("<answer>1", Extraction("none", None, False)),
    ("nothing", Extraction("none", None, False)),
    (fmt(""), Extraction("tag", "", True)),
    (fmt(r"\boxedfoo 5"), Extraction("tag", r"\boxedfoo 5", True)),  # a look-alike command is not a box
]


@pytest.mark.parametrize("text,expected", EXTRACT_CASES, ids=[repr(c[0][:30]) for c in EXTRACT_CASES])
def test_extract(text, expected):
    assert extract(text) == expected


FORMAT_CASES = [
    ("reasoning </think> <answer>4</answer>", True),
    ("reasoning</think><answer>4</answer>", True),  # whitespace between is optional
    ("reasoning </think>\n\n<answer>\n4\n</answer>", True),
    ("<think> reasoning </think> <answer>4</answer>", True),  # a re-opened <think> is allowed
    ("reasoning </think> <answer>4</answer>\nUser: next question", True),  # text after </answer> is ignored
    ("reasoning </think> so <answer>4</answer>", False),  # text between </think> and <answer>
    ("reasoning <answer>4</answer>", False),  # no </think>
    ("reasoning </think> <answer>4", False),  # unclosed answer
    ("</answer> reasoning </think> <answer>4", False),  # </answer> must come after the <answer>
    ("reasoning </think> <ANSWER>4</ANSWER>", False),  # tags are case-sensitive
    ("</think>" + " " * BIG, False),
]


@pytest.mark.parametrize("text,expected", FORMAT_CASES, ids=[repr(c[0][:40]) for c in FORMAT_CASES])
def test_r1_zero_format(text, expected):
    assert r1_zero_format(text) is expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("x = 3, then -7", Fraction(-7)),
        ("3-5", Fraction(5)),  # a minus between digits is subtraction, not a sign
        ("total 1,000 apples", Fraction(1000)),
        ("pi is 3.14.", Fraction(314, 100)),
        ("no numbers", None),
        ("٣ and ５", None),  # only ASCII digits count
        ("9" * 60, None),  # a digit run too long to be an answer
        ("1 " * 50_000, Fraction(1)),
    ],
)
def test_last_number(text, expected):
    assert last_number(text) == expected


# ----------------------------------------------------------------------------------------------------------------
# Equivalence
# ----------------------------------------------------------------------------------------------------------------

EQUIVALENCE_CASES = [
    # (answer, gold, equivalent)
    ("0.5", r"\frac{1}{2}", True),
    ("1/2", r"\frac{1}{2}", True),
    (r"\dfrac12", r"\frac{1}{2}", True),
    (r"$\frac{1}{2}$", "0.5", True),
    ("-0.125", r"-\frac{1}{8}", True),
    ("0.51", r"\frac{1}{2}", False),
    ("$3/4$", r"\dfrac{3}{4}", True),
    ("6/8", r"\frac{3}{4}", True),
    ("2/0", r"\frac{1}{2}", False),
    ("0.333333", r"\frac{1}{3}", True),  # not exactly equal: math-verify's 6-decimal rounding decides
    ("007", "7", True),
    ("-7", "7", False),
    ("7", "7.0", True),
    (r"5\text{ cm}", "5", True),  # a unit on one side only: the number decides
    (r"5\text{ cm}", r"5\text{ m}", False),  # units on both sides are compared as text
    (r"\$18.90", "18.90", True),
    ("1{,}000", "1000", True),
    ("(1, 2]", "(1,2]", True),  # intervals
    ("(0.5, 2]", r"(\frac{1}{2}, 2]", True),
    ("(1, 2)", "(1,2]", False),
    (r"(-\infty, 2) \cup (3, \infty)", r"(-\infty,2)\cup(3,\infty)", True),
    (r"\{2, 1\}", r"\{1,2\}", True),  # sets ignore order
    ("3, 1, 2", "1, 2, 3", True),
    (r"\frac{\sqrt{2}}{2}", r"\frac{1}{\sqrt{2}}", True),
    ("(x+1)^2", "x^2+2x+1", True),
    ("x = 3", "3", True),
    (r"\text{(C)}", r"\text{(C)}", True),
    (r"\pi", "3.14", False),
    ("", "5", False),
    ("five", "5", False),
    ("٥", "5", False),  # an Arabic-Indic digit is not read as 5
    ("9" * 200, "9" * 200, True),  # huge numbers: exact string
    ("9" * 200, "9" * 199 + "8", False),
    ("2^{100}", "1267650600228229401496703205376", True),
    ("9^{9^{9}}", "5", False),  # screened out: a power tower
    ("1000000!", "5", False),  # screened out: a factorial of a big number
    ("(" * 40 + "5" + ")" * 40, "5", False),  # screened out: too deep
    ("1" * (MAX_ANSWER_CHARS + 1), "5", False),  # screened out: too long
]


@pytest.mark.parametrize("answer,gold,expected", EQUIVALENCE_CASES, ids=[f"{c[0][:20]!r}~{c[1][:20]!r}" for c in EQUIVALENCE_CASES])
def test_equivalent(answer, gold, expected):
    # a right answer is right given time (RIGHT_GIVEN_TIME); a wrong one is wrong within the default deadline
    deadline = RIGHT_GIVEN_TIME if expected else DEFAULT_TIMEOUT_SECONDS
    assert equivalent(answer, gold, timeout_seconds=deadline) is expected


def test_deadline_stops_a_slow_parse_and_leaves_no_signal_behind():
    assert equivalent("x+1", "1+x")  # imports and warms math-verify outside the timed part
    # the gold below is parsed (and cached) now, given time: the deadline hits the answer
    assert not equivalent("x", "40213", timeout_seconds=RIGHT_GIVEN_TIME)
    before = signal.getsignal(signal.SIGALRM)
    # Six bare nested groups with fresh digits: a cold parse takes hundreds of ms, far over a 1 ms deadline.
    slow = "{" * 6 + "40213" + "}" * 6
    assert screen_problem(slow) is None
    start = time.perf_counter()
    assert equivalent(slow, "40213", timeout_seconds=0.001) is False
    assert time.perf_counter() - start < 2.0
    assert signal.getsignal(signal.SIGALRM) is before  # no alarm is used any more
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
    assert equivalent(slow, "40213", timeout_seconds=0) is True  # the deadline made the difference (not cached)


def test_a_gold_that_overruns_its_deadline_is_retried_then_given_up():
    slow_gold = "{" * 6 + "52817" + "}" * 6
    assert equivalent("52817", slow_gold, timeout_seconds=0) is True  # readable, given the time
    slower_gold = "{" * 6 + "61829" + "}" * 6
    # No garbage collection while the alarms fire: hypothesis (other tests here) hooks a callback into the collector,
    # and an alarm that lands in it is swallowed there, so the parse would run on past its deadline.
    gc.disable()
    try:
        for _ in range(GOLD_ATTEMPTS):
            assert equivalent("61829", slower_gold, timeout_seconds=0.001) is False
    finally:
        gc.enable()
    assert equivalent("61829", slower_gold, timeout_seconds=0) is False  # given up: no more deadlines spent on it
    assert equivalent(slower_gold, slower_gold) is True  # equal strings still match


def test_off_the_main_thread_there_is_no_signal_and_no_error():
    results = []
    worker = threading.Thread(target=lambda: results.append(
        equivalent("0.25", r"\frac{1}{4}", timeout_seconds=RIGHT_GIVEN_TIME)))
    worker.start()
    worker.join(timeout=30)
    assert results == [True]
