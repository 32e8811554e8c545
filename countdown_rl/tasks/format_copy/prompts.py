"""Prompt templates of the format-copy task: ``plain`` (tiny byte-level models) and ``chat`` (instruct models)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from countdown_rl.tasks.base import PromptTemplate

__all__ = ["INSTRUCTION", "PROMPT_TEMPLATES"]

INSTRUCTION = "Copy the number inside <answer></answer> tags and write nothing else, for example <answer>17</answer>."


def _plain(row: Mapping[str, Any]) -> str:
    # Ends with a newline right where the answer goes: a tiny byte-level model sees the example's shape and
    # continues from the start of a line, with no chat markup to learn first.
    return f"{INSTRUCTION}\nNumber: {int(row['number'])}\n"


def _chat(row: Mapping[str, Any]) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You are a helpful assistant. You follow the requested output format exactly."},
        {"role": "user", "content": f"{INSTRUCTION}\nNumber: {int(row['number'])}"},
    ]


PROMPT_TEMPLATES: dict[str, PromptTemplate] = {
    t.name: t
    for t in (
        PromptTemplate("plain", False, _plain, "short plain text ending where the answer starts (tiny models)"),
        PromptTemplate("chat", True, _chat, "system + user messages for instruct (chat-template) models"),
    )
}
