"""The MATH verifier cannot be gamed (issue 22): the reported cases as tables, and the work bound in every thread.

Offline and real: math-verify itself; nothing is mocked.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from countdown_rl.tasks.math.rewards import TIMEOUTS_METRIC, math_r1_zero_reward
from countdown_rl.tasks.math.screening import screen_problem
from countdown_rl.tasks.math.verifier import equivalent, verdict
from tests.helpers.env import crash_report

# A right answer's check is about correctness, not the deadline (its own tests are below): on a loaded 2-core machine
# a right answer's parse once ran past the 2 s default, so these checks give it time.
RIGHT_GIVEN_TIME = 60.0


# ---------------------------------------------------------------------------------------------- MATH: partial parses

MATH_WRONG = [
    # (answer, gold): a unit or text around one symbol is that symbol, never dropped
    (r"2\mathrm{i}", "2"),
    (r"3\mathrm{e}", "3"),
    (r"\frac{1}{\mathrm e^3}", r"\frac{1}{\mathrm e}"),
    (r"\frac{1}{\text{x}}", r"\frac{1}{\text{y}}"),
    (r"\frac{\text a}{2}", r"\frac{\text b}{2}"),
    (r"\text{3}", "5"),
    (r"\frac{1}{2}]", r"\frac{1}{2}"),  # math-verify's regex would read a prefix of it
    (r"5\text{ cm}", r"5\text{ m}"),  # units on both sides: compared as text
    (r"6\text{ cm}", "5"),
    (r"\text{(B)}", r"\text{(C)}"),  # a choice is text
    (r"3 \text{ or } 5", "5"),  # several answers
    ("2 3", "5"),  # two numbers side by side are not their sum
    (r"5, 7", "7"),
]
MATH_RIGHT = [
    (r"2\mathrm{i}", "2i"),
    (r"\mathrm{e}^3", "e^3"),
    ("5.", "5"),  # a sentence's full stop
    ("2/3.", r"\frac23"),
    ("(1,2).", "(1,2)"),
    (r"\frac23.", r"\frac23"),
    ("$5$.", "5"),
    ("$5.$", "5"),
    ("7;", "7"),
    (r"F_n=\sum_{k=0}^{n-1}F_kF_{n-k-1}", r"F_n=\sum_{k=0}^{n-1}F_{n-k-1}F_k"),  # the screen lets sums through
    (r"\sum_{i=1}^{10} i", "55"),
    (r"5\text{ cm}", "5"),  # a unit on one side only: the number decides (MATH's golds often omit it)
    (r"5\text{ cm}", r"5 \text{cm}"),
    (r"(C)", r"\text{(C)}"),
    (r"\textbf{(C)}", r"\text{(C)}"),
    (r"\text{Sunday}", r"\text{sunday}"),
]


@pytest.mark.parametrize(("answer", "gold"), MATH_WRONG, ids=[f"{a}~{g}" for a, g in MATH_WRONG])
def test_math_never_rewards_a_partial_parse(answer, gold):
    assert equivalent(answer, gold) is False
    assert math_r1_zero_reward([f"x </think> <answer>{answer}</answer>"], gold=[gold]) == [0.0]


@pytest.mark.parametrize(("answer", "gold"), MATH_RIGHT, ids=[f"{a}~{g}" for a, g in MATH_RIGHT])
def test_math_accepts_right_answers(answer, gold):
    assert equivalent(answer, gold, timeout_seconds=RIGHT_GIVEN_TIME) is True


@pytest.mark.parametrize(
    ("answer", "refused"),
    [
        (r"\sum_{k=0}^{n-1} F_k", False),
        ("x^{n-1}", False),
        ("(x+1)^{9999}", False),  # costly, but in Python: the deadline's to stop
        ("2^{1000}", False),
        (r"\frac{10!}{5!}", False),
        ("9^{9^{9}}", True),
        ("(10^{9999})^{9999}", True),
        ("100000!", True),
        ("(10!)!", True),
        ("2^{100000}", True),
    ],
)
def test_the_screen_refuses_what_is_really_costly(answer, refused):
    assert (screen_problem(answer) is not None) is refused


SLOW = ("(x+1)^{9999}", "(x+2)^{9999}")  # passes the screen; sympy's comparison runs for minutes
BOUND = 1.0  # the deadline used here (the default is 2 s); the slack below covers a loaded 2-core machine
SLACK = 1.5


def _timed_verdict(timeout: float = BOUND) -> tuple[str, float]:
    start = time.perf_counter()
    result = verdict(*SLOW, timeout_seconds=timeout)
    return result, time.perf_counter() - start


def test_a_slow_comparison_is_cut_on_the_main_thread():
    assert equivalent("x+1", "1+x", timeout_seconds=RIGHT_GIVEN_TIME)  # warm math-verify outside the timing
    result, seconds = _timed_verdict()
    assert result == "timeout" and seconds < BOUND + SLACK


def test_a_slow_comparison_is_cut_in_a_worker_thread():
    assert equivalent("x+1", "1+x", timeout_seconds=RIGHT_GIVEN_TIME)
    out: list[tuple[str, float]] = []
    worker = threading.Thread(target=lambda: out.append(_timed_verdict()))
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive() and out and out[0][0] == "timeout" and out[0][1] < BOUND + SLACK


def test_a_slow_comparison_is_cut_in_a_second_process():
    code = (
        "import json, time, threading\n"
        "from countdown_rl.tasks.math import equivalent, verdict\n"
        "equivalent('x+1', '1+x')\n"
        "out = []\n"
        "def run():\n"
        "    start = time.perf_counter(); r = verdict(*%r, timeout_seconds=%r); out.append((r, time.perf_counter() - start))\n"
        "run(); t = threading.Thread(target=run); t.start(); t.join(30)\n"
        "print(json.dumps(out))\n" % (SLOW, BOUND)
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, crash_report(done.stderr, 2000)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert [r for r, _ in out] == ["timeout", "timeout"] and all(s < BOUND + SLACK for _, s in out)


def test_the_batch_that_holds_a_slow_comparison_scores_every_other_completion():
    logged: dict[str, float] = {}
    fmt = "think </think> <answer>{}</answer>".format
    completions = [fmt("0.75"), fmt(SLOW[0]), fmt("0.7"), fmt(r"\frac{3}{4}"), "no answer"]
    golds = [r"\frac34", SLOW[1], r"\frac34", "0.75", "1"]
    result: list = []
    worker = threading.Thread(target=lambda: result.append(
        math_r1_zero_reward(completions, gold=golds, timeout_seconds=BOUND, log_metric=logged.__setitem__)))
    start = time.perf_counter()
    worker.start()
    worker.join(timeout=60)
    assert result == [[1.0, 0.0, 0.0, 1.0, 0.0]]
    assert time.perf_counter() - start < 2 * BOUND + 2 * SLACK  # the gold's parse and the comparison, each bounded
    assert logged[TIMEOUTS_METRIC] == 1
