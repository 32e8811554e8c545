"""The task interface: what the task-independent core (data, trainer, training, evaluation, report) asks of a task.

A task is a package ``countdown_rl/tasks/<name>/`` whose ``__init__`` holds its :class:`Task` subclass, registered
by name in ``countdown_rl.tasks.TASKS``. Every task package has the same modules, one per role: ``verifier``
(extract and judge one completion; never executes model text), ``rewards`` (TRL reward functions), ``prompts``
(templates) and an offline generator (``problems``; Countdown's ``puzzles`` also holds its solver). A task owns
everything task-specific:

1. Rows: :attr:`Task.columns` (the ground-truth columns its rewards read), :meth:`Task.prepare_row` (a source
   row in the dataset's own layout -> a row with those columns, e.g. GSM8K's gold number after ``####``) and
   :meth:`Task.row_problem` (why a row is unusable, or None). Loading, training and rewards share this one check.
2. Prompts: :attr:`Task.prompt_templates` by name; each renders a row as plain text or chat messages.
3. Judging: :meth:`Task.judge` parses a completion (parsing is separate from scoring) and returns a
   :class:`Verdict`: outcome correct / partial (an answer was given but it is wrong) / failed (no parseable
   answer), the extracted answer, and the task's main reward. It never executes model text and does bounded work.
4. Rewards: :meth:`Task.reward_funcs` maps recipe names to TRL reward functions (bound to the task's options).
5. Data for tests and demos: :meth:`Task.generate` makes small rows offline, in the source dataset's layout.
6. Splits and curricula: :meth:`Task.dedupe_key` (no row on both sides of a split) and :meth:`Task.difficulty`.

Options (``task_options: [key=value, ...]`` in a recipe) are a frozen dataclass per task, :attr:`Task.Options`,
parsed from strings by :func:`parse_options` with one-line errors naming the key.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, Union

__all__ = [
    "ASCII_WHITESPACE",
    "CLOSE_ANSWER_TAG",
    "MAX_SHOWN_CHARS",
    "OPEN_ANSWER_TAG",
    "R1_ZERO_ASSISTANT_PREFIX",
    "R1_ZERO_BRIEF_PREAMBLE",
    "Outcome",
    "Prompt",
    "PromptTemplate",
    "RewardFunc",
    "Task",
    "Verdict",
    "bind_options",
    "clip_shown",
    "completion_text",
    "last_tag_content",
    "missing_column",
    "parse_options",
    "question_templates",
    "r1_zero_prompt",
    "score_batch",
    "select_reward_funcs",
    "short_repr",
]

# A plain-text prompt, or conversational messages ({"role": ..., "content": ...}) as TRL expects them.
Prompt = Union[str, list[dict[str, str]]]
# TRL's reward function shape: f(completions=..., **dataset_columns, **kwargs) -> one float (or None) per completion
RewardFunc = Callable[..., list[Union[float, None]]]


ASCII_WHITESPACE = " \t\n\r\f\v"
"""What answers are stripped of: ``str.strip()`` with no argument would also strip Unicode spaces (U+00A0)."""
OPEN_ANSWER_TAG, CLOSE_ANSWER_TAG = "<answer>", "</answer>"
"""The answer tags every task's prompts ask for (case-sensitive)."""
MAX_SHOWN_CHARS = 200
"""An extracted answer recorded in a :class:`Verdict` is cut to this many characters (evaluation files stay small)."""
R1_ZERO_BRIEF_PREAMBLE = (
    "A conversation between User and Assistant. The User asks a question and the Assistant solves it: "
    "the Assistant first reasons about the problem in its mind, then gives the User the answer."
)
"""The R1-Zero frame without its format sentence: the task text that follows names the tags (Countdown, GSM8K).
MATH's r1_zero prompt keeps the paper's full wording instead (``tasks.math.prompts.R1_ZERO_PAPER_PREAMBLE``)."""
R1_ZERO_ASSISTANT_PREFIX = "Assistant: Let me solve this step by step.\n<think>"


