"""The reasoning-gym verifier (countdown_rl.tasks.reasoning_gym.verifier): extraction, the screens in front of the
scorers that evaluate text, and reasoning-gym's scorer under a deadline."""

from __future__ import annotations

import json
import math
import time

import pytest

from countdown_rl.tasks.base import Outcome, Verdict
from countdown_rl.tasks.reasoning_gym import problems
from countdown_rl.tasks.reasoning_gym.problems import check_datasets, generate_rows, source_entry
from countdown_rl.tasks.reasoning_gym.verifier import (
    ERROR,
    EVALUATING_SCORERS,
    MAX_ANSWER_CHARS,
    OWN_CHECKS,
    SCREENED,
    TIMEOUT,
    Score,
    extract_answer,
    judge_completion,
    score_answer,
    screen_answer,
)

reasoning_gym = pytest.importorskip("reasoning_gym")


def rows_of(name: str, n: int = 2, seed: int = 0, config: dict | None = None) -> list[dict]:
    # allow_defective: the screens are tested on every evaluating scorer, puzzle24's gameable one included.
    return generate_rows(check_datasets(name, {name: config} if config else {}, {}, allow_defective=True), n, seed=seed)


# -------------------------------------------------------------------------------------------------- extraction


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer>12</answer>", "12"),
        ("so <answer>\n 12 \t</answer> done", "12"),
        ("<answer>1</answer> then <answer>2</answer>", "2"),  # the last pair wins
        ("<answer>1</answer> <answer>2", "1"),  # an unclosed trailing tag is no pair
        ("<answer>a\nb</answer>", "a\nb"),  # grids keep their lines
        ("<answer></answer>", None),  # an empty pair is no answer
        ("<answer> \n </answer>", None),
        ("<answer>1</answer><answer></answer>", None),  # the last pair is the one read, even empty
        ("12", None),
        ("<answer>12", None),
        ("<ANSWER>12</ANSWER>", None),
        ("", None),
        (None, None),
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


# ------------------------------------------------------------------------------------------------------ screens

SAFE = [
    ("countdown", "(65 - 7) - 7"),
    ("countdown", "6*(98 - 54) - 34 / 2"),
    ("puzzle24", "1*3*5 + 9"),
    ("binary_matrix", "[[0, 1], [1, 0]]"),
    ("binary_matrix", "0 1\n1 0"),
    ("n_queens", "[['Q', '_'], ['_', 'Q']]"),
    ("spiral_matrix", "[1, 2, 3, 4]"),
    ("string_insertion", "['A', 'B', 'C']"),
    ("polynomial_multiplication", "-417560*y**6 - 3*y**5 + 2*y"),
    ("simple_integration", "-5*X**9 - 2*X**6/3 + 4*X**3 + C"),
    ("intermediate_integration", "-exp(x)*sin(x) + exp(x)*cos(x) + C"),
    ("intermediate_integration", "x^2/2 + log(x) + C"),
    ("chain_sum", "anything at all: (x) __y__ ** 9"),  # a scorer that only compares text needs no screen
]


@pytest.mark.parametrize(("dataset", "answer"), SAFE)
def test_safe_answers_pass_the_screen(dataset, answer):
    assert screen_answer(dataset, answer)


@pytest.mark.parametrize("dataset", sorted(EVALUATING_SCORERS))
def test_reference_answers_pass_the_screen_and_score_1(dataset):
    for row in rows_of(dataset, 1, seed=3):
        assert screen_answer(dataset, row["answer"]), row["answer"]
        assert score_answer(row["answer"], row["source"]) == Score(1.0)


def test_a_long_reference_answer_scores_1():
    row = max(rows_of("palindrome_partitioning", 20, seed=1), key=lambda r: len(r["answer"]))
    assert len(row["answer"]) > MAX_ANSWER_CHARS  # the case at issue: reasoning-gym's own answer is this long
    assert score_answer(row["answer"], row["source"]) == Score(1.0)


# Texts that run code, or make an evaluating scorer run away, if they reach eval / parse_expr.
RUNS_CODE = [
    "__import__('os').system('x')",
    "().__class__",
    "[].__class__.__base__.__subclasses__()",
    "(9**99)**99",
    "9**9**9",
    "2**99999",
    "exec('1')",
    "open('f').read()",
    "lambda: 0",
    "getattr(x, 'y')",
    "[c for c in ().__class__.__bases__]",
    "[0 for a in 'xxxxxxxxxx' for b in 'xxxxxxxxxx']",  # a comprehension loops, with no call or attribute
    "pi.n(10**8)",  # an attribute call: 10**8 digits of pi
    "N(pi, 10**8)",  # a single letter that is sympy's N, called
    "1" * (MAX_ANSWER_CHARS + 1),
]


