"""The GSM8K task: number parsing, answer extraction, judging, rewards, rows, options, prompts, generated data."""

from __future__ import annotations

import json
import pickle
import re
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from countdown_rl.tasks import get_task
from countdown_rl.tasks.base import Outcome, Verdict
from countdown_rl.tasks.gsm8k import (
    ANSWER_METHODS,
    DEFAULT_ANSWER_ORDER,
    MALFORMED_ROWS_METRIC,
    MAX_BOXED_SCAN,
    REWARD_FUNCS,
    Extracted,
    GSM8KTask,
    extract_answer,
    format_number,
    gold_from_solution,
    gsm8k_format_reward,
    gsm8k_reward,
    judge_completion,
    parse_number,
)
from tests.helpers.trl_calls import timed, trl_reward_call

# A bound on work, not a benchmark: linear scans of 100 KB take milliseconds; a quadratic one takes minutes.
BOUND_SECONDS = 1.0
REAL_ROW = {
    "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
    "How many clips did Natalia sell altogether in April and May?",
    "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
    "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72",
}
GOLD_ROW = {"question": REAL_ROW["question"], "gold": "72"}


def trl_call(func, completions, gold, **extra):
    """Call ``func`` with every keyword TRL 1.16's GRPOTrainer passes to a sync reward function."""
    n = len(completions)
    # the other dataset columns come along too
    columns = {"gold": gold, "question": ["How many clips?"] * n, "answer": ["#### 72"] * n}
    return trl_reward_call(func, completions, columns, prompt="How many clips?", completion_tokens=20, **extra)


# ------------------------------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("72", Fraction(72)),
        ("  72 \n", Fraction(72)),
        ("72.", Fraction(72)),  # end of a sentence
        ("100,", Fraction(100)),  # a sentence's comma or semicolon is not part of the number either
        ("72;", Fraction(72)),
        ("$72$.", Fraction(72)),
        ("$72.$", Fraction(72)),
        ("1,000", Fraction(1000)),
        ("1,234,567", Fraction(1234567)),
        ("1,000.50", Fraction(2001, 2)),
        ("$18.00", Fraction(18)),
        ("$18", Fraction(18)),
        ("\\$18", Fraction(18)),
        ("18.0", Fraction(18)),
        ("18.00", Fraction(18)),
        ("0.75", Fraction(3, 4)),
        (".5", Fraction(1, 2)),
        ("3/4", Fraction(3, 4)),
        ("6/8", Fraction(3, 4)),
        ("-3", Fraction(-3)),
        ("-3/4", Fraction(-3, 4)),
        ("-$5", Fraction(-5)),
        ("$-5", Fraction(-5)),
        ("25%", Fraction(25)),  # the number of percent, as GSM8K's golds write it
        ("12.5\\%", Fraction(25, 2)),
        ("007", Fraction(7)),
        ("\\boxed{72}", Fraction(72)),
        ("\\frac{3}{4}", Fraction(3, 4)),
        ("\\dfrac{3}{4}", Fraction(3, 4)),
        ("-\\frac{1}{8}", Fraction(-1, 8)),
        ("\\boxed{\\frac{3}{4}}", Fraction(3, 4)),
        ("$72$", Fraction(72)),
        ("\\(72\\)", Fraction(72)),
        ("1{,}000", Fraction(1000)),
        ("9" * 24, Fraction(int("9" * 24))),  # at the digit cap
    ],
)
def test_parse_number(text, expected):
    assert parse_number(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        ".",
        "-",
        "$",
        "%",
        "1,00",  # commas only in groups of three
        "1,0000",
        ",100",
        "0,111",  # a comma that is no thousands separator: unreadable, not 111
        "1,22",
        "72..",  # one full stop is the sentence's; more is not
        "1.000,5",
        "12 apples",
        "about 12",
        "twelve",
        "1 000",
        "- 3",
        "+3",
        "--3",
        "3/0",
        "1/2/3",
        "1.5/3",
        "3/-4",
        "1e3",
        "0x10",
        "\u0663",  # Arabic-Indic three
        "\uff17",  # fullwidth seven
        "\u22123",  # Unicode minus sign
        "\\boxed{1}{2}",
        "9" * 25,  # past MAX_NUMBER_DIGITS
        "9" * 10_000,
        "1" + ",000" * 20,  # past MAX_ANSWER_CHARS
        None,
        72,
        b"72",
    ],
)
def test_parse_number_rejects(text):
    assert parse_number(text) is None


