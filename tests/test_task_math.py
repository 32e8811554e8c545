"""The MATH task: extraction, math-verify equivalence, the r1_zero and shaped rewards, rows, options, the registry.

Offline and real: every case runs the task's own code and math-verify; rows are built here.
"""

from __future__ import annotations

import functools
import gc
import signal
import threading
import time
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from countdown_rl.tasks import get_task, task_class
from countdown_rl.tasks.base import Outcome, Verdict
from countdown_rl.tasks.math import (
    GOLD_ATTEMPTS,
    MAX_ANSWER_CHARS,
    Extraction,
    MathOptions,
    MathTask,
    equivalent,
    extract,
    generate_math,
    last_boxed,
    last_number,
    math_r1_zero_reward,
    math_shaped_reward,
    parse_level,
    r1_zero_format,
    screen_problem,
)

BIG = 100_000  # characters in the "100 KB" inputs


def fmt(answer: str) -> str:
    """A completion in the R1-Zero format (the prompt already opened <think>)."""
    return f"Let me think. </think> <answer>{answer}</answer>"


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
    assert equivalent(answer, gold) is expected


@pytest.mark.parametrize(
    "answer,expected",
    [
        (r"\frac{\sqrt{3}}{2}", None),
        (r"\left(\frac{\sqrt{3}}{2}, -\frac{1}{2}\right)", None),
        ("2^{1000}", None),
        ("10!", None),
        ("9^{9^{9}}", "a power tower"),
        ("x^{10^{10}}", "a power tower"),
        ("2^{100000}", "an exponent over 4 digits"),
        ("1000000!", "a factorial or binomial of a number over 4 digits"),
        (r"\binom{100000}{50000}", "a factorial or binomial of a number over 4 digits"),
        (r"\sum_{i=1}^{10} i", None),  # sums and symbolic exponents are the deadline's to bound
        (r"F_n=\sum_{k=0}^{n-1}F_kF_{n-k-1}", None),
        ("(x+1)^{9999}", None),
        ("(10^{9999})^{9999}", "powers whose exponents multiply past 1,000,000"),
        ("(10!)!", "a factorial or binomial of a power or of a factorial"),
        ("2 3", "two numbers side by side"),
        ("{" * 7 + "1" + "}" * 7, "nested deeper than 6"),
        ("1" * 301, "longer than 300 characters"),
    ],
)
def test_screen_problem(answer, expected):
    assert screen_problem(answer) == expected


def test_deadline_stops_a_slow_parse_and_leaves_no_signal_behind():
    assert equivalent("x+1", "1+x")  # imports and warms math-verify outside the timed part
    assert not equivalent("x", "40213")  # the gold below is parsed (and cached) now: the deadline hits the answer
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
    worker = threading.Thread(target=lambda: results.append(equivalent("0.25", r"\frac{1}{4}")))
    worker.start()
    worker.join(timeout=30)
    assert results == [True]


# ----------------------------------------------------------------------------------------------------------------
# Rewards
# ----------------------------------------------------------------------------------------------------------------


def test_r1_zero_reward_values_and_metrics():
    logged = {}
    completions = [
        fmt("0.75"),  # formatted, right
        fmt("0.7"),  # formatted, wrong
        r"so the answer is \boxed{\frac34}",  # right but not formatted
        "no answer",
    ]
    rewards = math_r1_zero_reward(completions, gold=[r"\frac{3}{4}"] * 4, log_metric=lambda k, v: logged.__setitem__(k, v))
    assert rewards == [1.0, 0.0, 0.0, 0.0]
    assert logged == {"math/malformed_rows": 0, "math/timeouts": 0, "math/format_reward": 0.5,
                      "math/answer_reward": 0.5}


def test_r1_zero_reward_on_chat_completions():
    completion = [{"role": "assistant", "content": fmt(r"\boxed{12}")}]
    assert math_r1_zero_reward([completion], gold=["12"]) == [1.0]


