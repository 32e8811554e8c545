"""Second readings of saved completions: the answer format's rate, the answer read without the tags and scored by
the task's own judge, the paired test under that reading, and the most common gold answer as a blind baseline.
Hand-written completions on format_copy rows (the gold is the row's number) and on reasoning-gym rows."""

import doctest

import pytest

from countdown_rl.evaluation import readings
from countdown_rl.evaluation.readings import (
    constant_answer,
    content_correct,
    content_reading,
    format_rate,
    paired_content,
    tag_free_answer,
)
from countdown_rl.evaluation.scoring import score_samples
from countdown_rl.generation.sampling import Completion
from countdown_rl.tasks import get_task

COPY = get_task("format_copy")


def _samples(task, rows, texts):
    """The rows of samples.jsonl for one completion a row, as the evaluation writes them."""
    return score_samples(rows, ["prompt"] * len(rows), [[Completion(text, 4, False)] for text in texts], task=task)


@pytest.mark.parametrize(("text", "answer"), [
    ("<answer>4821</answer>", "4821"),
    ("I copy it. The answer is 4821.", "4821"),
    ("The Answer is: **4821**\nthat is all", "4821"),
    ("Answer: 4821", "4821"),
    ("first 12\nthen\n\n4821\n", "4821"),
    ("<answer>\n4821\n</answer>\n", "4821"),
    ("the answer is\n4821", "4821"),  # nothing after the marker on its line: the last line
    ("", None),
])
def test_the_answer_without_the_tags(text, answer):
    assert tag_free_answer(text) == answer


def test_format_and_content_readings_tell_the_format_from_the_answer():
    rows = [{"number": n} for n in (4821, 17, 305, 9)]
    texts = ["<answer>4821</answer>",           # tags, right
             "the answer is 17",                 # no tags, right
             "<answer>305",                      # an open tag only, right
             "<answer>8</answer>"]               # tags, wrong
    samples = _samples(COPY, rows, texts)
    assert [s["outcome"] for s in samples] == ["correct", "failed", "failed", "partial"]  # the strict reading
    assert format_rate(samples) == 0.5
    assert content_correct(COPY, samples) == [True, True, True, False]
    assert content_reading(COPY, samples) == {"accuracy": 0.75, "correct": 3, "rows": 4}


def test_the_content_reading_uses_the_tasks_own_scorer():
    task = get_task("reasoning_gym", ["datasets=chain_sum"])
    rows = [task.prepare_row(row) for row in task.generate(3, seed=1)]
    golds = [row["answer"] for row in rows]
    texts = [f"Adding up, the answer is {golds[0]}.", f"<answer>{golds[1]}</answer>", f"{int(golds[2]) + 1}"]
    samples = _samples(task, rows, texts)
    assert [s["outcome"] for s in samples] == ["failed", "correct", "failed"]  # no tags: no answer
    assert content_correct(task, samples) == [True, True, False] and format_rate(samples) == pytest.approx(1 / 3)


def test_the_paired_test_counts_rows_only_one_reading_got_right():
    rows = [{"number": n} for n in (1, 2, 3, 4, 5)]
    before = _samples(COPY, rows, ["1", "x", "x", "x", "5"])
    after = _samples(COPY, rows, ["<answer>1</answer>", "answer is 2", "3", "x", "x"])
    assert paired_content(COPY, before, after, COPY.columns) == {"only_a": 2, "only_b": 1, "rows": 5, "p_value": 1.0}
    with pytest.raises(ValueError, match="different rows"):
        paired_content(COPY, before, _samples(COPY, rows[::-1], ["x"] * 5), COPY.columns)


def test_the_constant_answer_is_the_most_common_gold_scored_by_the_judge():
    rows = [{"number": n} for n in (7, 3, 7, 5, 7, 3)]
    assert constant_answer(COPY, rows) == {"answer": "7", "accuracy": 0.5, "correct": 3, "rows": 6}
    assert constant_answer(COPY, rows[1:2] + rows[3:4])["answer"] == "3"  # a tie: the first met


def test_the_examples_in_the_docstrings_hold():
    assert doctest.testmod(readings).failed == 0
