"""The GSM8K prompt templates (countdown_rl.tasks.gsm8k.prompts)."""

from __future__ import annotations

import pytest

from countdown_rl.tasks import get_task
from tests.helpers.task_samples import GOLD_ROW


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