def test_three_quarters_two_ways_are_equal_and_commas_matter():
    assert parse_number("3/4") == parse_number("0.75") == parse_number("\\frac{3}{4}")
    assert parse_number("1,000") == 1000 and parse_number("1,00") is None


def test_format_number_is_canonical():
    assert [format_number(parse_number(t)) for t in ("1,200", "$18.00", "0.75", "-3", "2.5")] == [
        "1200", "18", "3/4", "-3", "5/2"]


# ---------------------------------------------------------------------------------------------- extraction


@pytest.mark.parametrize(
    ("text", "method", "candidate"),
    [
        ("<answer>72</answer>", "tags", "72"),
        ("<answer> 72 \n</answer>", "tags", "72"),
        ("<answer>71</answer> wait, <answer>72</answer>", "tags", "72"),  # the last pair wins
        ("<answer>71</answer> then <answer>72", "tags", "71"),  # the trailing tag never closed
        ("<answer>x <answer>72</answer>", "tags", "72"),  # the open tag nearest the last close
        ("<answer></answer>", "tags", ""),  # empty tags are found (and unparsable)
        ("\\boxed{72} and <answer>70</answer>", "tags", "70"),  # tags come first by default
        ("so \\boxed{72}.", "boxed", "72"),
        ("\\boxed{1} then \\boxed{72}", "boxed", "72"),
        ("\\boxed{\\frac{3}{4}}", "boxed", "\\frac{3}{4}"),  # nested braces balance
        ("\\boxed{{{72}}}", "boxed", "{{72}}"),
        ("The answer is 72.", "answer_is", "72"),
        ("The answer is $1,200.", "answer_is", "$1,200"),
        ("the final ANSWER IS: 18 apples, I think", "answer_is", "18"),
        ("Answer: 72", "answer_is", "72"),
        ("answer is \\frac{3}{4}.", "answer_is", "\\frac{3}{4}"),
        ("#### 72", "answer_is", "72"),
        ("The answer is 5.\nLater: the answer is 7", "answer_is", "7"),  # the last marker
    ],
)
def test_extract_answer(text, method, candidate):
    assert extract_answer(text) == Extracted(method, candidate)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "48 + 24 = 72",  # a bare number is not an answer under the default order
        "<answer>72",
        "72</answer>",
        "</answer>72<answer>",
        "<Answer>72</Answer>",  # tags are case-sensitive
        "\\boxed{72",  # unclosed
        "\\boxed{" + "{" * 5000 + "72" + "}" * 5001,  # balanced, but closes only past MAX_BOXED_SCAN
        "The answer is five.",
        "the answer is\n72",  # the number must be on the marker's line
        None,
        ["<answer>72</answer>"],
    ],
)
def test_extract_answer_none(text):
    assert extract_answer(text) is None


def test_answer_order_changes_the_method():
    text = "\\boxed{70} so 24 + 48 = 72 <answer>71</answer>"
    assert extract_answer(text, ["boxed", "tags"]) == Extracted("boxed", "70")
    assert extract_answer(text, ["last_number"]) == Extracted("last_number", "71")
    assert extract_answer("24 + 48 = 72", ANSWER_METHODS) == Extracted("last_number", "72")
    assert extract_answer("<answer>71</answer>", ["boxed", "answer_is"]) is None


@pytest.mark.parametrize(
    ("text", "candidate"),
    [
        ("5 - 3 = 2", "2"),
        ("from 10-3 we get", "3"),  # a minus right after a digit is subtraction, not a sign
        ("owes -3 dollars", "-3"),
        ("costs $1,200, so", "$1,200"),  # the trailing comma is punctuation
        ("2/5 of them", "2/5"),
        ("the 1,00 mark", "1,00"),
        ("rate 12.5% today", "12.5%"),
        ("\u0663 apples and 4", "4"),  # Unicode digits are not numbers
    ],
)
def test_last_number(text, candidate):
    assert extract_answer(text, ["last_number"]) == Extracted("last_number", candidate)


