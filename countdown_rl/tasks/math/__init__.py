"""The MATH task: competition problems (Hendrycks et al., 2021) whose final answers are compared with math-verify.

The task in six steps, from rows to rewards:

1. Rows: ``problem`` and ``gold``. :meth:`MathTask.prepare_row` takes ``gold`` from an ``answer`` column when there
   is one (MATH-500), else from the LAST ``\\boxed{...}`` / ``\\fbox{...}`` of ``solution`` (brace-matched); it
   turns ``level`` ("Level 5", or an int) into an int ("Level ?" -> None).
2. Extract the model's answer (:func:`.verifier.extract`): the last ``<answer>`` pair's content (its box's if it
   has one), else the last complete box. Nothing -> FAILED.
3. Clean (:func:`.verifier.clean_answer`, :func:`.verifier.split_unit`): ``$``, a sentence's final punctuation,
   text commands around one symbol, a trailing unit.
4. Screen (:func:`.screening.screen_problem`): what a deadline cannot stop (a power tower, huge literal powers,
   factorials of big numbers), too long or too deep, is unreadable and never reaches sympy.
5. Compare (:func:`.verifier.verdict`): shortcuts without sympy, then both sides parsed whole and compared by
   math-verify, under a deadline (option ``timeout_seconds``, default 2 s); a timeout is a wrong answer.
6. Score: :meth:`MathTask.judge` and the rewards of :mod:`.rewards`: ``r1_zero`` (1.0 when the R1-Zero format
   holds and the answer is right, else 0.0) and ``math_shaped`` (1.1 / 0.2 / 0.1 / 0.0).

Modules: :mod:`.verifier` (steps 2, 3, 5), :mod:`.screening` (4), :mod:`.rewards`, :mod:`.prompts` (``r1_zero``,
``boxed``, ``chat``), :mod:`.problems` (offline synthetic rows). The names most callers need are re-exported here.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from re import compile as _regex  # aliased: the package's safety hook flags any call spelled like the builtin
from typing import Any

from countdown_rl.tasks.base import Outcome, RewardFunc, Task, Verdict, bind_options, short_repr
from countdown_rl.tasks.extraction import has_box_opening, last_boxed, last_number
from countdown_rl.tasks.math.problems import generate_math
from countdown_rl.tasks.math.prompts import PROMPT_TEMPLATES
from countdown_rl.tasks.math.rewards import (
    MALFORMED_ROWS_METRIC,
    REWARD_FUNCS,
    TIMEOUTS_METRIC,
    math_r1_zero_reward,
    math_shaped_reward,
)
from countdown_rl.tasks.math.screening import (
    MAX_ANSWER_CHARS,
    MAX_EXPONENT_DIGITS,
    MAX_FACTORIAL_DIGITS,
    MAX_NESTING,
    MAX_POWER_PRODUCT,
    screen_problem,
)
from countdown_rl.tasks.math.verifier import (
    DEFAULT_TIMEOUT_SECONDS,
    GOLD_ATTEMPTS,
    Extraction,
    clean_answer,
    equivalent,
    extract,
    gold_problem,
    r1_zero_format,
    split_unit,
    verdict,
)

__all__ = [
    "DEFAULT_DATASET",
    "DEFAULT_TIMEOUT_SECONDS",
    "Extraction",
    "MAX_FACTORIAL_DIGITS",
    "MAX_POWER_PRODUCT",
    "GOLD_ATTEMPTS",
    "MAX_ANSWER_CHARS",
    "MAX_EXPONENT_DIGITS",
    "MAX_NESTING",
    "MALFORMED_ROWS_METRIC",
    "TIMEOUTS_METRIC",
    "MathOptions",
    "MathTask",
    "REWARD_FUNCS",
    "clean_answer",
    "equivalent",
    "extract",
    "generate_math",
    "gold_problem",
    "has_box_opening",
    "last_boxed",
    "last_number",
    "math_r1_zero_reward",
    "math_shaped_reward",
    "parse_level",
    "r1_zero_format",
    "screen_problem",
    "split_unit",
    "verdict",
]

DEFAULT_DATASET = "DigitalLearningGmbH/MATH-lighteval"

_LEVEL = _regex(r"\s*(?:[Ll]evel\s*)?([0-9]{1,3})\s*")


def parse_level(value: Any) -> int | None:
    """A MATH level as an int: ``"Level 5"`` or ``5`` -> 5; ``"Level ?"`` or None -> None; anything else a ValueError.

    >>> parse_level("Level 5"), parse_level(3), parse_level("Level ?")
    (5, 3, None)
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"'level' is {short_repr(value)}, expected 'Level 1' to 'Level 5' or an int")
    if isinstance(value, int) or (hasattr(value, "item") and isinstance(getattr(value, "item")(), int)):
        return int(value)
    if isinstance(value, str):
        if value.strip() in ("Level ?", "?", ""):  # MATH's train split marks a few problems so
            return None
        match = _LEVEL.fullmatch(value)
        if match:
            return int(match.group(1))
    raise ValueError(f"'level' is {short_repr(value)}, expected 'Level 1' to 'Level 5' or an int")


