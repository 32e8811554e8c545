"""The format-copy task (the GR-REINFORCE study's): copy the integer in the prompt into ``<answer></answer>`` tags.

A task small enough for a tiny model on a CPU, to debug the training loop and study hyperparameters (the
GR-REINFORCE study swept KL, PPO epochs, clip range and accumulation on it). A completion is judged by
:mod:`.verifier` in three steps: extract the last complete ``<answer>`` pair (none -> FAILED), read an integer of at
most ``MAX_DIGITS`` ASCII digits, compare it with the row's ``number`` (CORRECT, else PARTIAL) and sum the reward:
+1.0 correct, +0.2 a complete pair, +0.1 strict XML (one pair and nothing else), so at most 1.3.

Rows are generated (``default_dataset = "generated"``, :mod:`.problems`): ``{"number": int}``, distinct
numbers, with a digit count spread evenly over the ``min_digits``..``max_digits`` options.

Modules: :mod:`.verifier`, :mod:`.rewards` (``format_copy``), :mod:`.prompts` (``plain``, ``chat``),
:mod:`.problems`. The names most callers need are re-exported here.
"""

from __future__ import annotations

import operator
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from countdown_rl.tasks.base import RewardFunc, Task, Verdict, missing_column
from countdown_rl.tasks.format_copy.problems import generate_numbers
from countdown_rl.tasks.format_copy.prompts import PROMPT_TEMPLATES
from countdown_rl.tasks.format_copy.rewards import MALFORMED_ROWS_METRIC, REWARD_FUNCS, format_copy_reward
from countdown_rl.tasks.format_copy.verifier import (
    CORRECT_REWARD,
    MAX_DIGITS,
    MAX_REWARD,
    REWARD_VALUES,
    STRICT_REWARD,
    TAG_REWARD,
    extract_answer,
    is_strict,
    judge_completion,
    number_problem,
    parse_integer,
)

__all__ = [
    "CORRECT_REWARD",
    "MALFORMED_ROWS_METRIC",
    "MAX_DIGITS",
    "MAX_REWARD",
    "PROMPT_TEMPLATES",
    "REWARD_FUNCS",
    "REWARD_VALUES",
    "STRICT_REWARD",
    "TAG_REWARD",
    "FormatCopyOptions",
    "FormatCopyTask",
    "extract_answer",
    "format_copy_reward",
    "generate_numbers",
    "is_strict",
    "judge_completion",
    "number_problem",
    "parse_integer",
]


@dataclass(frozen=True)
class FormatCopyOptions:
    """Options of the format-copy task (recipe ``task_options: [min_digits=2, max_digits=6]``)."""

    min_digits: int = field(default=1, metadata={"help": "Fewest digits of a generated number."})
    max_digits: int = field(default=4, metadata={"help": f"Most digits of a generated number (<= {MAX_DIGITS})."})

    def __post_init__(self):
        if not 1 <= self.min_digits <= MAX_DIGITS:
            raise ValueError(f"min_digits={self.min_digits}: expected 1 to {MAX_DIGITS}")
        if not self.min_digits <= self.max_digits <= MAX_DIGITS:
            raise ValueError(f"max_digits={self.max_digits}: expected min_digits ({self.min_digits}) to {MAX_DIGITS}")


class FormatCopyTask(Task):
    """Format copy behind the task interface.

    >>> task = FormatCopyTask()
    >>> task.judge("<answer>4821</answer>", {"number": 4821}).reward, task.difficulty({"number": 4821})
    (1.3, 4.0)
    >>> task.prompt({"number": 4821}, "plain").endswith("Number: 4821\\n")
    True
    """

    name = "format_copy"
    description = "copy the integer in the prompt into <answer></answer> tags (a toy task for debugging)"
    columns = ("number",)
    default_dataset = "generated"
    prompt_templates = PROMPT_TEMPLATES
    default_template = "plain"
    default_reward_funcs = ("format_copy",)
    Options = FormatCopyOptions

    def row_problem(self, row: Mapping[str, Any]) -> str | None:
        """Why a row cannot be used: ``number`` must be an integer of at most ``MAX_DIGITS`` digits.

        >>> FormatCopyTask().row_problem({"number": "12"})
        "'number' is '12', expected an integer of at most 18 digits"
        """
        return missing_column(row, self.columns) or number_problem(row["number"])

    def dedupe_key(self, row: Mapping[str, Any]) -> Hashable:
        return operator.index(row["number"])

    def difficulty(self, row: Mapping[str, Any]) -> float:
        """The number of digits (a minus sign does not count)."""
        return float(len(str(abs(operator.index(row["number"])))))

    def judge(self, text: str, row: Mapping[str, Any]) -> Verdict:
        return judge_completion(text, operator.index(row["number"]))

    def reward_funcs(self) -> Mapping[str, RewardFunc]:
        return dict(REWARD_FUNCS)  # the options only shape generated data

    def demonstration(self, row: Mapping[str, Any], template: str | None = None) -> str:
        """The full-reward completion: the number in tags and nothing else (after any template)."""
        return f"<answer>{operator.index(row['number'])}</answer>"

    def generate(self, n: int, seed: int = 0) -> list[dict[str, Any]]:
        return generate_numbers(n, seed=seed, min_digits=self.options.min_digits, max_digits=self.options.max_digits)