def test_unknown_method_is_a_caller_error():
    with pytest.raises(ValueError, match="answer_order"):
        extract_answer("72", ["tags", "guess"])
    with pytest.raises(ValueError, match="answer_order"):
        gsm8k_reward(["72"], gold=["72"], answer_order=())


# ------------------------------------------------------------------------------------------------- judging


@pytest.mark.parametrize(
    ("text", "gold", "outcome", "answer"),
    [
        ("24 + 48 = 72. <answer>72</answer>", "72", Outcome.CORRECT, "72"),
        ("<answer>$1,200.00</answer>", "1200", Outcome.CORRECT, "$1,200.00"),
        ("<answer>0.75</answer>", "3/4", Outcome.CORRECT, "0.75"),
        ("<answer>3/4</answer>", "3/4", Outcome.CORRECT, "3/4"),
        ("<answer>-3</answer>", "-3", Outcome.CORRECT, "-3"),
        ("<answer>3</answer>", "-3", Outcome.PARTIAL, "3"),
        ("<answer>1,00</answer>", "100", Outcome.PARTIAL, "1,00"),  # malformed thousands: unparsable
        ("<answer>1,000</answer>", "1000", Outcome.CORRECT, "1,000"),
        ("<answer>71</answer>", "72", Outcome.PARTIAL, "71"),
        ("<answer></answer>", "72", Outcome.PARTIAL, ""),
        ("<answer>72 clips</answer>", "72", Outcome.PARTIAL, "72 clips"),
        ("<answer>\u0667\u0662</answer>", "72", Outcome.PARTIAL, "\u0667\u0662"),  # Arabic-Indic 72
        ("<answer>72</answer> <answer>71</answer>", "72", Outcome.PARTIAL, "71"),  # the last pair counts
        ("<answer>71</answer> <answer>72</answer>", "72", Outcome.CORRECT, "72"),
        ("So \\boxed{72}.", "72", Outcome.CORRECT, "72"),
        ("The answer is 72 clips.", "72", Outcome.CORRECT, "72"),
        ("#### 72", "72", Outcome.CORRECT, "72"),
        ("48 + 24 = 72", "72", Outcome.FAILED, None),
        ("", "72", Outcome.FAILED, None),
    ],
)
def test_judge(text, gold, outcome, answer):
    verdict = GSM8KTask().judge(text, {"question": "Q?", "gold": gold})
    assert verdict == Verdict(outcome, answer, 1.0 if outcome is Outcome.CORRECT else 0.0)


def test_judge_caps_the_recorded_answer():
    verdict = judge_completion("<answer>" + "7" * 100_000 + "</answer>", "7")
    assert verdict.outcome is Outcome.PARTIAL and len(verdict.answer) == 200 and verdict.answer.endswith("...")


def test_judge_refuses_a_bad_gold():
    with pytest.raises(ValueError, match="'gold' is 'abc'"):
        judge_completion("<answer>72</answer>", "abc")


# ------------------------------------------------------------------------------------------------- rewards

CORRECT, WRONG, NO_ANSWER, UNPARSABLE = "<answer>72</answer>", "<answer>71</answer>", "It is 72", "<answer>?</answer>"


def test_rewards_documented_values_through_trl_call():
    completions = [CORRECT, WRONG, NO_ANSWER, UNPARSABLE, "\\boxed{72}"]
    result, log = trl_call(gsm8k_reward, completions, ["72"] * 5)
    assert result == [1.0, 0.0, 0.0, 0.0, 1.0]
    assert log.calls == [(MALFORMED_ROWS_METRIC, 0)]
    result, log = trl_call(gsm8k_format_reward, completions, ["72"] * 5)
    assert result == [1.0, 0.1, 0.0, 0.1, 1.0]
    assert log.calls == [(MALFORMED_ROWS_METRIC, 0)]


def test_format_reward_pays_for_tags_whatever_the_order():
    assert gsm8k_format_reward([WRONG, CORRECT], gold=["72"] * 2, answer_order=["boxed"]) == [0.1, 0.1]
    assert gsm8k_format_reward(["\\boxed{72}"], gold=["72"], answer_order=["boxed"]) == [1.0]


