"""The Countdown task: reach a target from given numbers with ``+ - * /`` and parentheses, each number once.

1. Rows: ``nums`` (non-negative integers) and ``target`` (an integer), checked by :func:`rewards.row_problem`
   (the same check for loading and rewards); the same puzzle with its numbers reordered is one puzzle.
2. Prompts: :mod:`.prompts` (``r1_zero`` plain text, ``chat`` messages).
3. Judging: :mod:`.verifier` extracts the last ``<answer>`` and evaluates it exactly, executing nothing.
4. Rewards: :mod:`.rewards` (``countdown``, ``countdown_subset``, ``graduated``, ``length_aware``).
5. Offline data: :mod:`.puzzles` (a generator that keeps only solvable puzzles, and an exact solver; the role the
   other tasks' ``problems`` module plays).
6. The blind baseline: :mod:`.blind` (the best fixed expression that never reads the target, beside every
   accuracy).

Option ``unary_minus`` (default false): accept a unary minus before a literal or a parenthesised group, as the
reference setup's verifier and TinyZero do; the default rule rejects it. Option ``sampling`` (default
``expression``): how :meth:`CountdownTask.generate` draws puzzles (:mod:`.puzzles`; ``balanced`` caps every
target-blind template of :mod:`.blind`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from countdown_rl.tasks.base import RewardFunc, Task, Verdict, bind_options, missing_column
from countdown_rl.tasks.countdown.prompts import PROMPT_TEMPLATES

__all__ = ["DEFAULT_DATASET", "TINYZERO_BOUNDS", "TINYZERO_DATASET", "CountdownOptions", "CountdownTask"]

DEFAULT_DATASET = "justinphan3110/Countdown-Tasks-3to4"
TINYZERO_DATASET = "Jiayi-Pan/Countdown-Tasks-3to4"
TINYZERO_BOUNDS = (327_680, 328_704)
"""TinyZero's split of the raw row order: train = rows [0, 327680), test = rows [327680, 328704)."""


@dataclass(frozen=True)
class CountdownOptions:
    """Options of the Countdown task (recipe ``task_options: [unary_minus=true]``)."""

    unary_minus: bool = field(
        default=False,
        metadata={"help": "Accept a unary minus before a literal or a parenthesised group (-1 + 72 * 12)."},
    )
    sampling: Literal["expression", "balanced"] = field(
        default="expression",
        metadata={"help": "How generated puzzles are drawn (`countdown-rl generate`, dataset `generated`): "
                          "`expression` (a random expression's value, like the public data: 20-38% sum/difference "
                          "targets) or `balanced` (no target-blind template solves more than 6%)."},
    )

    def __post_init__(self):
        from countdown_rl.tasks.countdown.puzzles import SAMPLINGS

        if self.sampling not in SAMPLINGS:
            raise ValueError(f"sampling must be one of {list(SAMPLINGS)}, got {self.sampling!r}")


class CountdownTask(Task):
    """Countdown behind the task interface.

    >>> task = CountdownTask()
    >>> task.judge("<answer>(65 - 7) - 7</answer>", {"nums": [7, 7, 65], "target": 51}).outcome.value
    'correct'
    >>> CountdownTask(["unary_minus=true"]).judge("<answer>-7 + 65 - 7</answer>",
    ...                                           {"nums": [7, 7, 65], "target": 51}).reward
    1.0
    """

    name = "countdown"
    description = "reach the target from the given numbers with + - * / and parentheses, each number once"
    columns = ("nums", "target")
    default_dataset = DEFAULT_DATASET
    known_datasets = {
        DEFAULT_DATASET: {"config": None, "train_split": "train", "test_split": None},
        TINYZERO_DATASET: {"config": None, "train_split": "train", "test_split": None},
    }
    positional_splits = {"tinyzero": TINYZERO_BOUNDS}
    prompt_templates = PROMPT_TEMPLATES
    default_template = "r1_zero"
    default_reward_funcs = ("countdown",)
    Options = CountdownOptions

    def row_problem(self, row: Mapping[str, Any]) -> str | None:
        from countdown_rl.tasks.countdown.rewards import row_problem

        return missing_column(row, self.columns) or row_problem(row["nums"], row["target"])

    def dedupe_key(self, row: Mapping[str, Any]) -> Hashable:
        # The public data repeats ~40k puzzles with the numbers reordered.
        return int(row["target"]), tuple(sorted(int(x) for x in row["nums"]))

    def difficulty(self, row: Mapping[str, Any]) -> float:
        """How many numbers, then how much search the puzzle takes (``puzzles.search_effort``, a fraction in
        [0, 1) of its node bound; an unsolvable puzzle is the hardest with as many numbers).

        >>> task = CountdownTask()
        >>> task.difficulty({"nums": [1, 2], "target": 3}) < task.difficulty({"nums": [1, 2], "target": 1}) < 3
        True
        """
        from countdown_rl.tasks.countdown.puzzles import SEARCH_LIMIT, search_effort

        nums = [int(x) for x in row["nums"]]
        return len(nums) + search_effort(nums, int(row["target"])) / (SEARCH_LIMIT + 1)

    def judge(self, text: str, row: Mapping[str, Any]) -> Verdict:
        from countdown_rl.tasks.countdown.verifier import score_completion

        score = score_completion(
            text, [int(x) for x in row["nums"]], int(row["target"]), unary_minus=self.options.unary_minus
        )
        return Verdict(score.outcome, score.equation, score.reward)

    def reward_funcs(self) -> Mapping[str, RewardFunc]:
        from countdown_rl.tasks.countdown.rewards import REWARD_FUNCS

        return bind_options(REWARD_FUNCS, **({"unary_minus": True} if self.options.unary_minus else {}))

    def demonstration(self, row: Mapping[str, Any], template: str | None = None) -> str:
        from countdown_rl.tasks.countdown.puzzles import solver_trace

        # The r1_zero prompt opens <think>: the demonstration continues inside it. The chat one asks the assistant
        # to open it.
        open_think = (template or self.default_template) != "r1_zero"
        return solver_trace([int(x) for x in row["nums"]], int(row["target"]), open_think=open_think)

    def blind_rule(self, rows: Sequence[Mapping[str, Any]]) -> Any:
        from countdown_rl.tasks.countdown.blind import best_blind_rule

        return best_blind_rule(rows)

    def generate(self, n: int, seed: int = 0) -> list[dict[str, Any]]:
        from countdown_rl.tasks.countdown.puzzles import generate_countdown

        return generate_countdown(n, seed=seed, sampling=self.options.sampling)
