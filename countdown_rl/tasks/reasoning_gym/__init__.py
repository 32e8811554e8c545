"""reasoning-gym's procedural datasets as one task: any dataset, or a weighted mixture, scored by its own scorer.

reasoning-gym (the ``[reasoning-gym]`` extra) generates problems from a seed, with a reference answer and a scorer
for each of its datasets. The task in four steps:

1. Options (:class:`ReasoningGymOptions`): ``datasets=chain_sum`` or a mixture ``datasets=chain_sum:2,lcm:1``;
   ``config`` (JSON: dataset -> its config keys, e.g. ``{"chain_sum": {"max_terms": 3}}``) and ``levels`` (JSON:
   dataset -> a curriculum level for every difficulty attribute, or ``{attribute: level}``). Checked before anything
   loads (:func:`.problems.check_datasets`): unknown names (with the nearest ones), unknown config keys, weights
   summing to 0, values reasoning-gym refuses, a hash-seeded dataset without a fixed ``PYTHONHASHSEED``.
2. Rows (:mod:`.problems`, ``default_dataset = "generated"``): ``question``, ``answer`` (the reference) and
   ``source`` (JSON: dataset, config, seed, size, index), generated offline from the split seed; the split dedupes
   on the question, so no question is on both sides.
3. Prompts (:mod:`.prompts`): ``chat``, ``r1_zero`` and ``plain``, each asking for the answer in ``<answer>`` tags.
4. Judging (:mod:`.verifier`) and the ``reasoning_gym`` reward (:mod:`.rewards`): the last ``<answer>`` pair's
   content, screened where the dataset's scorer evaluates text, checked where its scorer can be gamed
   (``OWN_CHECKS``), scored by reasoning-gym on the regenerated entry under a deadline; no answer scores 0 (an empty
   pair is an answer only where the reference itself is empty, as ab's can be), and so does a scorer that raises or
   hangs (counted in the logs).

Modules: :mod:`.problems`, :mod:`.verifier`, :mod:`.rewards`, :mod:`.prompts`. The names most callers need are
re-exported here.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from countdown_rl.tasks.base import (ASCII_WHITESPACE, RewardFunc, Task, Verdict, bind_options, missing_column,
                                     short_repr)
from countdown_rl.tasks.reasoning_gym.problems import (COMPOSITE, EXTRA, HASH_SEEDED, DatasetSpec,
                                                       check_datasets, dataset_names, generate_rows, require_library,
                                                       source_entry, source_problem)
from countdown_rl.tasks.reasoning_gym.prompts import PROMPT_TEMPLATES
from countdown_rl.tasks.reasoning_gym.rewards import (FAILURE_METRICS, MALFORMED_ROWS_METRIC, REWARD_FUNCS,
                                                      reasoning_gym_reward)
from countdown_rl.tasks.reasoning_gym.verifier import (DEFAULT_TIMEOUT_SECONDS, EVALUATING_SCORERS, MAX_ANSWER_CHARS,
                                                       OWN_CHECKS, Score, extract_answer, judge_completion,
                                                       score_answer, screen_answer)

__all__ = [
    "COMPOSITE",
    "DEFAULT_TIMEOUT_SECONDS",
    "EVALUATING_SCORERS",
    "EXTRA",
    "FAILURE_METRICS",
    "HASH_SEEDED",
    "MALFORMED_ROWS_METRIC",
    "MAX_ANSWER_CHARS",
    "OWN_CHECKS",
    "PROMPT_TEMPLATES",
    "REWARD_FUNCS",
    "DatasetSpec",
    "ReasoningGymOptions",
    "ReasoningGymTask",
    "Score",
    "check_datasets",
    "dataset_names",
    "extract_answer",
    "generate_rows",
    "judge_completion",
    "reasoning_gym_reward",
    "score_answer",
    "screen_answer",
    "source_entry",
]


def _json_object(option: str, value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    text = str(value).strip(ASCII_WHITESPACE)
    if not text:
        return {}
    try:
        parsed = json.loads(text)
    except ValueError as err:
        raise ValueError(f"{option}={short_repr(text)} is not JSON ({err.msg} at character {err.pos}); "
                         f'e.g. {option}={{"chain_sum": {{"max_terms": 3}}}}') from None
    if not isinstance(parsed, dict):
        raise ValueError(f"{option}={short_repr(text)}: expected a JSON object mapping dataset names to settings")
    return parsed


@dataclass(frozen=True)
class ReasoningGymOptions:
    """Options of the reasoning-gym task (recipe ``task_options: [datasets=chain_sum, 'config={...}']``)."""

    datasets: str = field(
        default="chain_sum",
        metadata={"help": "A reasoning-gym dataset, or a mixture name:weight,name:weight (e.g. chain_sum:2,lcm:1)."},
    )
    config: str = field(
        default="",
        metadata={"help": 'JSON: dataset -> its config keys, e.g. {"chain_sum": {"min_terms": 2, "max_terms": 3}}.'},
    )
    levels: str = field(
        default="",
        metadata={"help": "JSON: dataset -> a curriculum difficulty level for every attribute, or {attribute: level}; "
                  "config keys override it."},
    )
    timeout_seconds: float = field(
        default=DEFAULT_TIMEOUT_SECONDS,
        metadata={"help": "Deadline of one scorer call; one that runs past it scores 0 (counted); 0: none."},
    )
    allow_defective: bool = field(
        default=False,
        metadata={"help": "Use a dataset with a known defect anyway (a hash-seeded dataset without a fixed "
                  "PYTHONHASHSEED: its rows do not regenerate in another process; the refusal says so)."},
    )
    specs: tuple[DatasetSpec, ...] = field(init=False, repr=False, compare=False, metadata={"help": "Resolved."})

    def __post_init__(self) -> None:
        config, levels = _json_object("config", self.config), _json_object("levels", self.levels)
        # Canonical JSON text: the options stay hashable and print the same way in run records.
        object.__setattr__(self, "config", json.dumps(config, sort_keys=True) if config else "")
        object.__setattr__(self, "levels", json.dumps(levels, sort_keys=True) if levels else "")
        if not self.timeout_seconds >= 0:
            raise ValueError(f"timeout_seconds={self.timeout_seconds}: expected >= 0")
        object.__setattr__(self, "specs", check_datasets(self.datasets, config, levels, self.allow_defective))


class ReasoningGymTask(Task):
    """reasoning-gym behind the task interface.

    >>> task = ReasoningGymTask(["datasets=chain_sum", 'config={"chain_sum": {"max_terms": 2, "max_digits": 1}}'])
    >>> row = task.prepare_row(task.generate(1, seed=0)[0])
    >>> task.judge(task.demonstration(row), row).outcome.value, task.judge("no tags", row).reward
    ('correct', 0.0)
    """

    name = "reasoning_gym"
    description = "reasoning-gym's procedural datasets (one, or a weighted mixture), scored by their own scorers"
    columns = ("question", "source")
    default_dataset = "generated"
    prompt_templates = PROMPT_TEMPLATES
    default_template = "chat"
    default_reward_funcs = ("reasoning_gym",)
    Options = ReasoningGymOptions

    def __init__(self, options: Any = None):
        require_library()  # before the options, whose checks ask reasoning-gym: one line naming the extra
        super().__init__(options)

    def row_problem(self, row: Mapping[str, Any]) -> str | None:
        """Why a row cannot be scored: ``question`` non-empty text, ``source`` regenerating that question."""
        missing = missing_column(row, self.columns)
        if missing == "'source' is missing":
            return missing + " (rows this task generates carry it: dataset_name: generated)"
        if missing is not None:
            return missing
        question = row["question"]
        if not isinstance(question, str) or not question.strip(ASCII_WHITESPACE):
            return f"'question' is {short_repr(question)}, expected non-empty text"
        return source_problem(question, row["source"])

    def dedupe_key(self, row: Mapping[str, Any]) -> Hashable:
        """The question with its whitespace normalised (one question never on both sides of a split)."""
        return " ".join(str(row["question"]).split())

    def difficulty(self, row: Mapping[str, Any]) -> float:
        """The reference answer's length in characters: longer answers (more terms, bigger grids) are harder."""
        answer = row.get("answer")
        return float(len(answer)) if isinstance(answer, str) else 0.0

    def judge(self, text: str, row: Mapping[str, Any]) -> Verdict:
        return judge_completion(text, row["source"], self.options.timeout_seconds)[0]

    def reward_funcs(self) -> Mapping[str, RewardFunc]:
        timeout = self.options.timeout_seconds
        return dict(REWARD_FUNCS) if timeout == DEFAULT_TIMEOUT_SECONDS else bind_options(REWARD_FUNCS, timeout_seconds=timeout)

    def generate(self, n: int, seed: int = 0) -> list[dict[str, Any]]:
        return generate_rows(self.options.specs, n, seed=seed)

    def demonstration(self, row: Mapping[str, Any], template: str | None = None) -> str:
        """The reference answer in tags (after any template)."""
        answer = row.get("answer")
        if answer is None:
            raise ValueError(f"row has no reference answer ('answer' is None): {short_repr(row.get('question'))}")
        return f"<answer>{answer}</answer>"
