"""The format-copy task: extraction, integer parsing, strictness, judging, seed 002's reward, rows, data."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from countdown_rl.tasks import get_task
from countdown_rl.tasks.base import Outcome, Verdict
from countdown_rl.tasks.format_copy import (
    MALFORMED_ROWS_METRIC,
    MAX_DIGITS,
    MAX_REWARD,
    REWARD_FUNCS,
    REWARD_VALUES,
    FormatCopyTask,
    extract_answer,
    format_copy_reward,
    generate_numbers,
    is_strict,
    judge_completion,
    parse_integer,
)
from tests.helpers.trl_calls import timed, trl_reward_call

# A bound on work, not a benchmark: linear scans of 100 KB take milliseconds; a quadratic one takes minutes.
BOUND_SECONDS = 1.0


def trl_call(func, completions, number, **extra):
    """Call ``func`` with every keyword TRL 1.16's GRPOTrainer passes to a sync reward function."""
    return trl_reward_call(func, completions, {"number": number}, prompt="Number: 4821\n", completion_tokens=8,
                           **extra)


# -------------------------------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer>4821</answer>", "4821"),
        ("<answer>  4821\n</answer>", "4821"),
        ("<answer>1</answer><answer>2</answer>", "2"),  # the last pair wins
        ("<answer>1</answer> <answer>2", "1"),  # an unclosed trailing tag is no pair
        ("<answer><answer>5</answer>", "5"),
        ("<answer></answer>", ""),
        ("<answer>\u00a07</answer>", "\u00a07"),  # only ASCII whitespace is stripped
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    "text", ["4821", "<answer>4821", "4821</answer>", "</answer>4821<answer>", "<ANSWER>1</ANSWER>", "", None, 4821]
)
def test_extract_answer_none(text):
    assert extract_answer(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("4821", 4821), ("0", 0), ("0042", 42), ("-7", -7), ("9" * MAX_DIGITS, int("9" * MAX_DIGITS))],
)
def test_parse_integer(text, expected):
    assert parse_integer(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "-", "+7", "--7", "4,821", "4821.0", "48 21", "1e3", "0x10", "four", "\u0663", "\uff17", "\u22127",
     "9" * (MAX_DIGITS + 1), "9" * 10_000, None, 7],
)
def test_parse_integer_rejects(text):
    assert parse_integer(text) is None


@pytest.mark.parametrize(
    ("text", "strict"),
    [
        ("<answer>4821</answer>", True),
        ("\n <answer>4821</answer>\n", True),  # ASCII whitespace around the pair is allowed
        ("<answer>oops</answer>", True),  # strictness is about the shape, not the content
        ("<answer></answer>", True),
        ("Sure: <answer>4821</answer>", False),
        ("<answer>4821</answer>.", False),
        ("<answer>4821</answer><|im_end|>", False),
        ("<answer>1</answer><answer>2</answer>", False),
        ("<answer><answer>2</answer>", False),
        ("<answer>4821", False),
        ("\u00a0<answer>4821</answer>", False),  # a no-break space is text outside the tags
        ("", False),
        (None, False),
    ],
)
def test_is_strict(text, strict):
    assert is_strict(text) is strict


# -------------------------------------------------------------------------------------------------- judging


@pytest.mark.parametrize(
    ("text", "number", "outcome", "answer", "reward"),
    [
        ("<answer>4821</answer>", 4821, Outcome.CORRECT, "4821", 1.3),
        (" <answer> 4821 </answer>\n", 4821, Outcome.CORRECT, "4821", 1.3),
        ("<answer>04821</answer>", 4821, Outcome.CORRECT, "04821", 1.3),  # the integer, not the string
        ("The number is <answer>4821</answer>", 4821, Outcome.CORRECT, "4821", 1.2),
        ("<answer>1</answer><answer>4821</answer>", 4821, Outcome.CORRECT, "4821", 1.2),
        ("<answer>4821</answer><answer>1</answer>", 4821, Outcome.PARTIAL, "1", 0.2),  # the last pair counts
        ("<answer>4812</answer>", 4821, Outcome.PARTIAL, "4812", 0.3),
        ("<answer>4,821</answer>", 4821, Outcome.PARTIAL, "4,821", 0.3),
        ("<answer>\u0664\u0668\u0662\u0661</answer>", 4821, Outcome.PARTIAL, "\u0664\u0668\u0662\u0661", 0.3),
        ("<answer></answer>", 4821, Outcome.PARTIAL, "", 0.3),
        ("ok <answer></answer>", 4821, Outcome.PARTIAL, "", 0.2),
        ("<answer>-0</answer>", 0, Outcome.CORRECT, "-0", 1.3),
        ("4821", 4821, Outcome.FAILED, None, 0.0),
        ("<answer>4821", 4821, Outcome.FAILED, None, 0.0),
        ("", 4821, Outcome.FAILED, None, 0.0),
    ],
)
def test_judge(text, number, outcome, answer, reward):
    assert FormatCopyTask().judge(text, {"number": number}) == Verdict(outcome, answer, reward)