@dataclass(frozen=True)
class MathOptions:
    """Options of the MATH task (recipe ``task_options: [levels=5]``)."""

    levels: tuple[int, ...] = field(
        default=(),
        metadata={"help": "Keep only these MATH levels (1-5), e.g. levels=5 (the GR-REINFORCE study's 'Math Hard'); "
                          "empty: all."},
    )
    timeout_seconds: float = field(
        default=DEFAULT_TIMEOUT_SECONDS,
        metadata={"help": "Deadline for parsing and comparing one completion's answer (main thread); 0: none."},
    )

    def __post_init__(self) -> None:
        levels = self.levels
        if isinstance(levels, int) and not isinstance(levels, bool):  # {"levels": 5} from a mapping
            levels = (levels,)
        if not isinstance(levels, (tuple, list)) or any(
            isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 5 for k in levels
        ):
            raise ValueError(f"levels={short_repr(self.levels)}: expected MATH levels between 1 and 5, e.g. levels=4,5")
        object.__setattr__(self, "levels", tuple(sorted(set(levels))))
        if isinstance(self.timeout_seconds, bool) or not isinstance(self.timeout_seconds, (int, float)) or not (
            0 <= self.timeout_seconds < float("inf")
        ):
            raise ValueError(f"timeout_seconds={short_repr(self.timeout_seconds)}: expected a number of seconds >= 0")
        object.__setattr__(self, "timeout_seconds", float(self.timeout_seconds))