def test_conversational_completions():
    parts = [{"type": "text", "text": "<answer>7"}, {"type": "text", "text": "2</answer>"}]
    completions = [
        [{"role": "assistant", "content": CORRECT}],
        [{"role": "assistant", "content": parts}],
        [{"role": "assistant", "content": None}],
    ]
    assert gsm8k_reward(completions, gold=["72"] * 3) == [1.0, 1.0, 0.0]


@pytest.mark.parametrize("bad", [None, "abc", "", "1,00", 72.0, True, [72], "9" * 30])
def test_malformed_gold_scores_none_and_is_counted(bad):
    for func in (gsm8k_reward, gsm8k_format_reward):
        result, log = trl_call(func, [CORRECT, CORRECT, CORRECT], ["72", bad, bad])
        assert result == [1.0, None, None]
        assert log.calls == [(MALFORMED_ROWS_METRIC, 2)]


def test_integer_and_numpy_golds_are_accepted():
    np = pytest.importorskip("numpy")
    assert gsm8k_reward([CORRECT] * 3, gold=[72, np.int64(72), "72"]) == [1.0, 1.0, 1.0]


def test_batch_shape_errors():
    with pytest.raises(ValueError, match="gold"):
        gsm8k_reward([CORRECT])  # the dataset has no gold column
    with pytest.raises(ValueError, match="mismatched"):
        gsm8k_reward([CORRECT, CORRECT], gold=["72"])


def test_reward_names_and_registry():
    assert {name: func.__name__ for name, func in REWARD_FUNCS.items()} == {
        "gsm8k": "gsm8k_reward", "gsm8k_format": "gsm8k_format_reward"}
    task = get_task("gsm8k")
    assert task.get_reward_funcs(["gsm8k", "gsm8k_format"]) == [gsm8k_reward, gsm8k_format_reward]
    with pytest.raises(ValueError, match="unknown reward 'countdown'"):
        task.get_reward_funcs(["countdown"])


def test_reward_funcs_follow_the_options_and_pickle():
    funcs = get_task("gsm8k", ["answer_order=last_number"]).get_reward_funcs(["gsm8k", "gsm8k_format"])
    assert [f.__name__ for f in funcs] == ["gsm8k_reward", "gsm8k_format_reward"]
    assert [f([NO_ANSWER], gold=["72"]) for f in funcs] == [[1.0], [1.0]]
    restored = pickle.loads(pickle.dumps(funcs[0]))
    assert restored.__name__ == "gsm8k_reward" and restored([NO_ANSWER], gold=["72"]) == [1.0]
    # the default order keeps the plain functions
    assert get_task("gsm8k").reward_funcs()["gsm8k"] is gsm8k_reward


# ----------------------------------------------------------------------------------------- adversarial input

