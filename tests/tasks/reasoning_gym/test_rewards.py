"""The reasoning-gym reward (countdown_rl.tasks.reasoning_gym.rewards) through TRL's call: scores, the None of a row
that cannot be scored, and the per-batch counts it logs."""

from __future__ import annotations

import json
import pickle

import pytest

from countdown_rl.tasks import get_task
from countdown_rl.tasks.reasoning_gym import problems
from countdown_rl.tasks.reasoning_gym.rewards import (
    FAILURE_METRICS,
    MALFORMED_ROWS_METRIC,
    REWARD_FUNCS,
    reasoning_gym_reward,
)
from countdown_rl.tasks.reasoning_gym.verifier import MAX_ANSWER_CHARS
from tests.helpers.trl_calls import trl_reward_call

reasoning_gym = pytest.importorskip("reasoning_gym")

TIMEOUTS, ERRORS, SCREENED = (FAILURE_METRICS[k] for k in ("timeout", "error", "screened"))


def trl_call(func, completions, rows, **extra):
    """``func`` called with every keyword TRL's GRPOTrainer passes, one row per completion."""
    columns = {c: [row[c] for row in rows] for c in ("question", "answer", "source")}
    return trl_reward_call(func, completions, columns, prompt="Q", completion_tokens=20, **extra)


def counts(calls):
    logged = dict(calls)
    assert len(logged) == len(calls)  # each metric logged once per batch
    return logged


@pytest.fixture(scope="module")
def rows():
    return get_task("reasoning_gym", ["datasets=chain_sum:1,n_queens:1"]).generate(8, seed=5)


def test_reference_in_tags_scores_1_and_no_tags_0(rows):
    completions = [f"I think... <answer>{row['answer']}</answer>" for row in rows]
    result, log = trl_call(reasoning_gym_reward, completions, rows)
    assert result == [1.0] * len(rows)
    assert counts(log.calls) == {MALFORMED_ROWS_METRIC: 0, TIMEOUTS: 0, ERRORS: 0, SCREENED: 0}  # zeros logged too
    result, _ = trl_call(reasoning_gym_reward, [row["answer"] for row in rows], rows)  # the answer, no tags
    assert result == [0.0] * len(rows)
    result, _ = trl_call(reasoning_gym_reward, ["<answer></answer>"] * len(rows), rows)
    assert result == [0.0] * len(rows)


def test_conversational_completions(rows):
    row = rows[0]
    completions = [[{"role": "assistant", "content": f"<answer>{row['answer']}</answer>"}],
                   [{"role": "assistant", "content": None}]]
    assert reasoning_gym_reward(completions, question=[row["question"]] * 2, source=[row["source"]] * 2) == [1.0, 0.0]


def test_screened_answers_are_counted(rows):
    queens = [row for row in rows if json.loads(row["source"])["dataset"] == "n_queens"][0]
    chain_sum = [row for row in rows if json.loads(row["source"])["dataset"] == "chain_sum"][0]
    completions = ["<answer>__import__('os').system('x')</answer>", "<answer>().__class__</answer>",
                   f"<answer>{'1' * (MAX_ANSWER_CHARS + 1)}</answer>", f"<answer>{queens['answer']}</answer>"]
    result, log = trl_call(reasoning_gym_reward, completions, [queens, queens, chain_sum, queens])
    assert result == [0.0, 0.0, 0.0, 1.0]
    assert counts(log.calls) == {MALFORMED_ROWS_METRIC: 0, TIMEOUTS: 0, ERRORS: 0, SCREENED: 3}


class Scorers:
    """reasoning-gym's dataset objects (the library's, at its boundary) with ``score_answer`` doing what the test
    sets per answer text."""

    def __init__(self, monkeypatch, behaviour):
        real_create = reasoning_gym.create_dataset

        def create(name, **kwargs):
            dataset = real_create(name, **kwargs)
            real_score = dataset.score_answer
            dataset.score_answer = lambda answer, entry: behaviour.get(answer, real_score)(answer, entry)
            return dataset

        monkeypatch.setattr(reasoning_gym, "create_dataset", create)


@pytest.fixture
def fresh_caches():
    # The task caches datasets and entries per process; a test that patches reasoning-gym needs its own.
    problems._dataset.cache_clear()
    problems._entry.cache_clear()
    yield
    problems._dataset.cache_clear()
    problems._entry.cache_clear()


def test_timeouts_and_scorer_errors_are_counted(monkeypatch, fresh_caches):
    def hangs(answer, entry):
        while True:
            pass

    def raises(answer, entry):
        raise ZeroDivisionError

    Scorers(monkeypatch, {"hang": hangs, "raise": raises, "nan": lambda a, e: float("nan")})
    rows = get_task("reasoning_gym").generate(5, seed=23)
    completions = ["<answer>hang</answer>", "<answer>raise</answer>", "<answer>nan</answer>", "<answer>raise</answer>",
                   f"<answer>{rows[4]['answer']}</answer>"]
    result, log = trl_call(reasoning_gym_reward, completions, rows, timeout_seconds=0.2)
    assert result == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert counts(log.calls) == {MALFORMED_ROWS_METRIC: 0, TIMEOUTS: 1, ERRORS: 3, SCREENED: 0}


def test_a_tampered_row_scores_none_and_is_counted(rows):
    good = rows[0]
    tampered_question = {**good, "question": rows[1]["question"]}
    tampered_source = {**good, "source": good["source"].replace('"index": 0', '"index": 1')}
    assert tampered_source["source"] != good["source"]
    broken = {**good, "source": "not json"}
    completion = f"<answer>{good['answer']}</answer>"
    result, log = trl_call(reasoning_gym_reward, [completion] * 4, [good, tampered_question, tampered_source, broken])
    assert result == [1.0, None, None, None]
    assert counts(log.calls)[MALFORMED_ROWS_METRIC] == 3


def test_batch_shape_errors(rows):
    row = rows[0]
    with pytest.raises(ValueError, match="mismatched batch lengths"):
        reasoning_gym_reward(["a", "b"], question=[row["question"]], source=[row["source"]] * 2)
    with pytest.raises(ValueError, match="mismatched batch lengths"):
        reasoning_gym_reward(["a"], question=[row["question"]] * 2, source=[row["source"]] * 2)
    with pytest.raises(ValueError, match="needs the dataset column 'source'"):
        reasoning_gym_reward(["a"], question=[row["question"]])


def test_reward_names_registry_and_options(rows):
    assert {name: func.__name__ for name, func in REWARD_FUNCS.items()} == {"reasoning_gym": "reasoning_gym_reward"}
    task = get_task("reasoning_gym")
    assert task.get_reward_funcs(["reasoning_gym"]) == [reasoning_gym_reward]  # the default timeout: the plain one
    with pytest.raises(ValueError, match="unknown reward 'countdown'"):
        task.get_reward_funcs(["countdown"])
    bound, = get_task("reasoning_gym", ["timeout_seconds=0.5"]).get_reward_funcs(["reasoning_gym"])
    assert bound is not reasoning_gym_reward and bound.__name__ == "reasoning_gym_reward"
    restored = pickle.loads(pickle.dumps(bound))
    row = rows[0]
    for func in (bound, restored):
        assert func([f"<answer>{row['answer']}</answer>"], question=[row["question"]], source=[row["source"]]) == [1.0]
