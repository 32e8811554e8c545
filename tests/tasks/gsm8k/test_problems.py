"""The offline GSM8K word problems (countdown_rl.tasks.gsm8k.problems)."""

from __future__ import annotations

import re
from fractions import Fraction


from countdown_rl.tasks import get_task
from countdown_rl.tasks.base import Outcome
from countdown_rl.tasks.extraction import parse_number


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
