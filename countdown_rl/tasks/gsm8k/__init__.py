"""The GSM8K task: grade-school math word problems whose answer is one number (``openai/gsm8k``, config ``main``).

A completion is judged in four steps (:mod:`.verifier`): the gold number after ``####`` in the worked solution
(:meth:`GSM8KTask.prepare_row` stores it, normalised, as ``gold``); the answer candidate of the first method of
the ``answer_order`` option that finds one (default ``tags,boxed,answer_is``); its exact value; the comparison
(CORRECT 1.0, PARTIAL 0.0, FAILED 0.0: the binary reward of the GSM8K write-up).

Why the default order leaves ``last_number`` out: the GSM8K write-up's reward was near zero at the start and rose as the
model "learned the required output format" (an explicit final answer, not any number), and its base model kept
writing unrelated questions after the solution, whose numbers a last-number fallback would read as the answer.
``answer_order=tags,boxed,answer_is,last_number`` turns the fallback on.

Modules: :mod:`.verifier` (gold, extraction, judging), :mod:`.rewards` (``gsm8k``, ``gsm8k_format``),
:mod:`.prompts` (``chat``, ``r1_zero``), :mod:`.problems` (offline word problems). The names most callers need
are re-exported here.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from countdown_rl.tasks.base import (
    ASCII_WHITESPACE,
    RewardFunc,
    Task,
    Verdict,
    bind_options,
    completion_text,
    missing_column,
    short_repr,
)
from countdown_rl.tasks.extraction import (
    MAX_BOXED_SCAN,
    MAX_CANDIDATE_CHARS,
    MAX_NUMBER_DIGITS,
    canonical_number_text,
    parse_number,
)
from countdown_rl.tasks.gsm8k.problems import generate_gsm8k
from countdown_rl.tasks.gsm8k.prompts import PROMPT_TEMPLATES
from countdown_rl.tasks.gsm8k.rewards import (
    MALFORMED_ROWS_METRIC,
    REWARD_FUNCS,
    TAG_FORMAT_REWARD,
    gsm8k_format_reward,
    gsm8k_reward,
)
from countdown_rl.tasks.gsm8k.verifier import (
    ANSWER_METHODS,
    CORRECT_REWARD,
    DEFAULT_ANSWER_ORDER,
    SOLUTION_MARK,
    Extracted,
    check_answer_order,
    extract_answer,
    gold_from_solution,
    gold_problem,
    gold_value,
    has_answer_tags,
    judge_completion,
    read_answer_is,
)

__all__ = [
    "ANSWER_METHODS",
    "CORRECT_REWARD",
    "DATASET",
    "DEFAULT_ANSWER_ORDER",
    "MALFORMED_ROWS_METRIC",
    "MAX_BOXED_SCAN",
    "MAX_CANDIDATE_CHARS",
    "MAX_NUMBER_DIGITS",
    "PROMPT_TEMPLATES",
    "REWARD_FUNCS",
    "TAG_FORMAT_REWARD",
    "Extracted",
    "GSM8KOptions",
    "GSM8KTask",
    "canonical_number_text",
    "completion_text",
    "extract_answer",
    "generate_gsm8k",
    "gold_from_solution",
    "gsm8k_format_reward",
    "gsm8k_reward",
    "has_answer_tags",
    "judge_completion",
    "parse_number",
    "read_answer_is",
]

DATASET = "openai/gsm8k"


@dataclass(frozen=True)
class GSM8KOptions:
    """Options of the GSM8K task (recipe ``task_options: [answer_order=tags,boxed]``)."""

    answer_order: tuple[str, ...] = field(
        default=DEFAULT_ANSWER_ORDER,
        metadata={"help": f"Answer extraction methods, tried in order; from {', '.join(ANSWER_METHODS)}."},
    )

    def __post_init__(self):
        if isinstance(self.answer_order, str):  # a mapping given "tags,boxed" unconverted
            parts = tuple(p.strip() for p in self.answer_order.split(",") if p.strip())
            object.__setattr__(self, "answer_order", parts)
        object.__setattr__(self, "answer_order", check_answer_order(self.answer_order))


class GSM8KTask(Task):
    """GSM8K behind the task interface.

    >>> task = GSM8KTask()
    >>> row = task.prepare_row({"question": "Q?", "answer": "48/2 = <<48/2=24>>24\\n#### 72"})
    >>> row["gold"], task.judge("... so <answer>72</answer>", row).outcome.value
    ('72', 'correct')
    >>> GSM8KTask(["answer_order=last_number"]).judge("48 + 24 = 72", row).reward
    1.0
    """

    name = "gsm8k"
    description = "grade-school math word problems with a numeric answer (GSM8K)"
    columns = ("question", "gold")
    default_dataset = DATASET
    known_datasets = {DATASET: {"config": "main", "train_split": "train", "test_split": "test"}}
    prompt_templates = PROMPT_TEMPLATES
    default_template = "chat"
    default_reward_funcs = ("gsm8k",)
    Options = GSM8KOptions

    def prepare_row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """Add ``gold`` (canonical text, :func:`canonical_number_text`) from ``answer``; a row that has one keeps it.

        A ``None`` answer gives ``gold`` None for :meth:`row_problem` to name, instead of raising: the loader
        probes the source's columns with all-None values and must still see a ``gold``.
        """
        prepared = dict(row)
        gold = row.get("gold")
        if gold is not None:  # already prepared: a saved split, or a file written in the task's own columns
            value = gold_value(gold)
            if value is None:
                raise ValueError(f"'gold' is {short_repr(gold)}, expected a number")
            prepared["gold"] = canonical_number_text(value)
            return prepared
        if "answer" not in row:
            raise ValueError("'answer' is missing (a worked solution ending with '#### <number>'), and so is 'gold'")
        prepared["gold"] = None if row["answer"] is None else gold_from_solution(row["answer"])
        return prepared

    def row_problem(self, row: Mapping[str, Any]) -> str | None:
        """Why a prepared row cannot be used: ``question`` non-empty text, ``gold`` a number.

        >>> GSM8KTask().row_problem({"question": "Q?", "gold": "abc"})
        "'gold' is 'abc', expected a number"
        """
        missing = missing_column(row, self.columns)
        if missing is not None:
            return missing
        question = row["question"]
        if not isinstance(question, str) or not question.strip(ASCII_WHITESPACE):
            return f"'question' is {short_repr(question)}, expected non-empty text"
        if row["gold"] is None and "answer" in row:
            return f"'answer' is {short_repr(row['answer'])}, expected a worked solution ending with '#### <number>'"
        return gold_problem(row["gold"])

    def dedupe_key(self, row: Mapping[str, Any]) -> Hashable:
        """The question with its whitespace normalised."""
        return " ".join(str(row["question"]).split())

    def difficulty(self, row: Mapping[str, Any]) -> float:
        """Solution steps: the non-empty lines of the worked solution before ``####`` (GSM8K writes one step a
        line; not every step has a calculator annotation). 0.0 for a row without ``answer``.

        >>> GSM8KTask().difficulty({"answer": "a <<1+1=2>>2\\nb <<2*3=6>>6\\n#### 6"})
        2.0
        """
        solution = row.get("answer")
        if not isinstance(solution, str):
            return 0.0
        mark = solution.rfind(SOLUTION_MARK)
        body = solution if mark < 0 else solution[:mark]
        return float(sum(1 for line in body.splitlines() if line.strip(ASCII_WHITESPACE)))

    def judge(self, text: str, row: Mapping[str, Any]) -> Verdict:
        return judge_completion(text, row["gold"], self.options.answer_order)

    def reward_funcs(self) -> Mapping[str, RewardFunc]:
        order = self.options.answer_order
        if order == DEFAULT_ANSWER_ORDER:
            return dict(REWARD_FUNCS)
        return bind_options(REWARD_FUNCS, answer_order=order)

    def generate(self, n: int, seed: int = 0) -> list[dict[str, Any]]:
        return generate_gsm8k(n, seed=seed)
