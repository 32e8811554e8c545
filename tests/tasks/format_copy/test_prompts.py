"""The format-copy prompt templates (countdown_rl.tasks.format_copy.prompts)."""

from __future__ import annotations

from countdown_rl.tasks import get_task


def test_prompt_templates():
    task = get_task("format_copy")
    plain = task.prompt({"number": 4821})
    assert isinstance(plain, str) and plain.endswith("Number: 4821\n") and "<answer>" in plain
    assert not task.prompt_templates["plain"].conversational
    chat = task.prompt({"number": 4821}, "chat")
    assert [m["role"] for m in chat] == ["system", "user"] and chat[1]["content"].endswith("Number: 4821")
    assert task.prompt_templates["chat"].conversational