ADVERSARIAL = {
    "100 KB of prose": "The answer might be 7. " * 4500,
    "10,000-digit number in tags": "<answer>" + "9" * 10_000 + "</answer>",
    "10,000-digit number after a marker": "The answer is " + "9" * 10_000,
    "10,000-digit last number": "x " + "9" * 10_000,
    "open tags": "<answer>" * 12_500,
    "close tags": "</answer>" * 11_000,
    "deep braces": "\\boxed{" + "{" * 100_000,
    "many boxes": "\\boxed{" * 14_000,
    "unbalanced close braces": "\\boxed{72" + "}" * 100_000,
    "markers": "answer is " * 10_000,
    "marker then spaces": "answer" + " " * 100_000 + "is 72",
    "commas": "1" + ",000" * 25_000,
    "digit-comma soup": "1," * 50_000,
    "minus signs": "-" * 100_000 + "72",
    "money soup": "-$1,2.3/4% " * 9_000,
    "unicode digits": "\u0663\u0667" * 50_000,
    "slashes": "1/" * 50_000,
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
@pytest.mark.parametrize("order", [DEFAULT_ANSWER_ORDER, ANSWER_METHODS], ids=["default", "all"])
def test_adversarial_completions_are_scored_promptly(name, order):
    text = ADVERSARIAL[name]
    for func, values in ((gsm8k_reward, {0.0, 1.0}), (gsm8k_format_reward, {0.0, 0.1, 1.0})):
        result, seconds = timed(func, [text], gold=["72"], answer_order=order)
        assert result[0] in values and seconds < BOUND_SECONDS, (name, result, seconds)


def test_adversarial_values():
    assert gsm8k_reward([ADVERSARIAL["10,000-digit number in tags"]], gold=["9" * 20]) == [0.0]
    assert gsm8k_format_reward([ADVERSARIAL["10,000-digit number in tags"]], gold=["9"]) == [0.1]
    assert gsm8k_reward([ADVERSARIAL["unbalanced close braces"]], gold=["72"]) == [1.0]  # the first "}" closes
    assert gsm8k_reward([ADVERSARIAL["deep braces"] + " <answer>72</answer>"], gold=["72"]) == [1.0]
    assert gsm8k_reward([ADVERSARIAL["deep braces"]], gold=["72"], answer_order=["boxed"]) == [0.0]


def test_boxed_scan_is_capped_but_reaches_its_cap():
    inside = "{" * 10 + "72" + "}" * 10
    assert len(inside) < MAX_BOXED_SCAN
    assert extract_answer("\\boxed{" + inside + "}") == Extracted("boxed", inside)


# ------------------------------------------------------------------------------------------ property tests

texts = st.one_of(
    st.text(max_size=200),
    st.lists(
        st.sampled_from(["<answer>", "</answer>", "\\boxed{", "{", "}", "answer is ", "####", " ", "\n", "$", "-",
                         ",", ".", "/", "%", "72", "1,000", "0.75", "3/4", "\u0663", "\\frac{3}{4}"]),
        max_size=40,
    ).map("".join),
)


@settings(deadline=None, max_examples=300)
@given(texts, st.sampled_from(["72", "3/4", "-3", "1000"]), st.permutations(ANSWER_METHODS))
def test_rewards_on_arbitrary_text_return_documented_values(text, gold, order):
    assert gsm8k_reward([text], gold=[gold], answer_order=order)[0] in (0.0, 1.0)
    assert gsm8k_format_reward([text], gold=[gold], answer_order=order)[0] in (0.0, 0.1, 1.0)
    verdict = judge_completion(text, gold, order)
    assert (verdict.answer is None) == (verdict.outcome is Outcome.FAILED)
    assert verdict.reward == (1.0 if verdict.outcome is Outcome.CORRECT else 0.0)


@settings(deadline=None, max_examples=25)
@given(texts.filter(bool))
def test_rewards_on_100kb_of_arbitrary_text_are_bounded(text):
    big = (text * (100_000 // len(text) + 1))[:100_000]
    for func, values in ((gsm8k_reward, (0.0, 1.0)), (gsm8k_format_reward, (0.0, 0.1, 1.0))):
        result, seconds = timed(func, [big], gold=["72"], answer_order=ANSWER_METHODS)
        assert result[0] in values and seconds < BOUND_SECONDS


@settings(deadline=None, max_examples=200)
@given(st.fractions(max_denominator=1000).filter(lambda f: abs(f.numerator) < 10**9))
def test_any_fraction_written_canonically_is_correct(value):
    gold = format_number(value)
    assert parse_number(gold) == value
    assert judge_completion(f"<answer>{gold}</answer>", gold).outcome is Outcome.CORRECT


# ------------------------------------------------------------------------------------------------------ rows


def test_prepare_row_reads_the_gold_after_the_marks():
    task = GSM8KTask()
    row = task.prepare_row(REAL_ROW)
    assert row == {**REAL_ROW, "gold": "72"}  # other columns kept
    assert task.row_problem(row) is None
    assert task.prepare_row({"question": "Q?", "answer": "steps\n#### 1,600"})["gold"] == "1600"
    assert task.prepare_row({"question": "Q?", "answer": "#### -3"})["gold"] == "-3"
    assert task.prepare_row({"question": "Q?", "answer": "#### 2.50"})["gold"] == "5/2"


def test_prepare_row_keeps_an_existing_gold():
    task = GSM8KTask()
    assert task.prepare_row(GOLD_ROW) == GOLD_ROW
    assert task.prepare_row({"question": "Q?", "gold": 72})["gold"] == "72"
    assert task.prepare_row({"question": "Q?", "gold": "1,600", "answer": "#### 9"})["gold"] == "1600"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "Q?", "answer": "She has 5 apples."}, "'answer' has no '#### <number>' line"),
        ({"question": "Q?", "answer": "#### five"}, "'answer' has 'five' after '####', expected a number"),
        ({"question": "Q?", "answer": "####"}, "'answer' has '' after '####', expected a number"),
        ({"question": "Q?", "answer": 72}, "'answer' is 72, expected a worked solution"),
        ({"question": "Q?"}, "'answer' is missing"),
        ({"question": "Q?", "gold": "abc"}, "'gold' is 'abc', expected a number"),
    ],
)
def test_prepare_row_errors_name_the_column(row, message):
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace("$", r"\$")):
        GSM8KTask().prepare_row(row)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "Q?", "gold": "abc"}, "'gold' is 'abc', expected a number"),
        ({"question": "Q?", "gold": 7.5}, "'gold' is 7.5, expected a number"),
        ({"question": "Q?", "gold": None}, "'gold' is None, expected a number"),
        ({"question": "Q?", "gold": None, "answer": None}, "'answer' is None, expected a worked solution ending"),
        ({"question": "", "gold": "72"}, "'question' is '', expected non-empty text"),
        ({"question": None, "gold": "72"}, "'question' is None, expected non-empty text"),
        ({"gold": "72"}, "'question' is missing"),
        ({"question": "Q?"}, "'gold' is missing"),
    ],
)
def test_row_problem_names_the_column(row, message):
    assert GSM8KTask().row_problem(row).startswith(message)


