"""The MATH prompt templates (countdown_rl.tasks.math.prompts)."""

from __future__ import annotations

import pytest

from countdown_rl.tasks.math import MathTask


def test_prompt_templates():
    task = MathTask()
    row = {"problem": "What is $1+1$?", "gold": "2"}
    r1 = task.prompt(row)
    assert r1.endswith("User: What is $1+1$?\nAssistant: <think>") and "<answer> answer here </answer>" in r1
    assert "\\boxed{}" in task.prompt(row, "boxed") and task.prompt(row, "boxed").startswith("Problem: What is")
    assert [m["role"] for m in task.prompt(row, "chat")] == ["system", "user"]
    assert {n: t.conversational for n, t in task.prompt_templates.items()} == {
        "r1_zero": False, "boxed": False, "chat": True}
    with pytest.raises(ValueError, match="unknown prompt template"):
        task.prompt(row, "cot")
