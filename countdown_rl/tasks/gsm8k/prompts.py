"""Prompt templates of the GSM8K task: ``chat`` (instruct models, seed 004's) and ``r1_zero`` (base models).

Both ask for the final number inside ``<answer>`` tags, the format every extraction method tries first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from countdown_rl.tasks.base import ASCII_WHITESPACE, PromptTemplate, r1_zero_prompt

__all__ = ["ANSWER_INSTRUCTION", "CHAT_SYSTEM_PROMPT", "PROMPT_TEMPLATES"]

CHAT_SYSTEM_PROMPT = (
    "You are a helpful assistant. You solve math word problems: reason step by step, briefly, "
    "then give the final answer."
)
ANSWER_INSTRUCTION = (
    "Give the final answer, a number only, inside <answer> </answer> tags, for example <answer> 42 </answer>."
)


def _question(row: Mapping[str, Any]) -> str:
    return str(row["question"]).strip(ASCII_WHITESPACE)


def _chat(row: Mapping[str, Any]) -> list[dict[str, str]]:
    # Brief reasoning: seed 004 trains with 128 new tokens, so a long derivation is cut off before its answer.
    return [
        {"role": "system", "content": CHAT_SYSTEM_PROMPT},
        {"role": "user", "content": f"{_question(row)}\nReason step by step, briefly. {ANSWER_INSTRUCTION}"},
    ]


def _r1_zero(row: Mapping[str, Any]) -> str:
    task = f"{_question(row)}\nShow your reasoning inside <think> </think> tags. {ANSWER_INSTRUCTION}"
    return r1_zero_prompt(task)


PROMPT_TEMPLATES: dict[str, PromptTemplate] = {
    t.name: t
    for t in (
        PromptTemplate("chat", True, _chat, "system + user messages for instruct (chat-template) models"),
        PromptTemplate("r1_zero", False, _r1_zero, "plain-text R1-Zero transcript ending with an open <think>"),
    )
}