@pytest.mark.parametrize(
    "text,expected",
    [
        (r"... so $\boxed{\frac{5}{2}}$.", 1.1),  # seed 002's clean solve
        (r"the answer is \boxed{2.5} and 2.5", 1.1),  # the last number adds nothing when a box is complete
        (r"\boxed{995}", 0.1),  # a box, wrong
        (r"\boxed{2.5} then \boxed{3}", 0.1),  # the last box counts
        (r"\boxed{\frac{5}{2}", 0.1),  # unclosed box, last number 2 is wrong
        (r"\boxed{5/2 so 2.5", 0.2),  # unclosed box + right last number
        ("so it is 2.5", 0.1),  # no box, right last number
        ("so it is 2", 0.0),
        ("<answer>2.5</answer>", 0.1),  # tags play no part: the last number 2.5
        ("", 0.0),
    ],
)
def test_math_shaped_reward(text, expected):
    assert math_shaped_reward([text], gold=[r"\frac{5}{2}"]) == [expected]


def test_malformed_gold_rows_score_none_and_are_counted():
    logged = {}
    rewards = math_shaped_reward(["\\boxed{1}"] * 3, gold=["1", "", None], log_metric=lambda k, v: logged.__setitem__(k, v))
    assert rewards == [1.1, None, None]
    assert logged == {"math/malformed_rows": 2, "math/timeouts": 0}
    with pytest.raises(ValueError, match="mismatched batch lengths"):
        math_r1_zero_reward(["a", "b"], gold=["1"])
    with pytest.raises(ValueError, match="'gold'"):
        math_r1_zero_reward(["a"], gold=None)


def test_reward_funcs_are_named_bound_and_picklable():
    import pickle

    task = get_task("math", ["timeout_seconds=0.5"])
    funcs = task.get_reward_funcs(["r1_zero", "math_shaped"])
    assert [f.__name__ for f in funcs] == ["math_r1_zero_reward", "math_shaped_reward"]
    assert all(f.keywords == {"timeout_seconds": 0.5} for f in funcs)
    assert pickle.loads(pickle.dumps(funcs[0]))([fmt("1")], gold=["1"]) == [1.0]
    assert task.default_reward_funcs == ("r1_zero",)


# ----------------------------------------------------------------------------------------------------------------
# judge
# ----------------------------------------------------------------------------------------------------------------

ROW = {"problem": "What is 1/2 + 1/4?", "gold": r"\frac{3}{4}"}


@pytest.mark.parametrize(
    "text,expected",
    [
        (fmt("0.75"), Verdict(Outcome.CORRECT, "0.75", 1.0)),
        (fmt("3/4"), Verdict(Outcome.CORRECT, "3/4", 1.0)),
        (r"it is \boxed{\frac34}", Verdict(Outcome.CORRECT, r"\frac34", 0.0)),  # right, r1_zero format missing
        (fmt("0.7"), Verdict(Outcome.PARTIAL, "0.7", 0.0)),
        (fmt("three quarters"), Verdict(Outcome.PARTIAL, "three quarters", 0.0)),
        (fmt(r"\boxed{0.75"), Verdict(Outcome.PARTIAL, None, 0.0)),  # unreadable box in the tags
        ("I do not know", Verdict(Outcome.FAILED, None, 0.0)),
        ("</think> <answer>0.75", Verdict(Outcome.FAILED, None, 0.0)),
    ],
)
def test_judge(text, expected):
    assert MathTask().judge(text, ROW) == expected


def test_judge_caps_the_recorded_answer():
    verdict = MathTask().judge(fmt("7" * BIG), ROW)
    assert verdict.outcome is Outcome.PARTIAL
    assert len(verdict.answer) == MAX_ANSWER_CHARS + 3


# ----------------------------------------------------------------------------------------------------------------
# Rows, options, prompts, registry
# ----------------------------------------------------------------------------------------------------------------


def test_prepare_row_takes_the_gold_from_answer_or_the_last_box():
    task = MathTask()
    lighteval = {"problem": "p", "solution": r"First $\boxed{1}$, finally $\boxed{\frac{3}{4}}$.", "level": "Level 3",
                 "type": "Algebra"}
    row = task.prepare_row(lighteval)
    assert (row["gold"], row["level"], row["type"]) == (r"\frac{3}{4}", 3, "Algebra")
    assert task.prepare_row({"problem": "p", "solution": r"so \fbox{12}"})["gold"] == "12"
    math500 = {"problem": "p", "solution": r"\boxed{0.5}", "answer": r"\frac12", "level": 2}
    assert task.prepare_row(math500)["gold"] == r"\frac12"  # the answer column wins
    assert task.prepare_row({"problem": "p", "answer": 7})["gold"] == "7"
    assert task.prepare_row({"problem": "p", "gold": "9", "level": 4}) == {"problem": "p", "gold": "9", "level": 4}
    assert task.prepare_row({"problem": "p", "solution": r"\boxed{1}", "level": "Level ?"})["level"] is None
    for row in (lighteval, math500):
        assert task.row_problem(task.prepare_row(row)) is None


