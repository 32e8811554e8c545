"""The format-copy task (seed 002's toy task): copy the integer in the prompt into ``<answer></answer>`` tags.

A task small enough for a tiny model on a CPU, to debug the training loop and study hyperparameters (seed 002
swept KL, PPO epochs, clip range and accumulation on it). A completion is judged in three steps:

1. Extract: the content of the LAST complete ``<answer>...</answer>`` pair (``str.rfind``, linear), stripped of
   ASCII whitespace. No complete pair -> outcome FAILED.
2. Parse: the content must be an integer written in ASCII digits (an optional leading ``-``; leading zeros
   allowed, ``0042`` is 42), at most ``MAX_DIGITS`` digits, checked before ``int()``; anything else is no
   integer. Integer == the row's ``number`` -> CORRECT, else PARTIAL.
3. Reward (``format_copy``, seed 002's, summed): +1.0 the integer in the last pair equals ``number``; +0.2 a
   complete ``<answer>`` pair is present; +0.1 strict XML: the completion, stripped of ASCII whitespace, is
   exactly one ``<answer>...</answer>`` pair with nothing before or after it. So the values are 0.0 (no pair),
   0.2 (pair, wrong, text around it), 0.3 (pair alone, wrong), 1.2 (correct, text around it) and the maximum
   1.3 (``<answer>4821</answer>`` and nothing else).

Rows are generated (``default_dataset = "generated"``): ``{"number": int}``, distinct numbers, with a digit
count spread evenly over the ``min_digits``..``max_digits`` options.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from countdown_rl.tasks.base import Outcome, PromptTemplate, RewardFunc, Task, Verdict, last_tag_content, score_batch

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
    "parse_integer",
]

CORRECT_REWARD = 1.0
"""Reward part for the correct integer inside the last ``<answer>`` pair."""
TAG_REWARD = 0.2
"""Reward part for a complete ``<answer>...</answer>`` pair."""
STRICT_REWARD = 0.1
"""Reward part for strict XML: one pair and nothing outside it (ASCII whitespace around it allowed)."""
MAX_REWARD = CORRECT_REWARD + TAG_REWARD + STRICT_REWARD
"""1.3: correct, tagged and strict."""
REWARD_VALUES = (0.0, 0.2, 0.3, 1.2, 1.3)
"""Every value ``format_copy`` can return for a valid row (the sums above, rounded as returned)."""

MAX_DIGITS = 18
"""Longest integer read from a tag (checked before ``int()``), and the most digits a row's number may have."""

MALFORMED_ROWS_METRIC = "format_copy/malformed_rows"
"""``log_metric`` name for the number of malformed ``number`` values in a batch."""

_OPEN_TAG, _CLOSE_TAG = "<answer>", "</answer>"
_ASCII_WS = " \t\n\r\f\v"  # str.strip() with no argument would also strip Unicode spaces
_ASCII_DIGITS = frozenset("0123456789")  # str.isdigit() also accepts Unicode digits such as U+0663


# --------------------------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------------------------


def extract_answer(text: Any) -> str | None:
    """Content of the last complete ``<answer>...</answer>`` pair, stripped of ASCII whitespace, else None.

    >>> extract_answer("<answer>12</answer> <answer> 4821 </answer>"), extract_answer("<answer>4821") is None
    ('4821', True)
    """
    return last_tag_content(text, _OPEN_TAG, _CLOSE_TAG)


def parse_integer(text: Any) -> int | None:
    """``text`` as an integer when it is ``-?[0-9]+`` with at most ``MAX_DIGITS`` digits, else None.

    >>> parse_integer("4821"), parse_integer("0042"), parse_integer("-7")
    (4821, 42, -7)
    >>> parse_integer("4,821") is None, parse_integer("+7") is None, parse_integer("\u0663") is None
    (True, True, True)
    """
    if not isinstance(text, str):
        return None
    digits = text[1:] if text.startswith("-") else text
    # Length first: a 10,000-digit run is rejected without touching int().
    if not digits or len(digits) > MAX_DIGITS or not _ASCII_DIGITS.issuperset(digits):
        return None
    return int(text)


def is_strict(text: Any) -> bool:
    """Whether ``text`` is exactly one ``<answer>...</answer>`` pair, ASCII whitespace around it allowed.

    >>> is_strict(" <answer>4821</answer>\\n"), is_strict("Sure! <answer>4821</answer>")
    (True, False)
    >>> is_strict("<answer>1</answer><answer>2</answer>")
    False
    """
    if not isinstance(text, str):
        return False
    body = text.strip(_ASCII_WS)
    if not (body.startswith(_OPEN_TAG) and body.endswith(_CLOSE_TAG)):
        return False
    # The two tags cannot overlap (">" is not "<"), so the body holds both; one pair means none inside.
    inner = body[len(_OPEN_TAG) : len(body) - len(_CLOSE_TAG)]
    return _OPEN_TAG not in inner and _CLOSE_TAG not in inner


# --------------------------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------------------------


def _number_problem(number: Any) -> str | None:
    if not isinstance(number, bool):  # bool is an int subclass, but True is not a number to copy
        try:
            value = operator.index(number)  # ints and numpy integer scalars; floats and strings are not
        except TypeError:
            value = None
        if value is not None and len(str(abs(value))) <= MAX_DIGITS:
            return None
    text = repr(number)
    shown = text if len(text) <= 60 else text[:57] + "..."
    return f"'number' is {shown}, expected an integer of at most {MAX_DIGITS} digits"