def test_a_null_answer_reaches_row_problem():
    # The loader probes a source's columns with all-None values; a null answer must not hide the gold column.
    task = GSM8KTask()
    row = task.prepare_row({"question": None, "answer": None})
    assert "gold" in row and task.row_problem({**row, "question": "Q?"}).startswith("'answer' is None")


def test_the_data_loader_reads_the_source_layout(tmp_path):
    from countdown_rl.data.loading import load_rows

    path = tmp_path / "gsm8k.jsonl"
    rows = [REAL_ROW, {"question": "Q2?", "answer": "1+1 = <<1+1=2>>2\n#### 2"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded, raw, dropped, _source = load_rows(get_task("gsm8k"), path)
    assert [r["gold"] for r in loaded] == ["72", "2"] and (raw, dropped) == (2, 0)
    path.write_text(json.dumps(REAL_ROW) + "\n" + json.dumps({"question": "Q?", "answer": "no marks"}) + "\n")
    with pytest.raises(ValueError, match=r"row 1 .*'answer' has no '#### <number>' line"):
        load_rows(get_task("gsm8k"), path)


def test_dedupe_key_and_difficulty():
    task = GSM8KTask()
    assert task.dedupe_key({"question": "How  many\nclips? "}) == task.dedupe_key({"question": "How many clips?"})
    assert task.dedupe_key({"question": "How many clips?"}) != task.dedupe_key({"question": "How many pens?"})
    assert task.difficulty(REAL_ROW) == 2.0
    assert task.difficulty({"answer": "a\n\nb\nc <<1+1=2>>2\n#### 2"}) == 3.0  # blank lines are not steps
    assert task.difficulty(GOLD_ROW) == 0.0


# --------------------------------------------------------------------------------------------------- options


def test_options_parse():
    assert get_task("gsm8k").options.answer_order == DEFAULT_ANSWER_ORDER == ("tags", "boxed", "answer_is")
    assert get_task("gsm8k", ["answer_order=tags, boxed"]).options.answer_order == ("tags", "boxed")
    assert get_task("gsm8k", {"answer_order": ["last_number"]}).options.answer_order == ("last_number",)
    assert get_task("gsm8k", {"answer_order": "boxed,tags"}).options.answer_order == ("boxed", "tags")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["order=tags"], "unknown gsm8k option 'order'; known: answer_order"),
        (["answer_order=tags,guess"], "answer_order='tags,guess': expected distinct methods"),
        (["answer_order="], "answer_order='': expected distinct methods"),
        (["answer_order=tags,tags"], "answer_order='tags,tags': expected distinct methods"),
        (["answer_order"], "is not key=value"),
    ],
)
def test_bad_options_are_one_line_errors_naming_the_key(options, message):
    with pytest.raises(ValueError) as err:
        get_task("gsm8k", options)
    assert message in str(err.value) and "\n" not in str(err.value)


