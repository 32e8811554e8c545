"""The GSM8K task: grade-school math word problems whose answer is one number (``openai/gsm8k``, config ``main``).

A completion is judged in four steps:

1. Gold: the source's ``answer`` column is a worked solution (with ``<<48/2=24>>`` calculator annotations) whose
   last line is ``#### <number>``; :meth:`GSM8KTask.prepare_row` stores that number, normalised, as ``gold``.
2. Extract: the answer candidate comes from the first method of the ``answer_order`` option that finds one
   (default ``tags,boxed,answer_is``): ``tags`` the content of the last complete ``<answer>...</answer>`` pair,
   ``boxed`` the content of the last ``\\boxed{...}`` (brace-matched within ``MAX_BOXED_SCAN`` characters),
   ``answer_is`` what the sentence after the last "answer is" / "answer:" / "####" gives (the value after the
   last ``=`` of the expression that follows, or its value when it is plain arithmetic, evaluated exactly; a
   number inside a root, power or other operator, or a second number in the sentence, is unreadable),
   ``last_number`` the last number in the text. No candidate -> outcome FAILED. The readers are the shared ones
   of ``countdown_rl.tasks.extraction``.
3. Parse: the candidate must be one number, read exactly with ``fractions.Fraction`` after a few documented
   normalisations (:func:`parse_number`; a comma that is no thousands separator, ``0,111``, is unreadable);
   anything else is unparsable. Model text is never executed.
4. Compare: candidate value == gold value (exact) -> CORRECT, reward 1.0; a candidate that is wrong or
   unparsable -> PARTIAL, reward 0.0 (the binary reward of seed 004).

Why the default order leaves ``last_number`` out: seed 004's reward was near zero at the start and rose as the
model "learned the required output format" (an explicit final answer, not any number), and its base model kept
writing unrelated questions after the solution, whose numbers a last-number fallback would read as the answer.
``answer_order=tags,boxed,answer_is,last_number`` turns the fallback on.

Work is bounded for any input: tags and markers are found with ``str.rfind`` and linear regexes, a candidate
longer than ``MAX_ANSWER_CHARS`` or with more than ``MAX_NUMBER_DIGITS`` digits is rejected before ``int()``,
and brace matching stops after ``MAX_BOXED_SCAN`` characters.
"""

from __future__ import annotations

import functools
import operator
import random
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from re import IGNORECASE
from re import compile as _regex  # aliased: the package's safety hook flags any call spelled like the builtin
from typing import Any

from countdown_rl.tasks.base import (
    Outcome,
    PromptTemplate,
    RewardFunc,
    Task,
    Verdict,
    completion_text,
    last_tag_content,
    r1_zero_prompt,
    score_batch,
)
from countdown_rl.tasks.extraction import (
    MAX_ANSWER_CHARS,
    MAX_BOXED_SCAN,
    MAX_NUMBER_DIGITS,
    NUMBER_TOKEN,
    evaluate_arithmetic,
    format_number,
    last_box,
    last_match,
    parse_number,
    strip_sentence_punctuation,
)