def judge_completion(text: Any, number: int) -> Verdict:
    """Outcome (CORRECT / PARTIAL: a pair, wrong / FAILED: no pair), the tag content and the summed reward.

    >>> judge_completion("<answer>4821</answer>", 4821)
    Verdict(outcome=<Outcome.CORRECT: 'correct'>, answer='4821', reward=1.3)
    >>> judge_completion("I copy: <answer>4812</answer>", 4821).reward, judge_completion("4821", 4821).reward
    (0.2, 0.0)
    """
    content = extract_answer(text)
    if content is None:
        return Verdict(Outcome.FAILED, None, 0.0)
    correct = parse_integer(content) == number
    reward = (CORRECT_REWARD if correct else 0.0) + TAG_REWARD + (STRICT_REWARD if is_strict(text) else 0.0)
    # round(): 1.0 + 0.2 + 0.1 is 1.3000000000000003 in binary floating point; the documented value is 1.3.
    shown = content if len(content) <= 200 else content[:197] + "..."
    return Verdict(Outcome.CORRECT if correct else Outcome.PARTIAL, shown, round(reward, 6))


def format_copy_reward(
    completions: Sequence[Any], number: Sequence[Any] | None = None, **kwargs: Any
) -> list[float | None]:
    """Seed 002's format-copy reward: +1.0 correct integer, +0.2 ``<answer>`` pair, +0.1 strict XML (max 1.3).

    A malformed ``number`` scores None and is counted in ``log_metric("format_copy/malformed_rows", n)``.

    >>> format_copy_reward(["<answer>4821</answer>", "Here: <answer>4821</answer>", "<answer>12</answer>", "4821"],
    ...                    number=[4821] * 4)
    [1.3, 1.2, 0.3, 0.0]
    """
    return score_batch(
        "format_copy_reward",
        completions,
        {"number": number},
        lambda row: _number_problem(row["number"]),
        lambda _i, text, row: judge_completion(text, operator.index(row["number"])).reward,
        log_metric=kwargs.get("log_metric"),
        malformed_metric=MALFORMED_ROWS_METRIC,
    )


REWARD_FUNCS: dict[str, RewardFunc] = {"format_copy": format_copy_reward}
"""Recipe name -> reward function; ``__name__`` names TRL's ``rewards/<name>/mean`` log key."""


# --------------------------------------------------------------------------------------------------------------
# Prompts
# --------------------------------------------------------------------------------------------------------------

INSTRUCTION = "Copy the number inside <answer></answer> tags and write nothing else, for example <answer>17</answer>."


def _plain(row: Mapping[str, Any]) -> str:
    # Ends with a newline right where the answer goes: a tiny byte-level model sees the example's shape and
    # continues from the start of a line, with no chat markup to learn first.
    return f"{INSTRUCTION}\nNumber: {int(row['number'])}\n"


def _chat(row: Mapping[str, Any]) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You are a helpful assistant. You follow the requested output format exactly."},
        {"role": "user", "content": f"{INSTRUCTION}\nNumber: {int(row['number'])}"},
    ]


PROMPT_TEMPLATES: dict[str, PromptTemplate] = {
    t.name: t
    for t in (
        PromptTemplate("plain", False, _plain, "short plain text ending where the answer starts (tiny models)"),
        PromptTemplate("chat", True, _chat, "system + user messages for instruct (chat-template) models"),
    )
}


# --------------------------------------------------------------------------------------------------------------
# Offline data
# --------------------------------------------------------------------------------------------------------------


def generate_numbers(n: int, seed: int = 0, min_digits: int = 1, max_digits: int = 4) -> list[dict[str, int]]:
    """``n`` rows ``{"number": int}``: distinct non-negative integers, deterministic per seed, with the rows
    spread as evenly as the pools allow over the digit counts ``min_digits``..``max_digits`` (only 10 one-digit
    numbers exist, so their share goes to the longer ones). More rows than distinct numbers is a ValueError.

    >>> generate_numbers(3, seed=0) == generate_numbers(3, seed=0) != generate_numbers(3, seed=1)
    True
    >>> sorted(len(str(row["number"])) for row in generate_numbers(4, seed=1, min_digits=1, max_digits=2))
    [1, 1, 2, 2]
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    # pool of d-digit numbers: 0..9 for one digit (0 is a number to copy too), else 10**(d-1)..10**d - 1
    pools = [(0 if d == 1 else 10 ** (d - 1), 10**d - 1) for d in range(min_digits, max_digits + 1)]
    available = sum(high - low + 1 for low, high in pools)
    if n > available:
        raise ValueError(f"cannot make {n} distinct numbers of {min_digits}-{max_digits} digits (only {available})")
    rng = random.Random(seed)
    # Fill the smallest pools first, each with an equal share of what is left.
    counts, left = [], n
    for index, (low, high) in enumerate(pools):
        share = -(-left // (len(pools) - index))  # ceil: the larger pools after this one take the remainder
        take = min(high - low + 1, share)
        counts.append(take)
        left -= take
    numbers = [x for (low, high), k in zip(pools, counts, strict=True) for x in rng.sample(range(low, high + 1), k)]
    rng.shuffle(numbers)
    return [{"number": x} for x in numbers]


# --------------------------------------------------------------------------------------------------------------
# The task
# --------------------------------------------------------------------------------------------------------------


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
        if "number" not in row:
            return "'number' is missing"
        return _number_problem(row["number"])

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
