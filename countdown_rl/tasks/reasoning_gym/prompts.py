"""Prompt templates of the reasoning-gym task: ``chat`` (instruct models), ``r1_zero`` (base models) and ``plain``
(tiny byte-level models). Each gives reasoning-gym's question as it is and asks for the answer in ``<answer>`` tags.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from countdown_rl.tasks.base import ASCII_WHITESPACE, PromptTemplate, r1_zero_prompt

__all__ = ["ANSWER_INSTRUCTION", "CHAT_SYSTEM_PROMPT", "PROMPT_TEMPLATES"]

CHAT_SYSTEM_PROMPT = "You are a helpful assistant. You solve the problem you are given, then give the final answer."
ANSWER_INSTRUCTION = "Give the final answer, exactly in the form the question asks for, inside <answer> </answer> tags."


def _question(row: Mapping[str, Any]) -> str:
    return str(row["question"]).strip(ASCII_WHITESPACE)


def _chat(row: Mapping[str, Any]) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": CHAT_SYSTEM_PROMPT},
        {"role": "user", "content": f"{_question(row)}\nReason step by step, briefly. {ANSWER_INSTRUCTION}"},
    ]


def _r1_zero(row: Mapping[str, Any]) -> str:
    return r1_zero_prompt(f"{_question(row)}\nShow your reasoning inside <think> </think> tags. {ANSWER_INSTRUCTION}")


def _plain(row: Mapping[str, Any]) -> str:
    # Ends on a new line where the answer starts: a tiny byte-level model continues from there, no markup to learn.
    return f"{_question(row)}\nAnswer inside <answer></answer> tags.\n"


PROMPT_TEMPLATES: dict[str, PromptTemplate] = {
    t.name: t
    for t in (
        PromptTemplate("chat", True, _chat, "system + user messages for instruct (chat-template) models"),
        PromptTemplate("r1_zero", False, _r1_zero, "plain-text R1-Zero transcript ending with an open <think>"),
        PromptTemplate("plain", False, _plain, "the question and a short instruction, ending where the answer starts"),
    )
}