@pytest.mark.parametrize(
    "row,message",
    [
        ({"problem": "p", "solution": "no box here"}, "'solution' has no complete \\boxed"),
        ({"problem": "p", "solution": r"\boxed{1"}, "'solution' has no complete \\boxed"),
        ({"problem": "p", "solution": r"\boxed{}"}, "'solution' has no complete \\boxed"),
        ({"problem": "p", "answer": ["1"]}, "'answer' is ['1']"),
        ({"problem": "p"}, "no 'answer' or 'solution' column"),
        ({"problem": "p", "solution": r"\boxed{1}", "level": "hard"}, "'level' is 'hard'"),
    ],
)
def test_prepare_row_errors_name_the_column(row, message):
    with pytest.raises(ValueError) as err:
        MathTask().prepare_row(row)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "row,message",
    [
        ({"problem": "", "gold": "1"}, "'problem' is ''"),
        ({"gold": "1"}, "'problem' is None"),
        ({"problem": "p", "gold": "  "}, "'gold' is '  '"),
        ({"problem": "p", "gold": 5}, "'gold' is 5"),
        ({"problem": "p"}, "'gold' is missing"),
    ],
)
def test_row_problem_names_the_column(row, message):
    assert message in MathTask().row_problem(row)


def test_the_dataset_probe_of_all_none_columns_keeps_gold():
    # countdown_rl.data.loading probes prepare_row with every column None: it must not fail on the values.
    probe = MathTask().prepare_row({"problem": None, "solution": None, "level": None, "type": None})
    assert "gold" in probe and MathTask().row_problem(probe) is not None


def test_level_filter_difficulty_and_dedupe():
    rows = [{"problem": f"p{k}", "gold": "1", "level": level} for k, level in
            enumerate(["Level 1", "Level 5", 5, "Level ?", None, 4])]
    assert [MathTask(["levels=5"]).filter_row(r) for r in rows] == [False, True, True, False, False, False]
    assert [MathTask(["levels=4,5"]).filter_row(r) for r in rows] == [False, True, True, False, False, True]
    assert all(MathTask().filter_row(r) for r in rows)
    assert [MathTask().difficulty(r) for r in rows] == [1.0, 5.0, 5.0, 0.0, 0.0, 4.0]
    task = MathTask()
    assert task.dedupe_key({"problem": " What is\n 1+1? "}) == task.dedupe_key({"problem": "What is 1+1?"})
    assert parse_level(" Level 2 ") == 2


def test_options():
    assert MathTask().options == MathOptions(levels=(), timeout_seconds=2.0)
    assert MathTask(["levels=5"]).options.levels == (5,)
    assert MathTask(["levels=5,4,5"]).options.levels == (4, 5)
    assert MathTask({"levels": 5}).options.levels == (5,)
    assert MathTask(["timeout_seconds=0"]).options.timeout_seconds == 0.0


@pytest.mark.parametrize(
    "options,message",
    [
        (["levels=6"], "levels"),
        (["levels=0"], "levels"),
        (["levels=hard"], "levels"),
        (["timeout_seconds=-1"], "timeout_seconds"),
        (["timeout_seconds=soon"], "timeout_seconds"),
        (["level=5"], "unknown math option 'level'"),
        (["levels"], "not key=value"),
    ],
)
def test_option_errors_are_one_line_naming_the_key(options, message):
    with pytest.raises(ValueError) as err:
        MathTask(options)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_prompt_templates():
    task = MathTask()
    row = {"problem": "What is $1+1$?", "gold": "2"}
    r1 = task.prompt(row)
    assert r1.endswith("User: What is $1+1$?\nAssistant: <think>") and "<answer> answer here </answer>" in r1
    assert "\\boxed{}" in task.prompt(row, "boxed") and task.prompt(row, "boxed").startswith("Problem: What is")
    assert [m["role"] for m in task.prompt(row, "chat")] == ["system", "user"]
    assert {n: t.conversational for n, t in task.prompt_templates.items()} == {
        "r1_zero": False, "boxed": False, "chat": True}
    with pytest.raises(ValueError, match="unknown prompt template"):
        task.prompt(row, "cot")