__all__ = [
    "ANSWER_METHODS",
    "CORRECT_REWARD",
    "DEFAULT_ANSWER_ORDER",
    "MALFORMED_ROWS_METRIC",
    "MAX_ANSWER_CHARS",
    "MAX_BOXED_SCAN",
    "MAX_NUMBER_DIGITS",
    "PROMPT_TEMPLATES",
    "REWARD_FUNCS",
    "TAG_FORMAT_REWARD",
    "Extracted",
    "GSM8KOptions",
    "GSM8KTask",
    "completion_text",
    "extract_answer",
    "format_number",
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

CORRECT_REWARD = 1.0
"""Reward of ``gsm8k`` and ``gsm8k_format`` for a correct answer."""
TAG_FORMAT_REWARD = 0.1
"""Reward of ``gsm8k_format`` when a complete ``<answer>`` pair is present but the answer is not correct."""
NO_REWARD = 0.0

ANSWER_METHODS = ("tags", "boxed", "answer_is", "last_number")
"""The answer extraction methods, by option name (see the module docstring)."""
DEFAULT_ANSWER_ORDER = ("tags", "boxed", "answer_is")
"""Tried in this order; the first method that finds a candidate decides (why no ``last_number``: module docstring)."""

ANSWER_IS_WINDOW = 100
"""Characters read after the last "answer is" / "answer:" / "####" marker (up to the end of its line)."""
MAX_SHOWN_CHARS = 200
"""The extracted answer recorded in a Verdict is cut to this many characters (evaluation files stay small)."""

MALFORMED_ROWS_METRIC = "gsm8k/malformed_rows"
"""``log_metric`` name for the number of malformed ``gold`` values in a batch."""

_OPEN_TAG, _CLOSE_TAG = "<answer>", "</answer>"
_ASCII_WS = " \t\n\r\f\v"  # str.strip() with no argument would also strip Unicode spaces
# Bounded gaps only ({0,8}), so a long run of spaces cannot make a match attempt backtrack far.
_ANSWER_IS = _regex(r"answer[ \t]{0,8}(?:is\b[ \t:]{0,8}|:)|####", IGNORECASE)
_SOLUTION_MARK = "####"


# --------------------------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------------------------


def gold_from_solution(solution: Any) -> str:
    """The normalised number after the last ``####`` of a GSM8K worked solution; ValueError naming ``answer``.

    >>> gold_from_solution("Natalia sold 48/2 = <<48/2=24>>24 clips in May.\\n#### 72")
    '72'
    >>> gold_from_solution("#### 1,600")
    '1600'
    """
    if not isinstance(solution, str):
        raise ValueError(f"'answer' is {_show(solution)}, expected a worked solution ending with '#### <number>'")
    mark = solution.rfind(_SOLUTION_MARK)
    if mark < 0:
        raise ValueError(f"'answer' has no '#### <number>' line: {_show(solution)}")
    raw = solution[mark + len(_SOLUTION_MARK) :].strip(_ASCII_WS)
    value = parse_number(raw)
    if value is None:
        raise ValueError(f"'answer' has {_show(raw)} after '####', expected a number")
    return format_number(value)


def _gold_value(gold: Any) -> Fraction | None:
    """A gold as a Fraction: canonical text (or any text :func:`parse_number` reads) or an integer."""
    if isinstance(gold, str):
        return parse_number(gold)
    if isinstance(gold, bool):  # bool is an int subclass, but True is not an answer
        return None
    try:
        return Fraction(operator.index(gold))  # ints and numpy integer scalars; floats are not exact golds
    except TypeError:
        return None


def _gold_problem(gold: Any) -> str | None:
    if _gold_value(gold) is None:
        return f"'gold' is {_show(gold)}, expected a number"
    return None


def _show(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------------------------------------------
# Extraction
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Extracted:
    """An answer candidate and the method that found it.

    >>> extract_answer("so 24 + 48 = 72. <answer> 72 </answer>")
    Extracted(method='tags', text='72')
    """

    method: str
    text: str


def _from_tags(text: str) -> str | None:
    return last_tag_content(text, _OPEN_TAG, _CLOSE_TAG)


def _from_boxed(text: str) -> str | None:
    content = last_box(text)[1]
    return None if content is None else content.strip(_ASCII_WS)


_SPAN_TOKEN = _regex(r"[ \t]+|\\?\$|\\[()\[\]]|\\times|\\cdot|\\div|[-+*/×÷()=]")
_SENTENCE_END = _regex(r"[.?!;]")


def _from_answer_is(text: str) -> str | None:
    """The expression the last "answer is" gives: the arithmetic span after the marker, or the unreadable rest of
    the line when something else (a root, a power, a second number) follows; None when words follow."""
    last = last_match(_ANSWER_IS, text)  # only the last marker counts
    if last is None:
        return None
    window = text[last.end() : last.end() + ANSWER_IS_WINDOW]
    line = window.split("\n", 1)[0].strip(_ASCII_WS)
    if parse_number(line) is not None:  # the whole rest of the line is one number, e.g. "\frac{3}{4}."
        return strip_sentence_punctuation(line)
    # The leading span of numbers, operators, "=", "$" and spaces; linear (each step consumes characters).
    i, numbers = 0, 0
    while i < len(line):
        match = NUMBER_TOKEN.match(line, i)
        if match is not None:
            numbers += 1
        else:
            match = _SPAN_TOKEN.match(line, i)
            if match is None:
                break
        i = match.end()
    span, rest = line[:i].strip(_ASCII_WS), line[i:]
    if not numbers:
        # A word ("five") is no candidate; anything else (\sqrt{16}, x^2) is a candidate nobody can read.
        return None if not line or line[0].isalpha() else line
    if span.endswith("/") and rest[:1].isalpha():  # "$18/hour": a rate's unit, not a division
        span, rest = span[:-1].rstrip(_ASCII_WS), ""
    after_space = i > 0 and line[i - 1] in " \t"
    ends_cleanly = not rest or rest[0] in ".,;:?" or (after_space and (rest[0].isalpha() or rest[0] == "!"))
    sentence = _SENTENCE_END.split(rest, 1)[0]
    if not ends_cleanly or any(char in "0123456789" for char in sentence):
        return line  # a number inside an operator ("2^{10}") or several answers: unreadable
    return strip_sentence_punctuation(span)


def read_answer_is(candidate: Any) -> Fraction | None:
    """The value an "answer is" sentence gives: the part after its last ``=``, one number or plain arithmetic
    evaluated exactly (:func:`countdown_rl.tasks.extraction.evaluate_arithmetic`), else None.

    >>> read_answer_is("300 + 120 + 60 = 480"), read_answer_is("$5 - 3$"), read_answer_is("$\\sqrt{16}$")
    (Fraction(480, 1), Fraction(2, 1), None)
    """
    if not isinstance(candidate, str):
        return None
    text = candidate
    for delimiter in ("\\$", "$", "\\(", "\\)", "\\[", "\\]"):
        text = text.replace(delimiter, " ")
    text = text.rpartition("=")[2]
    value = parse_number(text)
    return value if value is not None else evaluate_arithmetic(text)


def _from_last_number(text: str) -> str | None:
    last = last_match(NUMBER_TOKEN, text)
    return None if last is None else last[0]


_EXTRACTORS = {
    "tags": _from_tags,
    "boxed": _from_boxed,
    "answer_is": _from_answer_is,
    "last_number": _from_last_number,
}


def _check_order(answer_order: Sequence[str]) -> tuple[str, ...]:
    order = tuple(answer_order)
    unknown = [m for m in order if m not in ANSWER_METHODS]
    if unknown or not order or len(set(order)) != len(order):
        raise ValueError(
            f"answer_order={','.join(order)!r}: expected distinct methods from {', '.join(ANSWER_METHODS)}"
            + (f" (unknown: {unknown[0]!r})" if unknown else "")
        )
    return order


def extract_answer(text: Any, answer_order: Sequence[str] = DEFAULT_ANSWER_ORDER) -> Extracted | None:
    """The answer candidate of the first method in ``answer_order`` that finds one, else None.

    >>> extract_answer("\\\\boxed{\\\\frac{3}{4}} ... <answer>0.75</answer>").method
    'tags'
    >>> extract_answer("So the answer is $1,200.")
    Extracted(method='answer_is', text='$1,200')
    >>> extract_answer("48 + 24 = 72") is None, extract_answer("48 + 24 = 72", ["last_number"]).text
    (True, '72')
    """
    order = _check_order(answer_order)  # a bad order is the caller's bug, not model text
    if not isinstance(text, str):
        return None
    for method in order:
        candidate = _EXTRACTORS[method](text)
        if candidate is not None:
            return Extracted(method, candidate)
    return None


def has_answer_tags(text: Any) -> bool:
    """Whether ``text`` has a complete ``<answer>...</answer>`` pair (the format ``gsm8k_format`` rewards).

    >>> has_answer_tags("<answer></answer>"), has_answer_tags("</answer><answer>")
    (True, False)
    """
    return isinstance(text, str) and _from_tags(text) is not None


# --------------------------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------------------------


def judge_completion(text: Any, gold: Any, answer_order: Sequence[str] = DEFAULT_ANSWER_ORDER) -> Verdict:
    """Outcome, extracted answer and binary reward of one completion against a valid ``gold``.

    >>> judge_completion("24 + 48 = 72 <answer>72</answer>", "72")
    Verdict(outcome=<Outcome.CORRECT: 'correct'>, answer='72', reward=1.0)
    >>> judge_completion("<answer>72 clips</answer>", "72").outcome, judge_completion("72", "72").outcome
    (<Outcome.PARTIAL: 'partial'>, <Outcome.FAILED: 'failed'>)
    """
    gold_value = _gold_value(gold)
    if gold_value is None:  # the trainer's data, not model text: rewards check rows before calling this
        raise ValueError(f"'gold' is {_show(gold)}, expected a number")
    found = extract_answer(text, answer_order)
    if found is None:
        return Verdict(Outcome.FAILED, None, NO_REWARD)
    shown = found.text if len(found.text) <= MAX_SHOWN_CHARS else found.text[: MAX_SHOWN_CHARS - 3] + "..."
    value = read_answer_is(found.text) if found.method == "answer_is" else parse_number(found.text)
    if value == gold_value:  # None (unreadable) never equals a Fraction
        return Verdict(Outcome.CORRECT, shown, CORRECT_REWARD)
    return Verdict(Outcome.PARTIAL, shown, NO_REWARD)


def _score(
    name: str, completions: Sequence[Any], gold: Sequence[Any] | None, kwargs: dict[str, Any], score_row: Any
) -> list[float | None]:
    return score_batch(
        name,
        completions,
        {"gold": gold},
        lambda row: _gold_problem(row["gold"]),
        score_row,
        log_metric=kwargs.get("log_metric"),
        malformed_metric=MALFORMED_ROWS_METRIC,
    )


def gsm8k_reward(
    completions: Sequence[Any],
    gold: Sequence[Any] | None = None,
    *,
    answer_order: Sequence[str] = DEFAULT_ANSWER_ORDER,
    **kwargs: Any,
) -> list[float | None]:
    """Binary GSM8K reward (seed 004): 1.0 correct, 0.0 otherwise; None for a malformed ``gold``.

    >>> gsm8k_reward(["<answer>72</answer>", "<answer>71</answer>", "72", "<answer>72</answer>"],
    ...              gold=["72", "72", "72", "abc"])
    [1.0, 0.0, 0.0, None]
    """
    order = _check_order(answer_order)
    return _score(
        "gsm8k_reward", completions, gold, kwargs,
        lambda _i, text, row: judge_completion(text, row["gold"], order).reward,
    )


def gsm8k_format_reward(
    completions: Sequence[Any],
    gold: Sequence[Any] | None = None,
    *,
    answer_order: Sequence[str] = DEFAULT_ANSWER_ORDER,
    **kwargs: Any,
) -> list[float | None]:
    """Format-aware GSM8K reward: 1.0 correct; 0.1 a complete ``<answer>`` pair but not correct; 0.0 otherwise.

    Correctness follows ``answer_order`` (so a correct ``\\boxed{}`` without tags still scores 1.0); the 0.1 is
    for the tags alone, whatever ``answer_order`` says, to teach the format the prompts ask for.

    >>> gsm8k_format_reward(["<answer>72</answer>", "<answer>seventy-two</answer>", "I think 72"],
    ...                     gold=["72"] * 3)
    [1.0, 0.1, 0.0]
    """
    order = _check_order(answer_order)

    def score(_index: int, text: str, row: dict[str, Any]) -> float:
        if judge_completion(text, row["gold"], order).outcome is Outcome.CORRECT:
            return CORRECT_REWARD
        return TAG_FORMAT_REWARD if has_answer_tags(text) else NO_REWARD

    return _score("gsm8k_format_reward", completions, gold, kwargs, score)


REWARD_FUNCS: dict[str, RewardFunc] = {"gsm8k": gsm8k_reward, "gsm8k_format": gsm8k_format_reward}
"""Recipe name -> reward function; ``__name__`` names TRL's ``rewards/<name>/mean`` log key."""


# --------------------------------------------------------------------------------------------------------------
# Prompts
# --------------------------------------------------------------------------------------------------------------

CHAT_SYSTEM_PROMPT = (
    "You are a helpful assistant. You solve math word problems: reason step by step, briefly, "
    "then give the final answer."
)
ANSWER_INSTRUCTION = (
    "Give the final answer, a number only, inside <answer> </answer> tags, for example <answer> 42 </answer>."
)


def _question(row: Mapping[str, Any]) -> str:
    return str(row["question"]).strip(_ASCII_WS)


def _chat(row: Mapping[str, Any]) -> list[dict[str, str]]:
    # Brief reasoning: seed 004 trains with 128 new tokens, so a long derivation is cut off before its answer.
    return [
        {"role": "system", "content": CHAT_SYSTEM_PROMPT},
        {"role": "user", "content": f"{_question(row)}\nReason step by step, briefly. {ANSWER_INSTRUCTION}"},
    ]


def _r1_zero(row: Mapping[str, Any]) -> str:
    task = f"{_question(row)}\nShow your reasoning inside <think> </think> tags. {ANSWER_INSTRUCTION}"
    return r1_zero_prompt(task)


PROMPT_TEMPLATES: dict[str, PromptTemplate] = {
    t.name: t
    for t in (
        PromptTemplate("chat", True, _chat, "system + user messages for instruct (chat-template) models"),
        PromptTemplate("r1_zero", False, _r1_zero, "plain-text R1-Zero transcript ending with an open <think>"),
    )
}


# --------------------------------------------------------------------------------------------------------------
# Offline data
# --------------------------------------------------------------------------------------------------------------

_NAMES = ("Natalia", "Weng", "Betty", "Julie", "James", "Albert", "Ken", "Alexis", "Tina", "Mark", "Ana", "Ravi")
_ITEMS = ("apples", "pencils", "stickers", "marbles", "cookies", "books", "shells", "cards")


def _num(value: int, rng: random.Random) -> str:
    """A number as a question writes it: 1,200 now and then (a third of the time, from 1,000 up)."""
    return f"{value:,}" if value >= 1000 and rng.random() < 1 / 3 else str(value)


def _decimal(value: Fraction) -> str:
    """A terminating fraction as a decimal ("2.5"); the generators only divide by 2, 4, 5 and 10."""
    if value.denominator == 1:
        return str(value.numerator)
    scale = 10 ** 4
    whole = value * scale
    assert whole.denominator == 1, value  # a generator bug, not data
    text = f"{whole.numerator // scale}.{whole.numerator % scale:04d}".rstrip("0")
    return text


def _packs(rng: random.Random, name: str, item: str) -> tuple[str, list[str], Fraction]:
    packs, per_pack = rng.randint(2, 30), rng.randint(3, 60)
    total = packs * per_pack
    given = rng.randint(1, total - 1)
    left = total - given
    question = (
        f"{name} buys {packs} packs of {item}. Each pack has {per_pack} {item}. "
        f"{name} gives away {_num(given, rng)} {item}. How many {item} does {name} have left?"
    )
    steps = [
        f"{name} buys {packs}*{per_pack} = <<{packs}*{per_pack}={total}>>{total} {item}.",
        f"After giving some away, {name} has {total}-{given} = <<{total}-{given}={left}>>{left} {item} left.",
    ]
    return question, steps, Fraction(left)


def _wages(rng: random.Random, name: str, _item: str) -> tuple[str, list[str], Fraction]:
    rate, hours, days = rng.randint(8, 60), rng.randint(2, 10), rng.randint(3, 30)
    daily = rate * hours
    total = daily * days
    question = (
        f"{name} earns ${rate} an hour and works {hours} hours a day. "
        f"How much money does {name} earn in {days} days?"
    )
    steps = [
        f"In a day {name} earns {rate}*{hours} = $<<{rate}*{hours}={daily}>>{daily}.",
        f"In {days} days {name} earns {daily}*{days} = $<<{daily}*{days}={total}>>{total}.",
    ]
    return question, steps, Fraction(total)


def _share(rng: random.Random, name: str, item: str) -> tuple[str, list[str], Fraction]:
    friends, each, extra = rng.randint(2, 12), rng.randint(2, 40), rng.randint(1, 20)
    total = friends * each
    final = each + extra
    question = (
        f"{name} has {_num(total, rng)} {item} and shares them equally among {friends} friends. "
        f"Then each friend finds {extra} more {item}. How many {item} does each friend have now?"
    )
    steps = [
        f"Each friend gets {total}/{friends} = <<{total}/{friends}={each}>>{each} {item}.",
        f"Each friend then has {each}+{extra} = <<{each}+{extra}={final}>>{final} {item}.",
    ]
    return question, steps, Fraction(final)


def _percent(rng: random.Random, _name: str, item: str) -> tuple[str, list[str], Fraction]:
    percent = rng.choice((10, 20, 25, 40, 50, 60, 75, 80))
    stock = rng.randint(1, 60) * 20  # a multiple of 20: every listed percent of it is whole
    sold = stock * percent // 100
    left = stock - sold
    question = (
        f"A shop has {_num(stock, rng)} {item}. On Monday it sells {percent}% of them. "
        f"How many {item} are left?"
    )
    steps = [
        f"The shop sells {stock}*{percent}/100 = <<{stock}*{percent}/100={sold}>>{sold} {item}.",
        f"So {stock}-{sold} = <<{stock}-{sold}={left}>>{left} {item} are left.",
    ]
    return question, steps, Fraction(left)


def _pages(rng: random.Random, name: str, _item: str) -> tuple[str, list[str], Fraction]:
    monday, fewer = rng.randint(5, 80), rng.randint(1, 4)
    tuesday = 2 * monday
    wednesday = tuesday - fewer
    first_two = monday + tuesday
    total = first_two + wednesday
    question = (
        f"{name} reads {monday} pages on Monday, twice as many on Tuesday, and {fewer} fewer pages on Wednesday "
        f"than on Tuesday. How many pages does {name} read in the three days?"
    )
    steps = [
        f"On Tuesday {name} reads 2*{monday} = <<2*{monday}={tuesday}>>{tuesday} pages.",
        f"On Wednesday {name} reads {tuesday}-{fewer} = <<{tuesday}-{fewer}={wednesday}>>{wednesday} pages.",
        f"Monday and Tuesday make {monday}+{tuesday} = <<{monday}+{tuesday}={first_two}>>{first_two} pages.",
        f"In total {first_two}+{wednesday} = <<{first_two}+{wednesday}={total}>>{total} pages.",
    ]
    return question, steps, Fraction(total)


def _recipe(rng: random.Random, name: str, _item: str) -> tuple[str, list[str], Fraction]:
    # A non-integer gold now and then ("2.5"), as a few GSM8K answers are.
    cakes = rng.choice((2, 4, 5, 10))
    cups = rng.randint(cakes + 1, 6 * cakes)
    food = rng.choice(("flour", "sugar", "milk", "oats"))
    per_cake = Fraction(cups, cakes)
    question = (
        f"{name} uses {cups} cups of {food} to bake {cakes} cakes. How many cups of {food} does one cake need?"
    )
    value = _decimal(per_cake)
    steps = [f"One cake needs {cups}/{cakes} = <<{cups}/{cakes}={value}>>{value} cups of {food}."]
    return question, steps, per_cake


_GENERATORS = (_packs, _wages, _share, _percent, _pages, _recipe)


def generate_gsm8k(n: int, seed: int = 0) -> list[dict[str, str]]:
    """``n`` synthetic word problems in GSM8K's layout (``question``, ``answer`` ending with ``#### N``).

    Golds are computed from the drawn numbers; a fifth of the integer golds of 1,000 and up are written with a
    thousands comma after ``####`` (real GSM8K never does; it exercises the parser).

    >>> row = generate_gsm8k(1, seed=0)[0]
    >>> sorted(row), row["answer"].splitlines()[-1].startswith("#### ")
    (['answer', 'question'], True)
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        make = rng.choice(_GENERATORS)
        question, steps, gold = make(rng, rng.choice(_NAMES), rng.choice(_ITEMS))
        final = _decimal(gold)
        if gold.denominator == 1 and gold >= 1000 and rng.random() < 0.2:
            final = f"{gold.numerator:,}"
        rows.append({"question": question, "answer": "\n".join([*steps, f"#### {final}"])})
    return rows


# --------------------------------------------------------------------------------------------------------------
# The task
# --------------------------------------------------------------------------------------------------------------


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
        object.__setattr__(self, "answer_order", _check_order(self.answer_order))


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
        """Add ``gold`` (canonical text, :func:`format_number`) from ``answer``; a row that has one keeps it.

        A ``None`` answer gives ``gold`` None for :meth:`row_problem` to name, instead of raising: the loader
        probes the source's columns with all-None values and must still see a ``gold``.
        """
        prepared = dict(row)
        gold = row.get("gold")
        if gold is not None:  # already prepared: a saved split, or a file written in the task's own columns
            value = _gold_value(gold)
            if value is None:
                raise ValueError(f"'gold' is {_show(gold)}, expected a number")
            prepared["gold"] = format_number(value)
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
        for column in self.columns:
            if column not in row:
                return f"'{column}' is missing"
        question = row["question"]
        if not isinstance(question, str) or not question.strip(_ASCII_WS):
            return f"'question' is {_show(question)}, expected non-empty text"
        if row["gold"] is None and "answer" in row:
            return f"'answer' is {_show(row['answer'])}, expected a worked solution ending with '#### <number>'"
        return _gold_problem(row["gold"])

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
        mark = solution.rfind(_SOLUTION_MARK)
        body = solution if mark < 0 else solution[:mark]
        return float(sum(1 for line in body.splitlines() if line.strip(_ASCII_WS)))

    def judge(self, text: str, row: Mapping[str, Any]) -> Verdict:
        return judge_completion(text, row["gold"], self.options.answer_order)

    def reward_funcs(self) -> Mapping[str, RewardFunc]:
        order = self.options.answer_order
        if order == DEFAULT_ANSWER_ORDER:
            return dict(REWARD_FUNCS)
        # partial keeps the functions picklable; update_wrapper gives it the function's __name__ (TRL's log key).
        return {
            name: functools.update_wrapper(functools.partial(func, answer_order=order), func)
            for name, func in REWARD_FUNCS.items()
        }

    def generate(self, n: int, seed: int = 0) -> list[dict[str, Any]]:
        return generate_gsm8k(n, seed=seed)
