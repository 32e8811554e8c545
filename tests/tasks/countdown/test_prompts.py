"""Tests for countdown_rl.tasks.countdown.prompts: the r1_zero and chat templates and the registry."""

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing in this project's tests may reach the Hub

import pytest

from countdown_rl.tasks.countdown.prompts import PROMPT_TEMPLATES, build_prompt


def test_registry_names_and_kinds():
    assert set(PROMPT_TEMPLATES) == {"r1_zero", "chat"}
    assert PROMPT_TEMPLATES["r1_zero"].conversational is False
    assert PROMPT_TEMPLATES["chat"].conversational is True


def test_r1_zero_renders_puzzle_and_prefills_think():
    prompt = build_prompt([7, 7, 65], 51, template="r1_zero")
    assert isinstance(prompt, str)
    assert "[7, 7, 65]" in prompt and "equals 51" in prompt
    assert prompt.endswith("<think>")
    # A User turn, then an open Assistant turn that the model continues.
    assert prompt.index("User:") < prompt.index("Assistant: Let me solve this step by step.")
    assert "<answer>" in prompt and "</answer>" in prompt and "(+, -, *, /)" in prompt
    assert build_prompt([7, 7, 65], 51) == prompt  # r1_zero is the default


def test_chat_renders_system_and_user_messages():
    messages = build_prompt((3, 1, 4, 1), 9, template="chat")
    assert [m["role"] for m in messages] == ["system", "user"]
    assert all(set(m) == {"role", "content"} and isinstance(m["content"], str) for m in messages)
    user = messages[1]["content"]
    assert "[3, 1, 4, 1]" in user and "equals 9" in user
    assert "<answer>" in user
    # The chat template opens the assistant turn itself; no pre-filled <think> in the messages.
    assert not user.rstrip().endswith("<think>")


def test_both_templates_share_the_task_wording():
    chat_user = build_prompt([2, 5, 9], 13, template="chat")[1]["content"]
    assert chat_user in build_prompt([2, 5, 9], 13, template="r1_zero")


def test_different_puzzles_give_different_prompts():
    assert build_prompt([1, 2, 3], 6) != build_prompt([1, 2, 3], 7)
    assert build_prompt([1, 2, 3], 6) != build_prompt([1, 2, 4], 6)


@pytest.mark.parametrize("name", ["R1_ZERO", "qwen", "", None])
def test_unknown_template_lists_options(name):
    with pytest.raises(ValueError) as err:
        build_prompt([1, 2, 3], 6, template=name)
    message = str(err.value)
    assert "\n" not in message and "'chat'" in message and "'r1_zero'" in message