def test_generate_is_deterministic_and_its_golds_are_judged_correct():
    task = MathTask()
    rows = task.generate(40, seed=7)
    assert rows == generate_math(40, seed=7) and rows != task.generate(40, seed=8)
    assert {r["type"] for r in rows} == {"Algebra", "Counting & Probability", "Number Theory", "Prealgebra"}
    prepared = [task.prepare_row(r) for r in rows]
    golds = [r["gold"] for r in prepared]
    assert any(g.startswith(("\\frac", "-\\frac")) for g in golds) and any(g.lstrip("-").isdigit() for g in golds)
    assert all(isinstance(r["level"], int) and 1 <= r["level"] <= 5 for r in prepared)
    for row in prepared:
        assert task.row_problem(row) is None
        assert task.judge(fmt(row["gold"]), row).outcome is Outcome.CORRECT
        assert task.judge(fmt(row["gold"]), row).reward == 1.0
        # the same value in another notation: a decimal for fractions with a short expansion
        value = Fraction(last_number(row["solution"].split("boxed")[-1]) or 0)
        if "frac" not in row["gold"]:
            assert task.judge(fmt(f"{value}.0"), row).outcome is Outcome.CORRECT
    assert math_shaped_reward([f"\\boxed{{{g}}}" for g in golds], gold=golds) == [1.1] * len(golds)


def test_registry():
    assert task_class("math") is MathTask
    task = get_task("math", ["levels=5"])
    assert isinstance(task, MathTask) and task.name == "math" and task.columns == ("problem", "gold")
    assert task.default_dataset in task.known_datasets and task.default_template in task.prompt_templates
    assert set(task.reward_funcs()) == {"r1_zero", "math_shaped"}
    import math

    assert math.sqrt(4) == 2.0  # the stdlib math module is not shadowed by countdown_rl.tasks.math


# ----------------------------------------------------------------------------------------------------------------
# Properties: any text -> a documented value, no exception, bounded time
# ----------------------------------------------------------------------------------------------------------------

FRAGMENTS = ["\\boxed{", "\\boxed", "\\fbox{", "{", "}", "\\{", "\\}", "<answer>", "</answer>", "</think>", "<think>",
             "\\frac{", "^{", "^", "!", "(", ")", "[", "]", "$", "\\", " ", "\n", "-", ".", ",", "1", "5", "36",
             "9999999", "x", "=", "\\sqrt{", "\\left(", "\\right)", "٣", "５", "é", "\\text{", "\\infty", "\\cup"]
TEXTS = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=5), max_size=40).map("".join)
GOLDS = st.sampled_from(["36", r"\frac{5}{2}", "(1,2]", r"\{1,2\}", "x^2+1", r"\text{(C)}"])
# A small deadline keeps the property tests fast; the values must not depend on it.
R1 = functools.partial(math_r1_zero_reward, timeout_seconds=0.3)
SHAPED = functools.partial(math_shaped_reward, timeout_seconds=0.3)
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(text=TEXTS, gold=GOLDS)
def test_any_text_gets_a_documented_value(text, gold):
    assert R1([text], gold=[gold]) in ([0.0], [1.0])
    assert SHAPED([text], gold=[gold]) in ([0.0], [0.1], [0.2], [1.1])
    verdict = MathTask(["timeout_seconds=0.3"]).judge(text, {"problem": "p", "gold": gold})
    assert verdict.reward in (0.0, 1.0)
    assert (verdict.outcome is Outcome.FAILED) == (extract(text).source == "none")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(head=TEXTS, tail=TEXTS, filler=st.sampled_from(["x", "{", "(", " ", "9", "\\boxed", "</think>", "é"]))
def test_100kb_completions_are_scored_in_bounded_time(head, tail, filler):
    text = head + filler * (BIG // len(filler)) + tail
    start = time.perf_counter()
    assert R1([text], gold=["36"]) in ([0.0], [1.0])
    assert SHAPED([text], gold=["36"]) in ([0.0], [0.1], [0.2], [1.1])
    # Generous: about 50 ms on an idle core; the deadline (0.3 s) bounds the math-verify part of each call.
    assert time.perf_counter() - start < 5.0