class MathTask(Task):
    """MATH behind the task interface (see the module docstring).

    Datasets: ``DigitalLearningGmbH/MATH-lighteval`` (the default: all subjects, train 7,500 / test 5,000),
    ``EleutherAI/hendrycks_math`` (one config per subject: ``algebra``, ``counting_and_probability``, ``geometry``,
    ``intermediate_algebra``, ``number_theory``, ``prealgebra``, ``precalculus``; name one with
    ``dataset_config``) and ``HuggingFaceH4/MATH-500`` (test only; its ``answer`` column is the gold).

    >>> task = MathTask(["levels=5"])
    >>> row = task.prepare_row({"problem": "1/2 + 1/4?", "solution": r"It is $\\boxed{\\frac34}$.", "level": "Level 5"})
    >>> row["gold"], row["level"], task.filter_row(row)
    ('\\\\frac34', 5, True)
    >>> task.judge("1/2 + 1/4 = 0.75 </think> <answer>0.75</answer>", row)
    Verdict(outcome=<Outcome.CORRECT: 'correct'>, answer='0.75', reward=1.0)
    """

    name = "math"
    description = "competition mathematics (MATH); the final answer is compared with the gold by math-verify"
    columns = ("problem", "gold")
    default_dataset = DEFAULT_DATASET
    known_datasets = {
        DEFAULT_DATASET: {"config": "default", "train_split": "train", "test_split": "test"},
        "EleutherAI/hendrycks_math": {"config": "algebra", "train_split": "train", "test_split": "test"},
        # An evaluation set (500 of the 5,000 test problems): no train split.
        "HuggingFaceH4/MATH-500": {"config": None, "train_split": None, "test_split": "test"},
    }
    prompt_templates = PROMPT_TEMPLATES
    default_template = "r1_zero"
    default_reward_funcs = ("r1_zero",)
    Options = MathOptions

    # -- rows ---------------------------------------------------------------------------------------------------
    def prepare_row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """Add ``gold`` (from ``answer``, else the last box of ``solution``) and make ``level`` an int.

        >>> MathTask().prepare_row({"problem": "p", "answer": 12})["gold"]
        '12'
        """
        out = dict(row)
        if "gold" not in out:
            answer, solution = out.get("answer"), out.get("solution")
            if isinstance(answer, str):
                out["gold"] = answer.strip()
            elif isinstance(answer, (int, float)) and not isinstance(answer, bool):
                out["gold"] = str(answer)
            elif answer is not None:
                raise ValueError(f"'answer' is {short_repr(answer)}, expected the final answer as a string")
            elif isinstance(solution, str):
                gold = last_boxed(solution)
                if gold is None or not gold.strip():
                    raise ValueError("'solution' has no complete \\boxed{...} (or \\fbox{...}) final answer")
                out["gold"] = gold.strip()
            elif "solution" in out or "answer" in out:
                # None (a dataset probe, or a null cell): row_problem names the column
                out["gold"] = None
            else:
                raise ValueError("no 'answer' or 'solution' column to take the gold answer from")
        if "level" in out:
            out["level"] = parse_level(out["level"])
        return out

    def row_problem(self, row: Mapping[str, Any]) -> str | None:
        problem = row.get("problem")
        if not isinstance(problem, str) or not problem.strip():
            return f"'problem' is {short_repr(problem)}, expected a non-empty string"
        if "gold" not in row:
            return "'gold' is missing (prepare_row takes it from 'answer' or the last \\boxed{} of 'solution')"
        return gold_problem(row["gold"])

    def dedupe_key(self, row: Mapping[str, Any]) -> Hashable:
        return " ".join(str(row["problem"]).split())

    def difficulty(self, row: Mapping[str, Any]) -> float:
        try:
            level = parse_level(row.get("level"))
        except ValueError:
            level = None
        return float(level) if level is not None else 0.0  # unknown level ("Level ?"): first in a curriculum

    def filter_row(self, row: Mapping[str, Any]) -> bool:
        if not self.options.levels:
            return True
        try:
            return parse_level(row.get("level")) in self.options.levels
        except ValueError:
            return False

    # -- judging and rewards -------------------------------------------------------------------------------------
    def judge(self, text: str, row: Mapping[str, Any]) -> Verdict:
        found = extract(text)
        if found.source == "none":
            return Verdict(Outcome.FAILED, None, 0.0)
        right = found.answer is not None and equivalent(
            found.answer, row["gold"], timeout_seconds=self.options.timeout_seconds
        )
        shown = found.answer if found.answer is None or len(found.answer) <= MAX_ANSWER_CHARS else (
            found.answer[:MAX_ANSWER_CHARS] + "..."
        )
        return Verdict(Outcome.CORRECT if right else Outcome.PARTIAL, shown, 1.0 if right and found.formatted else 0.0)

    def reward_funcs(self) -> Mapping[str, RewardFunc]:
        return bind_options(REWARD_FUNCS, timeout_seconds=self.options.timeout_seconds)

    # -- offline data ------------------------------------------------------------------------------------------
    def generate(self, n: int, seed: int = 0) -> list[dict[str, Any]]:
        return generate_math(n, seed=seed)