def test_judge_caps_the_recorded_answer():
    verdict = judge_completion("<answer>" + "7" * 100_000 + "</answer>", 7)
    assert verdict.outcome is Outcome.PARTIAL and len(verdict.answer) == 200 and verdict.reward == 0.3


# -------------------------------------------------------------------------------------------------- rewards


def test_reward_parts_sum_to_the_documented_values():
    assert MAX_REWARD == pytest.approx(1.3) and REWARD_VALUES == (0.0, 0.2, 0.3, 1.2, 1.3)
    completions = ["<answer>4821</answer>", "Here: <answer>4821</answer>", "<answer>12</answer>",
                   "Here: <answer>12</answer>", "4821"]
    result, log = trl_call(format_copy_reward, completions, [4821] * 5)
    assert result == [1.3, 1.2, 0.3, 0.2, 0.0]  # exact floats: the sum is rounded to the documented value
    assert log.calls == [(MALFORMED_ROWS_METRIC, 0)]


def test_conversational_completions():
    completions = [[{"role": "assistant", "content": "<answer>7</answer>"}], [{"role": "assistant", "content": None}]]
    assert format_copy_reward(completions, number=[7, 7]) == [1.3, 0.0]


@pytest.mark.parametrize("bad", [None, "4821", 4821.0, True, [4821], 10**MAX_DIGITS])
def test_malformed_number_scores_none_and_is_counted(bad):
    result, log = trl_call(format_copy_reward, ["<answer>4821</answer>"] * 3, [4821, bad, bad])
    assert result == [1.3, None, None]
    assert log.calls == [(MALFORMED_ROWS_METRIC, 2)]


def test_numpy_integers_are_accepted():
    np = pytest.importorskip("numpy")
    assert format_copy_reward(["<answer>7</answer>"] * 2, number=[np.int64(7), np.int32(7)]) == [1.3, 1.3]


def test_batch_shape_errors():
    with pytest.raises(ValueError, match="number"):
        format_copy_reward(["<answer>7</answer>"])
    with pytest.raises(ValueError, match="mismatched"):
        format_copy_reward(["<answer>7</answer>"] * 2, number=[7])


def test_reward_names_registry_and_pickling():
    assert {name: f.__name__ for name, f in REWARD_FUNCS.items()} == {"format_copy": "format_copy_reward"}
    assert get_task("format_copy").get_reward_funcs(["format_copy"]) == [format_copy_reward]
    assert pickle.loads(pickle.dumps(format_copy_reward)) is format_copy_reward


ADVERSARIAL = {
    "10,000 digits in tags": "<answer>" + "9" * 10_000 + "</answer>",
    "100 KB outside strict tags": "x" * 100_000 + "<answer>7</answer>",
    "open tags": "<answer>" * 12_500,
    "close tags": "</answer>" * 11_000,
    "many pairs": "<answer>7</answer>" * 5_800,
    "unicode digits": "<answer>" + "\u0667" * 100_000 + "</answer>",
    "minus signs": "<answer>" + "-" * 100_000 + "7</answer>",
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_adversarial_completions_are_scored_promptly(name):
    result, seconds = timed(format_copy_reward, [ADVERSARIAL[name]], number=[7])
    assert result[0] in REWARD_VALUES and seconds < BOUND_SECONDS, (name, result, seconds)


def test_adversarial_values():
    values = {name: format_copy_reward([text], number=[7])[0] for name, text in ADVERSARIAL.items()}
    assert values == {
        "10,000 digits in tags": 0.3,
        "100 KB outside strict tags": 1.2,
        "open tags": 0.0,
        "close tags": 0.0,
        "many pairs": 1.2,
        "unicode digits": 0.3,
        "minus signs": 0.3,
    }


texts = st.one_of(
    st.text(max_size=200),
    st.lists(st.sampled_from(["<answer>", "</answer>", "7", "42", "-", " ", "\n", "x", "\u0667", "0"]), max_size=30)
    .map("".join),
)


@settings(deadline=None, max_examples=300)
@given(texts, st.integers(min_value=0, max_value=10**MAX_DIGITS - 1))
def test_reward_on_arbitrary_text_is_a_documented_value(text, number):
    reward = format_copy_reward([text], number=[number])[0]
    verdict = judge_completion(text, number)
    assert reward in REWARD_VALUES and reward == verdict.reward
    # the parts are consistent with the outcome
    assert (verdict.outcome is Outcome.FAILED) == (reward == 0.0)
    assert (verdict.outcome is Outcome.CORRECT) == (reward >= 1.0)


@settings(deadline=None, max_examples=25)
@given(texts.filter(bool))
def test_reward_on_100kb_of_arbitrary_text_is_bounded(text):
    big = (text * (100_000 // len(text) + 1))[:100_000]
    result, seconds = timed(format_copy_reward, [big], number=[42])
    assert result[0] in REWARD_VALUES and seconds < BOUND_SECONDS


@settings(deadline=None, max_examples=200)
@given(st.integers(min_value=0, max_value=10**MAX_DIGITS - 1), st.sampled_from(["", " ", "\n"]))
def test_copying_any_number_earns_the_maximum(number, space):
    assert format_copy_reward([f"{space}<answer>{number}</answer>{space}"], number=[number]) == [1.3]


# ----------------------------------------------------------------------------------------------------- rows


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"number": "12"}, "'number' is '12', expected an integer of at most 18 digits"),
        ({"number": 1.5}, "'number' is 1.5, expected an integer"),
        ({"number": None}, "'number' is None, expected an integer"),
        ({"number": True}, "'number' is True, expected an integer"),
        ({"number": 10**MAX_DIGITS}, "'number' is 1000000000000000000, expected an integer of at most 18 digits"),
        ({}, "'number' is missing"),
    ],
)
def test_row_problem_names_the_column(row, message):
    assert FormatCopyTask().row_problem(row).startswith(message)