def r1_zero_prompt(question: str) -> str:
    """The plain-text R1-Zero transcript (for base models) whose Assistant turn is open and ends with ``<think>``.

    >>> prompt = r1_zero_prompt("What is 2 + 2?")
    >>> "User: What is 2 + 2?" in prompt, prompt.endswith("<think>")
    (True, True)
    """
    return f"{R1_ZERO_BRIEF_PREAMBLE}\nUser: {question}\n{R1_ZERO_ASSISTANT_PREFIX}"


def last_tag_content(text: Any, open_tag: str = OPEN_ANSWER_TAG, close_tag: str = CLOSE_ANSWER_TAG) -> str | None:
    """Content of the last complete ``open_tag ... close_tag`` pair, stripped of ASCII whitespace, else None.

    Found with ``str.rfind`` (O(len(text)), no regex backtracking); tags are case-sensitive.

    >>> last_tag_content("<answer>1 + 2</answer> then <answer> 3 * 4 </answer>")
    '3 * 4'
    >>> last_tag_content("<answer>1 + 2") is None, last_tag_content(None) is None
    (True, True)
    """
    if not isinstance(text, str):
        return None
    end = text.rfind(close_tag)
    if end < 0:
        return None
    start = text.rfind(open_tag, 0, end)
    if start < 0:
        return None
    return text[start + len(open_tag) : end].strip(ASCII_WHITESPACE)


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, for one-line messages about a bad row value.

    >>> short_repr("x" * 100)[-5:], short_repr([7, -7])
    ('xx...', '[7, -7]')
    """
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def clip_shown(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """An extracted answer as a :class:`Verdict` records it: at most ``limit`` characters, ``...`` marking a cut.

    >>> clip_shown("72"), len(clip_shown("9" * 500))
    ('72', 200)
    """
    return text if len(text) <= limit else text[: limit - 3] + "..."


def missing_column(row: Mapping[str, Any], columns: Sequence[str]) -> str | None:
    """The problem ``'<column>' is missing`` for the first of ``columns`` absent from ``row``, else None.

    >>> missing_column({"nums": [1]}, ("nums", "target"))
    "'target' is missing"
    """
    for column in columns:
        if column not in row:
            return f"'{column}' is missing"
    return None


def bind_options(funcs: Mapping[str, Callable[..., Any]], **options: Any) -> dict[str, Callable[..., Any]]:
    """Reward functions with a task's options bound as keywords; no options: the functions themselves.

    ``functools.partial`` keeps them picklable (TRL may send them to worker processes) and ``update_wrapper``
    gives each the wrapped function's ``__name__``, which names TRL's ``rewards/<name>/mean`` log key.

    >>> def r(completions, *, strict=False, **kwargs): return [float(strict)] * len(completions)
    >>> bound = bind_options({"r": r}, strict=True)["r"]
    >>> bound.__name__, bound(["a"])
    ('r', [1.0])
    """
    if not options:
        return dict(funcs)
    return {
        name: functools.update_wrapper(functools.partial(func, **options), func) for name, func in funcs.items()
    }


class Outcome(str, Enum):
    """How a completion fared, for every task.

    >>> Outcome.CORRECT == "correct"
    True
    """

    CORRECT = "correct"
    """An answer was given and it is right."""
    PARTIAL = "partial"
    """An answer was given (the task's answer format was found) but it is wrong or unreadable."""
    FAILED = "failed"
    """No parseable answer."""


@dataclass(frozen=True)
class Verdict:
    """The judged facts about one completion: outcome, the extracted answer (None when there is none) and the
    task's main reward (what evaluation files record next to the outcome).

    >>> Verdict(Outcome.PARTIAL, "41", 0.1).outcome.value
    'partial'
    """

    outcome: Outcome
    answer: str | None
    reward: float


@dataclass(frozen=True)
class PromptTemplate:
    """A named way to render a row; ``conversational`` says whether it yields chat messages."""

    name: str
    conversational: bool
    render: Callable[[Mapping[str, Any]], Prompt]
    description: str


def _question_text(row: Mapping[str, Any]) -> str:
    return str(row["question"]).strip(ASCII_WHITESPACE)


def _question_chat(row: Mapping[str, Any], *, system: str, instruction: str) -> list[dict[str, str]]:
    # Brief reasoning: short completion budgets (GSM8K's recipe trains with 128 new tokens) cut a long derivation off
    # before its answer.
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"{_question_text(row)}\nReason step by step, briefly. {instruction}"},
    ]