@pytest.mark.parametrize("dataset", sorted(EVALUATING_SCORERS))
def test_texts_that_run_code_are_refused_for_every_evaluating_scorer(dataset):
    assert [text for text in RUNS_CODE if screen_answer(dataset, text)] == []


@pytest.mark.parametrize(
    ("dataset", "text"),
    [
        ("countdown", "x + 1"),  # arithmetic: no names at all
        ("puzzle24", "1e9"),
        ("countdown", "3 ** 2"),
        ("n_queens", "[__builtins__]"),  # literals: no dunders
        ("binary_matrix", "[print]()"),
        ("polynomial_multiplication", "x + foo"),  # symbolic: longer names only sympy's functions
        ("simple_integration", "Symbol(x)"),
        ("intermediate_integration", "x.evalf()"),
        ("intermediate_integration", "sin(x)**999"),
        ("chain_sum", "9" * (MAX_ANSWER_CHARS + 1)),  # any dataset: an over-long answer is wrong unread
    ],
)
def test_names_powers_and_lengths_not_allowed(dataset, text):
    assert not screen_answer(dataset, text)


# ------------------------------------------------------------------------------------------------- the scorer


class RecordingScorer:
    """reasoning-gym's dataset objects (the library's, at its boundary) with ``score_answer`` recording each call and
    doing what the test sets (by default, the real scorer)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.behaviour = None

    def install(self, monkeypatch) -> None:
        real_create = reasoning_gym.create_dataset

        def create(name, **kwargs):
            dataset = real_create(name, **kwargs)
            real_score = dataset.score_answer

            def score(answer, entry):
                self.calls.append(answer)
                return (self.behaviour or real_score)(answer, entry)

            dataset.score_answer = score
            return dataset

        monkeypatch.setattr(reasoning_gym, "create_dataset", create)


def clear_caches() -> None:
    # The task caches datasets and entries per process; these tests need their own, made while patched.
    problems._dataset.cache_clear()
    problems._entry.cache_clear()


@pytest.fixture
def scorer(monkeypatch):
    recorder = RecordingScorer()
    clear_caches()
    recorder.install(monkeypatch)
    yield recorder
    clear_caches()


@pytest.mark.parametrize(
    ("dataset", "safe", "unsafe"),
    [
        ("countdown", "1 + 2", "__import__('os').system('x')"),
        ("n_queens", "[['Q']]", "().__class__"),
        ("simple_integration", "x**2 + C", "(9**99)**99"),
        ("chain_sum", "3", "3" * (MAX_ANSWER_CHARS + 1)),
    ],
)
def test_a_screened_answer_scores_0_without_calling_the_scorer(scorer, dataset, safe, unsafe):
    source = rows_of(dataset, 1, seed=11)[0]["source"]
    assert score_answer(unsafe, source) == Score(0.0, SCREENED)
    verdict, result = judge_completion(f"<answer>{unsafe}</answer>", source)
    assert result == Score(0.0, SCREENED) and verdict.outcome is Outcome.PARTIAL and verdict.reward == 0.0
    assert scorer.calls == []  # never reached reasoning-gym
    assert score_answer(safe, source).failure is None
    assert scorer.calls == [safe]  # a safe answer does


def test_no_answer_fails_without_calling_the_scorer(scorer):
    source = rows_of("chain_sum", 1, seed=11)[0]["source"]
    for text in ("-4", "<answer></answer>", "<answer>-4", ""):
        assert judge_completion(text, source) == (Verdict(Outcome.FAILED, None, 0.0), None)
    assert scorer.calls == []


def test_a_scorer_that_raises_scores_0_as_an_error(scorer):
    def raises(answer, entry):
        raise KeyError("metadata")

    scorer.behaviour = raises
    source = rows_of("chain_sum", 1, seed=11)[0]["source"]
    assert score_answer("3", source) == Score(0.0, ERROR) and scorer.calls == ["3"]
    verdict, result = judge_completion("<answer>3</answer>", source)
    assert verdict == Verdict(Outcome.PARTIAL, "3", 0.0) and result == Score(0.0, ERROR)


def test_a_scorer_that_hangs_scores_0_as_a_timeout_within_the_deadline(scorer):
    def hangs(answer, entry):
        while True:
            pass

    scorer.behaviour = hangs
    source = rows_of("chain_sum", 1, seed=11)[0]["source"]
    start = time.perf_counter()
    assert score_answer("3", source, timeout_seconds=0.2) == Score(0.0, TIMEOUT)
    assert time.perf_counter() - start < 0.2 + 1.0  # the deadline, plus slack for a loaded machine
    # The next call, with the real scorer back, is unaffected by the stopped one.
    scorer.behaviour = None
    row = rows_of("chain_sum", 1, seed=11)[0]
    assert score_answer(row["answer"], row["source"], timeout_seconds=0.2) == Score(1.0)


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        (math.nan, Score(0.0, ERROR)),
        (math.inf, Score(0.0, ERROR)),
        ("1.0", Score(0.0, ERROR)),
        (None, Score(0.0, ERROR)),
        (True, Score(0.0, ERROR)),  # a bool is no score
        ([1.0], Score(0.0, ERROR)),
        (1.5, Score(1.0)),  # clamped into [0, 1]
        (-2, Score(0.0)),
        (0.25, Score(0.25)),
        (1, Score(1.0)),
    ],
)
def test_scorer_values_are_checked_and_clamped(scorer, returned, expected):
    scorer.behaviour = lambda answer, entry: returned
    source = rows_of("chain_sum", 1, seed=11)[0]["source"]
    assert score_answer("3", source) == expected
    verdict, _ = judge_completion("<answer>3</answer>", source)
    assert verdict.reward == expected.value
    assert verdict.outcome is (Outcome.CORRECT if expected.value == 1.0 else Outcome.PARTIAL)


def test_real_scores_right_wrong_and_partial():
    row = rows_of("chain_sum", 1, seed=1)[0]
    assert judge_completion(f"reasoning <answer> {row['answer']} </answer>", row["source"]) == (
        Verdict(Outcome.CORRECT, row["answer"], 1.0), Score(1.0))
    wrong = str(int(row["answer"]) + 1)
    assert judge_completion(f"<answer>{wrong}</answer>", row["source"])[0] == Verdict(Outcome.PARTIAL, wrong, 0.0)
    # spiral_matrix gives 0.1 for the right numbers written as a Python list (its scorer evaluates the list).
    row = rows_of("spiral_matrix", 1, seed=1, config={"min_n": 2, "max_n": 2})[0]
    as_list = json.dumps([int(v) for v in row["answer"].split()])
    verdict, result = judge_completion(f"<answer>{as_list}</answer>", row["source"])
    assert verdict.outcome is Outcome.PARTIAL and result == Score(0.1)


def test_the_recorded_answer_is_clipped():
    row = rows_of("chain_sum", 1, seed=1)[0]
    verdict, result = judge_completion("<answer>" + "7" * 1000 + "</answer>", row["source"])
    assert len(verdict.answer) == 200 and verdict.answer.endswith("...") and result == Score(0.0)


@pytest.mark.parametrize(
    ("dataset", "text"),
    [
        # A loop of 10**10 steps and 10**8 digits of pi: screened now; bounded by the deadline if a screen lets one by.
        ("string_insertion", "[0 " + " ".join(f"for {v} in 'xxxxxxxxxx'" for v in "abcdefghij") + "]"),
        ("simple_integration", "pi.n(10**8)"),
    ],
)
def test_runaway_answers_are_bounded(dataset, text):
    source = rows_of(dataset, 1, seed=2)[0]["source"]
    start = time.perf_counter()
    result = score_answer(text, source, timeout_seconds=0.2)
    assert result.value == 0.0 and result.failure in (TIMEOUT, SCREENED)
    assert time.perf_counter() - start < 0.2 + 1.5


@pytest.mark.parametrize(
    ("dataset", "gamed"),
    [
        ("game_of_life_halting", lambda row, other: "yes"),  # any non-empty text is "True" to bool()
        ("coin_flip", lambda row, other: "0."),  # a prefix of the probability
        ("puzzle24", lambda row, other: other["answer"]),  # another puzzle's solution: 24, but not these numbers
    ],
)
def test_answers_that_game_a_scorer_are_wrong_through_our_check(dataset, gamed):
    """reasoning-gym's own scorer gives these 1.0 (shown first: the check is what makes them wrong); through the task
    they score 0, and the reference still scores 1.0."""
    rows = rows_of(dataset, 4, seed=5)  # puzzle24's generator takes a tenth of a second a row
    row = rows[0]
    other = next(r for r in rows if sorted(r["answer"]) != sorted(row["answer"]))
    name, dataset_object, entry = source_entry(row["source"])
    answer = gamed(row, other)
    assert name == dataset and dataset_object.score_answer(answer, entry) == 1.0  # the scorer alone is gamed
    assert not OWN_CHECKS[dataset](answer, entry)
    assert score_answer(answer, row["source"]) == Score(0.0)
    assert score_answer(row["answer"], row["source"]) == Score(1.0)
