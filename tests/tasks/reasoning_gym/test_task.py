"""ReasoningGymTask (countdown_rl.tasks.reasoning_gym): the registry, options, rows, splits, loading, judging."""

from __future__ import annotations

import time

import pytest

from countdown_rl.data.loading import load_rows
from countdown_rl.data.splits import split_rows
from countdown_rl.tasks import get_task
from countdown_rl.tasks.base import Outcome, Verdict
from countdown_rl.tasks.reasoning_gym import DEFAULT_TIMEOUT_SECONDS, ReasoningGymTask, problems

reasoning_gym = pytest.importorskip("reasoning_gym")

# One-digit sums of two terms: few distinct questions, so a pool of rows repeats some.
TINY = 'config={"chain_sum": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}}'


def test_registry_and_facts():
    task = get_task("reasoning_gym")
    assert isinstance(task, ReasoningGymTask) and task.name == "reasoning_gym"
    assert task.columns == ("question", "source") and task.default_dataset == "generated"
    assert task.default_template == "chat" and task.default_reward_funcs == ("reasoning_gym",)
    options = task.options
    assert (options.datasets, options.config, options.levels, options.timeout_seconds) == (
        "chain_sum", "", "", DEFAULT_TIMEOUT_SECONDS)
    assert [(s.name, s.weight) for s in options.specs] == [("chain_sum", 1.0)]


def test_options_from_a_mapping_and_from_key_value_text():
    as_text = get_task("reasoning_gym", ["datasets=chain_sum:2,lcm:1", 'config={"lcm": {"max_value": 20}}',
                                         "timeout_seconds=0.5"]).options
    as_mapping = get_task("reasoning_gym", {"datasets": "chain_sum:2,lcm:1", "config": {"lcm": {"max_value": 20}},
                                            "timeout_seconds": 0.5}).options
    assert as_text == as_mapping and as_text.config == '{"lcm": {"max_value": 20}}'
    assert [(s.name, s.weight, dict(s.config)) for s in as_text.specs] == [
        ("chain_sum", 2.0, {}), ("lcm", 1.0, {"max_value": 20})]
    with pytest.raises(ValueError) as err:
        get_task("reasoning_gym", ["dataset=chain_sum"])
    assert "unknown reasoning_gym option 'dataset'" in str(err.value) and "\n" not in str(err.value)


def test_rows_dedupe_key_and_difficulty():
    task = get_task("reasoning_gym")
    row = task.generate(1, seed=0)[0]
    assert task.prepare_row(row) == row and task.row_problem(row) is None
    assert task.dedupe_key({"question": " What  is\n1 + 2? "}) == task.dedupe_key({"question": "What is 1 + 2?"})
    assert task.dedupe_key({"question": "1 + 2"}) != task.dedupe_key({"question": "1 + 3"})
    assert task.difficulty({"answer": "12345"}) == 5.0 and task.difficulty({"answer": None}) == 0.0


def test_splits_are_disjoint_by_question():
    task = get_task("reasoning_gym", [TINY])
    rows = task.generate(300, seed=0)
    assert len({task.dedupe_key(r) for r in rows}) < 300  # the pool repeats questions: the split must dedupe
    train, test, removed = split_rows(task, rows, test_size=40, seed=1)
    assert len(test) == 40 and removed == 300 - len({task.dedupe_key(r) for r in rows})
    assert len(train) + len(test) + removed == 300
    assert not {r["question"] for r in train} & {r["question"] for r in test}
    with pytest.raises(ValueError) as err:
        split_rows(task, rows, test_size=300)
    message = str(err.value)
    assert "test_size=300 must leave 0 <= test rows <" in message and "\n" not in message


def test_demonstration_scores_1_and_judging():
    task = get_task("reasoning_gym", ["datasets=chain_sum:1,lcm:1,spiral_matrix:1"])
    rows = [task.prepare_row(r) for r in task.generate(9, seed=4)]
    for row in rows:
        demonstration = task.demonstration(row)
        assert demonstration == f"<answer>{row['answer']}</answer>"
        assert task.judge(demonstration, row) == Verdict(Outcome.CORRECT, row["answer"].strip(), 1.0)
        assert task.judge("I am not sure.", row) == Verdict(Outcome.FAILED, None, 0.0)
    with pytest.raises(ValueError, match="row has no reference answer"):
        task.demonstration({**rows[0], "answer": None})


def test_a_non_default_timeout_binds_into_the_reward_and_the_judge(monkeypatch):
    # reasoning-gym's dataset objects (the library's, at its boundary) with a scorer that never returns.
    real_create = reasoning_gym.create_dataset

    def create(name, **kwargs):
        dataset = real_create(name, **kwargs)
        dataset.score_answer = lambda answer, entry: [0 for _ in iter(int, 1)]  # an endless loop
        return dataset

    problems._dataset.cache_clear()
    problems._entry.cache_clear()
    monkeypatch.setattr(reasoning_gym, "create_dataset", create)
    try:
        task = get_task("reasoning_gym", ["timeout_seconds=0.2"])
        row = task.generate(1, seed=31)[0]
        reward, = task.get_reward_funcs(["reasoning_gym"])
        logged = []
        start = time.perf_counter()
        assert reward(["<answer>1</answer>"], question=[row["question"]], source=[row["source"]],
                      log_metric=lambda name, value: logged.append((name, value))) == [0.0]
        assert ("reasoning_gym/timeouts", 1) in logged
        assert task.judge("<answer>1</answer>", row) == Verdict(Outcome.PARTIAL, "1", 0.0)
        # Two deadlines of 0.2 s, not of the default 2 s.
        assert time.perf_counter() - start < 2 * 0.2 + 1.0 < DEFAULT_TIMEOUT_SECONDS
    finally:
        problems._dataset.cache_clear()
        problems._entry.cache_clear()


def test_loading_generated_rows():
    task = get_task("reasoning_gym", ["datasets=chain_sum:1,lcm:1"])
    rows, raw, dropped, source = load_rows(task, "generated", num_generated=30, seed=9)
    assert (raw, dropped) == (30, 0) and "reasoning_gym" in source and "seed 9" in source
    assert rows == [task.prepare_row(r) for r in task.generate(30, seed=9)]
    assert load_rows(task, "generated", num_generated=30, seed=9)[0] == rows
    assert load_rows(task, "generated", num_generated=30, seed=10)[0] != rows
    with pytest.raises(ValueError) as err:
        split_rows(task, rows, test_size=len(rows))  # nothing would be left to train on
    assert "must leave 0 <= test rows" in str(err.value) and "\n" not in str(err.value)