def _question_r1_zero(row: Mapping[str, Any], *, instruction: str) -> str:
    return r1_zero_prompt(f"{_question_text(row)}\nShow your reasoning inside <think> </think> tags. {instruction}")


def question_templates(system: str, instruction: str) -> dict[str, PromptTemplate]:
    """``chat`` and ``r1_zero`` for a task whose rows hold the problem as text in ``question`` (GSM8K,
    reasoning-gym): the question as written, then ``instruction`` (where the answer goes).

    >>> chat = question_templates("Be brief.", "Answer in <answer> tags.")["chat"]
    >>> chat.render({"question": " 1 + 1? "})[1]["content"]
    '1 + 1?\\nReason step by step, briefly. Answer in <answer> tags.'
    """
    return {
        "chat": PromptTemplate("chat", True, functools.partial(_question_chat, system=system, instruction=instruction),
                               "system + user messages for instruct (chat-template) models"),
        "r1_zero": PromptTemplate("r1_zero", False, functools.partial(_question_r1_zero, instruction=instruction),
                                  "plain-text R1-Zero transcript ending with an open <think>"),
    }


def completion_text(completion: Any) -> str:
    """The text of one completion: a string as is, or the last assistant message's content.

    Content given as a list of parts contributes its ``{"type": "text"}`` parts; missing content is "".

    >>> completion_text("<answer>1 + 2</answer>")
    '<answer>1 + 2</answer>'
    >>> completion_text([{"role": "assistant", "content": "<answer>1 + 2</answer>"}])
    '<answer>1 + 2</answer>'
    """
    if isinstance(completion, str):
        return completion
    if not isinstance(completion, list):
        # The trainer's data, not model text: a wrong shape is a bug to surface, not a zero reward.
        raise TypeError(f"a completion must be a str or a list of messages, got {type(completion).__name__}")
    for message in reversed(completion):
        if isinstance(message, dict) and message.get("role") == "assistant":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "".join(
                    part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
                )
            return ""
    return ""


def score_batch(
    name: str,
    completions: Sequence[Any],
    columns: Mapping[str, Sequence[Any] | None],
    row_problem: Callable[[Mapping[str, Any]], str | None],
    score_row: Callable[[int, str, dict[str, Any]], float | None],
    *,
    log_metric: Any = None,
    malformed_metric: str = "rewards/malformed_rows",
) -> list[float | None]:
    """The loop every reward function shares: check the batch, validate each row, score it, count bad rows.

    ``columns`` are the dataset columns (one list entry per completion) the reward reads; a row whose
    ``row_problem`` is not None scores None ("cannot score": TRL leaves it out of the baseline) and is counted
    in ``log_metric(malformed_metric, count)`` on every call (zeros too, so the logged mean is per batch).
    Mismatched lengths are a ValueError (a bug in the caller, not model text); nothing is broadcast.

    >>> score_batch("r", ["a", "bb"], {"k": [1, None]}, lambda row: None if row["k"] else "no k",
    ...             lambda i, text, row: float(len(text)))
    [1.0, None]
    """
    lengths = {}
    for column, values in {"completions": completions, **columns}.items():
        if values is None:
            raise ValueError(f"{name}: needs the dataset column {column!r} (one entry per completion)")
        if not isinstance(values, Sequence) or isinstance(values, str):
            raise TypeError(f"{name}: {column} must be a list (one entry per completion), got {type(values).__name__}")
        lengths[column] = len(values)
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"{column}={length}" for column, length in lengths.items())
        raise ValueError(f"{name}: mismatched batch lengths ({described}); expected one row per completion")
    rewards: list[float | None] = []
    malformed = 0
    for index, completion in enumerate(completions):
        row = {column: values[index] for column, values in columns.items()}
        if row_problem(row) is not None:
            malformed += 1
            rewards.append(None)
        else:
            rewards.append(score_row(index, completion_text(completion), row))
    if callable(log_metric):
        log_metric(malformed_metric, malformed)
    return rewards