# --------------------------------------------------------------------------------------------------- prompts


def test_registry_and_dataset_facts():
    task = get_task("gsm8k")
    assert isinstance(task, GSM8KTask) and task.name == "gsm8k"
    assert task.columns == ("question", "gold")
    assert task.default_dataset == "openai/gsm8k"
    assert task.known_datasets == {"openai/gsm8k": {"config": "main", "train_split": "train", "test_split": "test"}}
    assert task.default_template == "chat" and task.default_reward_funcs == ("gsm8k",)


def test_prompt_templates():
    task = get_task("gsm8k")
    chat = task.prompt(GOLD_ROW)
    assert [m["role"] for m in chat] == ["system", "user"] and task.prompt_templates["chat"].conversational
    assert chat[1]["content"].startswith(GOLD_ROW["question"]) and "<answer>" in chat[1]["content"]
    plain = task.prompt(GOLD_ROW, "r1_zero")
    assert isinstance(plain, str) and not task.prompt_templates["r1_zero"].conversational
    assert GOLD_ROW["question"] in plain and plain.endswith("\n<think>")
    with pytest.raises(ValueError, match="unknown prompt template 'plain'"):
        task.prompt(GOLD_ROW, "plain")


# ------------------------------------------------------------------------------------------- generated data


def _evaluate_annotation(expression: str) -> Fraction:
    """The test's own reading of a calculator annotation: one operator level, left to right (``a*b/c``,
    ``a-b``), which is all the generator writes."""
    tokens, number = [], ""
    for char in expression:
        if char in "+-*/":
            tokens += [number, char]
            number = ""
        else:
            number += char
    tokens.append(number)
    assert not ({"+", "-"} & set(tokens) and {"*", "/"} & set(tokens)), expression
    value = Fraction(tokens[0])
    for op, operand in zip(tokens[1::2], tokens[2::2], strict=True):
        operand = Fraction(operand)
        value = {"+": value + operand, "-": value - operand, "*": value * operand, "/": value / operand}[op]
    return value


def test_generate_is_deterministic_per_seed():
    task = get_task("gsm8k")
    assert task.generate(30, seed=3) == task.generate(30, seed=3)
    assert task.generate(30, seed=3) != task.generate(30, seed=4)
    assert task.generate(0) == []


def test_generated_rows_are_valid_and_their_golds_are_right():
    task = get_task("gsm8k")
    rows = task.generate(300, seed=0)
    assert all(set(row) == {"question", "answer"} for row in rows)
    golds = set()
    for source in rows:
        row = task.prepare_row(source)
        assert task.row_problem(row) is None, row
        lines = source["answer"].split("\n")
        assert lines[-1].startswith("#### ") and task.difficulty(source) == len(lines) - 1 >= 1
        # every calculator annotation is right, and the last one's result is the gold
        results = []
        for line in lines[:-1]:
            inside = line.split("<<", 1)[1].split(">>", 1)[0]
            expression, result = inside.split("=")
            assert _evaluate_annotation(expression) == Fraction(result), line
            results.append(Fraction(result))
        assert results[-1] == parse_number(row["gold"])
        # the task's own judge accepts the gold in every answer format it reads
        for completion in (f"<answer>{row['gold']}</answer>", f"\\boxed{{{row['gold']}}}", lines[-1]):
            assert task.judge(completion, row).outcome is Outcome.CORRECT, (completion, row)
        assert task.judge(f"<answer>{results[-1] + 1}</answer>", row).outcome is Outcome.PARTIAL
        golds.add(row["gold"])
    answers = "\n".join(r["answer"] for r in rows)
    questions = "\n".join(r["question"] for r in rows)
    # the formats the parser must handle do occur: thousands commas after ####, in questions, and decimals
    assert any("," in line for line in answers.split("\n") if line.startswith("#### "))
    assert re.search(r"[0-9],[0-9]{3}", questions)
    assert any("/" in gold for gold in golds)
    assert len({task.dedupe_key(r) for r in rows}) > 290  # nearly all distinct problems


def test_gold_from_solution_uses_the_last_marks():
    assert gold_from_solution("#### 5 is wrong\nso\n#### 7") == "7"
