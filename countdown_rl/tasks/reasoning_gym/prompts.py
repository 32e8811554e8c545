"""Prompt templates of the reasoning-gym task: ``chat`` (instruct models), ``r1_zero`` (base models) and ``plain``
(tiny byte-level models). Each gives reasoning-gym's question as it is and asks for the answer in ``<answer>`` tags.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from countdown_rl.tasks.base import ASCII_WHITESPACE, PromptTemplate, question_templates

__all__ = ["ANSWER_INSTRUCTION", "CHAT_SYSTEM_PROMPT", "PROMPT_TEMPLATES"]

CHAT_SYSTEM_PROMPT = "You are a helpful assistant. You solve the problem you are given, then give the final answer."
ANSWER_INSTRUCTION = "Give the final answer, exactly in the form the question asks for, inside <answer> </answer> tags."


def _plain(row: Mapping[str, Any]) -> str:
    # Ends on a new line where the answer starts: a tiny byte-level model continues from there, no markup to learn.
    return f"{str(row['question']).strip(ASCII_WHITESPACE)}\nAnswer inside <answer></answer> tags.\n"


PROMPT_TEMPLATES: dict[str, PromptTemplate] = {
    **question_templates(CHAT_SYSTEM_PROMPT, ANSWER_INSTRUCTION),
    "plain": PromptTemplate("plain", False, _plain, "the question and a short instruction, ending where the answer starts"),
}
