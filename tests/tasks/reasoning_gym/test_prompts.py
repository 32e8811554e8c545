"""The reasoning-gym prompt templates (countdown_rl.tasks.reasoning_gym.prompts)."""

from __future__ import annotations

import pytest

from countdown_rl.tasks import get_task

pytest.importorskip("reasoning_gym")


@pytest.fixture(scope="module")
def row():
    return get_task("reasoning_gym", ["datasets=lcm"]).generate(1, seed=0)[0]


def test_the_three_templates_give_the_question_and_ask_for_answer_tags(row):
    task = get_task("reasoning_gym")
    assert sorted(task.prompt_templates) == ["chat", "plain", "r1_zero"] and task.default_template == "chat"
    question = row["question"].strip()
    chat = task.prompt(row)
    assert task.prompt_templates["chat"].conversational
    assert [m["role"] for m in chat] == ["system", "user"]
    assert chat[1]["content"].startswith(question) and "<answer> </answer>" in chat[1]["content"]
    r1 = task.prompt(row, "r1_zero")
    assert isinstance(r1, str) and not task.prompt_templates["r1_zero"].conversational
    assert question in r1 and "<answer> </answer>" in r1 and r1.rstrip().endswith("<think>")
    plain = task.prompt(row, "plain")
    assert isinstance(plain, str) and not task.prompt_templates["plain"].conversational
    assert plain.startswith(question) and "<answer></answer>" in plain and plain.endswith("\n")
    with pytest.raises(ValueError, match="unknown prompt template 'cot'"):
        task.prompt(row, "cot")


def test_the_question_is_given_as_it_is(row):
    task = get_task("reasoning_gym")
    multi = {**row, "question": "  Grid:\n1 0\n0 1\nWhat is it?\n"}
    for template in task.prompt_templates:
        prompt = task.prompt(multi, template)
        text = prompt[-1]["content"] if isinstance(prompt, list) else prompt
        assert "Grid:\n1 0\n0 1\nWhat is it?" in text