def select_reward_funcs(
    names: Sequence[str], registry: Mapping[str, RewardFunc], task: str | None = None
) -> list[RewardFunc]:
    """The reward functions of ``registry`` for recipe ``names``, in order; an empty list, an unknown name or a
    repeated one (TRL would log both under one key) is a one-line ValueError, naming ``task`` when given.

    >>> select_reward_funcs(["b"], {"a": len, "b": abs}) == [abs]
    True
    """
    if isinstance(names, str):  # a bare string would be iterated character by character
        raise TypeError(f"reward_funcs must be a list of names, got the string {names!r}")
    names = list(names)
    available = ", ".join(sorted(registry))
    for_task = f" for task {task!r}" if task else ""
    if not names:
        raise ValueError(f"reward_funcs is empty; available{for_task}: {available}")
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise ValueError(f"unknown reward {unknown[0]!r} in reward_funcs{for_task}; available: {available}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"reward_funcs names {', '.join(map(repr, repeated))} more than once")
    return [registry[n] for n in names]


# ----------------------------------------------------------------------------------------------------------------
# Options
# ----------------------------------------------------------------------------------------------------------------

_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}


def _convert(task: str, key: str, raw: str, kind: Any) -> Any:
    origin = typing.get_origin(kind)
    if origin is Union:  # Optional[X]: "none" -> None, else X
        inner = [k for k in typing.get_args(kind) if k is not type(None)]
        if raw.strip().lower() in ("none", "null", ""):
            return None
        return _convert(task, key, raw, inner[0])
    if origin is tuple:
        inner = typing.get_args(kind)[0]
        return tuple(_convert(task, key, part.strip(), inner) for part in raw.split(",") if part.strip())
    if typing.get_origin(kind) is typing.Literal:
        choices = typing.get_args(kind)
        if raw not in choices:
            raise ValueError(f"task_options: {task} option {key}={raw!r}: expected one of {list(choices)}")
        return raw
    if kind is bool:
        if raw.strip().lower() in _TRUE:
            return True
        if raw.strip().lower() in _FALSE:
            return False
        raise ValueError(f"task_options: {task} option {key}={raw!r}: expected true or false")
    if kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            raise ValueError(f"task_options: {task} option {key}={raw!r}: expected a{'n int' if kind is int else ' number'}") from None
    return raw


def parse_options(task: str, options_cls: type, items: Sequence[str] | Mapping[str, Any] | None) -> Any:
    """Build ``options_cls`` (a frozen dataclass) from ``["key=value", ...]`` or a mapping; one-line errors.

    >>> @dataclass(frozen=True)
    ... class O:
    ...     unary_minus: bool = False
    >>> parse_options("countdown", O, ["unary_minus=true"])
    O(unary_minus=True)
    """
    hints = typing.get_type_hints(options_cls)
    known = {f.name for f in dataclasses.fields(options_cls) if f.init}  # init=False: derived, not given
    values: dict[str, Any] = {}
    if isinstance(items, Mapping):
        pairs = [(str(k), v) for k, v in items.items()]
    else:
        pairs = []
        for item in items or ():
            if not isinstance(item, str) or "=" not in item:
                raise ValueError(f"task_options: {item!r} is not key=value (e.g. {next(iter(known), 'key')}=...)")
            key, _, raw = item.partition("=")
            pairs.append((key.strip(), raw.strip()))
    for key, raw in pairs:
        if key not in known:
            choices = ", ".join(sorted(known)) or "none"
            raise ValueError(f"task_options: unknown {task} option {key!r}; known: {choices}")
        if key in values:
            raise ValueError(f"task_options: {task} option {key!r} given twice")
        values[key] = _convert(task, key, raw, hints[key]) if isinstance(raw, str) else raw
    try:
        return options_cls(**values)
    except ValueError as err:  # the options' own __post_init__ checks
        raise ValueError(f"task_options: {task}: {err}") from None


@dataclass(frozen=True)
class NoOptions:
    """A task without options."""


# ----------------------------------------------------------------------------------------------------------------
# The interface
# ----------------------------------------------------------------------------------------------------------------


