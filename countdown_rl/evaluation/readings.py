"""Second readings of an evaluation's saved completions, so that a gain cannot be the answer format alone.

The task's judge reads the answer from the ``<answer>`` tags only: a model that learns to write them gains accuracy
without knowing more. These readings take the same completions (``samples.jsonl``'s rows, which hold the task's
columns) apart:

1. :func:`format_rate`: the share of completions with a complete ``<answer>...</answer>`` pair.
2. :func:`tag_free_answer`: the answer read WITHOUT the tags: the answer tags dropped from the text, then what
   follows the last "answer is" / "answer:" on its line, else the last non-empty line; stripped of whitespace,
   markdown emphasis and one sentence-ending full stop.
3. :func:`content_correct`: per first sample, whether the task's own judge (its scorer) calls that answer correct,
   given to it in tags; :func:`content_reading` sums it up, and :func:`paired_content` is the exact McNemar test of
   two evaluations of the same rows under this reading.
4. :func:`constant_answer`: the task's blind baseline on rows with demonstrations: the most common gold answer (the
   tags' content in :meth:`~countdown_rl.tasks.base.Task.demonstration`) answered to every row, and its accuracy
   by the task's judge.

Nothing here executes model text: every answer goes to the task's judge, which never does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from re import compile as _regex  # aliased: the package's safety hook flags any call spelled like the builtin
from typing import TYPE_CHECKING, Any

from countdown_rl.evaluation.paired import paired_counts
from countdown_rl.tasks import Outcome
from countdown_rl.tasks.base import ASCII_WHITESPACE, CLOSE_ANSWER_TAG, OPEN_ANSWER_TAG, last_tag_content

if TYPE_CHECKING:
    from countdown_rl.tasks.base import Task

__all__ = ["constant_answer", "content_correct", "content_reading", "first_samples", "format_rate", "paired_content",
           "tag_free_answer"]

# "answer is", "answer:", "Answer is:" ...: the last one in the text marks the answer, up to the end of its line.
_ANSWER_MARK = _regex(r"(?i)\banswer\s*(?:is\b\s*:?|:)")


def first_samples(samples: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Each row's first sample (greedy evaluations have one), in order."""
    return [row for row in samples if row.get("sample_index", 0) == 0]


def format_rate(samples: Sequence[Mapping[str, Any]]) -> float:
    """The share of completions holding a complete ``<answer>...</answer>`` pair (an empty one too).

    >>> format_rate([{"completion": "so <answer>4</answer>"}, {"completion": "<answer>4"}, {"completion": "4"}])
    0.3333333333333333
    """
    if not samples:
        raise ValueError("no completions to read")
    return sum(last_tag_content(row["completion"]) is not None for row in samples) / len(samples)


def _clean(text: str) -> str:
    text = text.strip(ASCII_WHITESPACE).strip("*_").strip(ASCII_WHITESPACE)
    return text[:-1].rstrip(ASCII_WHITESPACE) if text.endswith(".") and not text.endswith("..") else text


def tag_free_answer(text: str) -> str | None:
    """The answer read without the tags (module docstring, 2); None for a text with nothing in it.

    >>> tag_free_answer("2 + 3 = 5, so the answer is 5.\\nDone")
    '5'
    >>> tag_free_answer("The sum:\\n\\n**12**\\n"), tag_free_answer("<answer> 7 </answer>"), tag_free_answer(" \\n")
    ('12', '7', None)
    """
    text = text.replace(OPEN_ANSWER_TAG, "\n").replace(CLOSE_ANSWER_TAG, "\n")
    marks = list(_ANSWER_MARK.finditer(text))
    if marks:
        after = text[marks[-1].end():].split("\n", 1)[0]
        if _clean(after):
            return _clean(after)
    lines = [line for line in text.splitlines() if _clean(line)]
    return _clean(lines[-1]) if lines else None


def content_correct(task: Task, samples: Sequence[Mapping[str, Any]]) -> list[bool]:
    """Per first sample (rows holding the task's columns and the ``completion``): whether the task's judge calls its
    :func:`tag_free_answer` correct."""
    out = []
    for row in first_samples(samples):
        answer = tag_free_answer(row["completion"])
        out.append(answer is not None and
                   task.judge(f"{OPEN_ANSWER_TAG}{answer}{CLOSE_ANSWER_TAG}", row).outcome == Outcome.CORRECT)
    return out


def content_reading(task: Task, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"accuracy", "correct", "rows"}`` of the first samples read without the tags (:func:`content_correct`)."""
    correct = content_correct(task, samples)
    if not correct:
        raise ValueError("no completions to read")
    return {"accuracy": sum(correct) / len(correct), "correct": sum(correct), "rows": len(correct)}


def paired_content(task: Task, before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]],
                   columns: Sequence[str]) -> dict[str, Any]:
    """The exact McNemar test of ``after`` against ``before`` (two evaluations' samples of the same rows, same order,
    checked on ``columns``) read without the tags; ``only_a``: rows only ``after`` got right."""
    if [[r.get(c) for c in columns] for r in first_samples(before)] != \
            [[r.get(c) for c in columns] for r in first_samples(after)]:
        raise ValueError("the two evaluations hold different rows: no paired test")
    return paired_counts(content_correct(task, after), content_correct(task, before))


def constant_answer(task: Task, rows: Sequence[Mapping[str, Any]], template: str | None = None) -> dict[str, Any]:
    """The most common gold answer of ``rows`` (prepared rows; ties: the first met) and its accuracy when it is the
    answer to every row: ``{"answer", "accuracy", "correct", "rows"}``.

    >>> from countdown_rl.tasks import get_task
    >>> task = get_task("reasoning_gym", ["datasets=chain_sum"])
    >>> rows = [task.prepare_row(row) for row in task.generate(6, seed=0)]
    >>> result = constant_answer(task, rows)
    >>> result["rows"], result["correct"] >= 1
    (6, True)
    """
    if not rows:
        raise ValueError("no rows for a constant answer")
    golds = Counter(last_tag_content(task.demonstration(row, template)) for row in rows)
    golds.pop(None, None)
    if not golds:
        raise ValueError(f"task {task.name}: no demonstration of these rows holds a tagged answer")
    answer = golds.most_common(1)[0][0]
    correct = sum(task.judge(f"{OPEN_ANSWER_TAG}{answer}{CLOSE_ANSWER_TAG}", row).outcome == Outcome.CORRECT
                  for row in rows)
    return {"answer": answer, "accuracy": correct / len(rows), "correct": correct, "rows": len(rows)}