def test_valid_rows_dedupe_and_difficulty():
    task = FormatCopyTask()
    assert task.row_problem({"number": 4821}) is None and task.row_problem({"number": -5}) is None
    assert task.prepare_row({"number": 7}) == {"number": 7}
    assert task.dedupe_key({"number": 7}) == task.dedupe_key({"number": 7, "other": 1})
    assert task.dedupe_key({"number": 7}) != task.dedupe_key({"number": 8})
    assert [task.difficulty({"number": n}) for n in (0, 7, 42, 4821, -305)] == [1.0, 1.0, 2.0, 4.0, 3.0]


# -------------------------------------------------------------------------------------------------- options


def test_options_parse():
    assert (get_task("format_copy").options.min_digits, get_task("format_copy").options.max_digits) == (1, 4)
    options = get_task("format_copy", ["min_digits=2", "max_digits=6"]).options
    assert (options.min_digits, options.max_digits) == (2, 6)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["digits=3"], "unknown format_copy option 'digits'; known: max_digits, min_digits"),
        (["min_digits=x"], "option min_digits='x': expected an int"),
        (["min_digits=0"], "min_digits=0: expected 1 to 18"),
        (["max_digits=19"], "max_digits=19: expected min_digits (1) to 18"),
        (["min_digits=5", "max_digits=3"], "max_digits=3: expected min_digits (5) to 18"),
        (["min_digits=2", "min_digits=3"], "option 'min_digits' given twice"),
    ],
)
def test_bad_options_are_one_line_errors_naming_the_key(options, message):
    with pytest.raises(ValueError) as err:
        get_task("format_copy", options)
    assert message in str(err.value) and "\n" not in str(err.value)


# -------------------------------------------------------------------------------------------------- prompts


def test_registry_and_facts():
    task = get_task("format_copy")
    assert isinstance(task, FormatCopyTask) and task.name == "format_copy"
    assert task.columns == ("number",) and task.default_dataset == "generated"
    assert task.default_template == "plain" and task.default_reward_funcs == ("format_copy",)


def test_prompt_templates():
    task = get_task("format_copy")
    plain = task.prompt({"number": 4821})
    assert isinstance(plain, str) and plain.endswith("Number: 4821\n") and "<answer>" in plain
    assert not task.prompt_templates["plain"].conversational
    chat = task.prompt({"number": 4821}, "chat")
    assert [m["role"] for m in chat] == ["system", "user"] and chat[1]["content"].endswith("Number: 4821")
    assert task.prompt_templates["chat"].conversational


# ------------------------------------------------------------------------------------------- generated data


def test_generate_is_deterministic_per_seed():
    task = get_task("format_copy")
    assert task.generate(50, seed=1) == task.generate(50, seed=1) != task.generate(50, seed=2)
    assert task.generate(0) == []


def test_generated_rows_are_valid_distinct_and_spread_over_digit_counts():
    task = get_task("format_copy")
    rows = task.generate(2000, seed=0)
    assert all(set(row) == {"number"} and task.row_problem(row) is None for row in rows)
    assert len({row["number"] for row in rows}) == 2000
    counts = {d: sum(1 for row in rows if task.difficulty(row) == d) for d in (1.0, 2.0, 3.0, 4.0)}
    assert counts == {1.0: 10, 2.0: 90, 3.0: 900, 4.0: 1000}  # the short pools are exhausted, the rest share
    assert {task.difficulty(row) for row in rows[:100]} >= {3.0, 4.0}  # shuffled, not grouped by length
    for row in rows[:200]:
        assert task.judge(f"<answer>{row['number']}</answer>", row) == Verdict(Outcome.CORRECT, str(row["number"]), 1.3)


def test_generate_follows_the_digit_options_and_refuses_too_many_rows():
    rows = get_task("format_copy", ["min_digits=3", "max_digits=3"]).generate(900, seed=0)
    assert sorted(row["number"] for row in rows) == list(range(100, 1000))
    rows = get_task("format_copy", ["min_digits=18", "max_digits=18"]).generate(5, seed=0)
    assert all(len(str(row["number"])) == 18 for row in rows)
    with pytest.raises(ValueError, match="cannot make 11 distinct numbers of 1-1 digits"):
        generate_numbers(11, min_digits=1, max_digits=1)
    assert sorted(r["number"] for r in generate_numbers(10, min_digits=1, max_digits=1)) == list(range(10))