class Task:
    """Base class of every task; subclasses set the class attributes and implement the methods below.

    Instances are cheap and hold the parsed options: ``get_task("gsm8k", ["answer_order=tags,boxed"])``.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    # ground-truth columns (after prepare_row) that rewards, judge and difficulty read
    columns: ClassVar[tuple[str, ...]]
    # the dataset train uses when a recipe names none; Hub ids the task knows -> {"config": name or None,
    # "train_split": ..., "test_split": ... or None}
    default_dataset: ClassVar[str]
    known_datasets: ClassVar[Mapping[str, Mapping[str, Any]]] = {}
    # split_method name -> (train_end, test_end): a fixed positional split of the source rows (e.g. TinyZero's)
    positional_splits: ClassVar[Mapping[str, tuple[int, int]]] = {}
    prompt_templates: ClassVar[Mapping[str, PromptTemplate]]
    default_template: ClassVar[str]
    default_reward_funcs: ClassVar[tuple[str, ...]]
    Options: ClassVar[type] = NoOptions

    def __init__(self, options: Sequence[str] | Mapping[str, Any] | None = None):
        self.options = parse_options(self.name, self.Options, options)

    # -- rows ---------------------------------------------------------------------------------------------------
    def prepare_row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """A source row in the dataset's own layout -> a row with :attr:`columns` (other columns kept).

        Raises ValueError with the problem (without the row number: the caller adds where) when it cannot.
        """
        return dict(row)

    def row_problem(self, row: Mapping[str, Any]) -> str | None:
        """Why a prepared row cannot be scored (one phrase naming the column), or None when it is fine."""
        raise NotImplementedError

    def dedupe_key(self, row: Mapping[str, Any]) -> Hashable:
        """Rows with equal keys are the same problem (kept once; never on both sides of a split)."""
        return tuple(repr(row[c]) for c in self.columns)

    def difficulty(self, row: Mapping[str, Any]) -> float:
        """A number that grows with difficulty (for easy-to-hard curricula)."""
        return 0.0

    def filter_row(self, row: Mapping[str, Any]) -> bool:
        """Whether a valid row is kept under the task's options (e.g. a MATH level filter); default all."""
        return True

    def blind_rule(self, rows: Sequence[Mapping[str, Any]]) -> Any | None:
        """The best rule that answers without reading what is asked (Countdown: a fixed expression over the numbers
        that never reads the target), with ``describe()``, ``accuracy`` and ``solved`` (one bool per row); None for a
        task that has none. Every accuracy of the task is reported beside it."""
        return None

    # -- prompts -----------------------------------------------------------------------------------------------
    def prompt(self, row: Mapping[str, Any], template: str | None = None) -> Prompt:
        """Render ``row`` with the named template (default: :attr:`default_template`)."""
        template = template or self.default_template
        try:
            spec = self.prompt_templates[template]
        except (KeyError, TypeError):
            raise ValueError(
                f"unknown prompt template {template!r} for task {self.name!r}; "
                f"choose one of {sorted(self.prompt_templates)}"
            ) from None
        return spec.render(row)

    # -- judging and rewards -------------------------------------------------------------------------------------
    def judge(self, text: str, row: Mapping[str, Any]) -> Verdict:
        """Outcome, extracted answer and main reward of one completion text for one prepared row."""
        raise NotImplementedError

    def reward_funcs(self) -> Mapping[str, RewardFunc]:
        """Recipe name -> TRL reward function (bound to this task's options); ``__name__`` names its log key."""
        raise NotImplementedError

    def get_reward_funcs(self, names: Sequence[str]) -> list[RewardFunc]:
        """The reward functions for recipe names, in order; unknown, repeated or no names are one-line errors.

        >>> from countdown_rl.tasks import get_task
        >>> [f.__name__ for f in get_task("countdown").get_reward_funcs(["countdown"])]
        ['countdown_reward']
        """
        return select_reward_funcs(names, self.reward_funcs(), task=self.name)

    # -- offline data ------------------------------------------------------------------------------------------
    def generate(self, n: int, seed: int = 0) -> list[dict[str, Any]]:
        """``n`` rows made offline (deterministic per seed), in the source dataset's column layout."""
        raise NotImplementedError

    def demonstration(self, row: Mapping[str, Any], template: str | None = None) -> str:
        """A correct completion for a prepared row after the named prompt template (default: the task's); what the
        SFT warm-up of :mod:`countdown_rl.training.warmup` learns."""
        raise NotImplementedError(f"task {self.name!r} has no demonstrations for a warm-up")
