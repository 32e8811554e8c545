"""Prompt templates of the GSM8K task: ``chat`` (instruct models, the GSM8K write-up's) and ``r1_zero`` (base models).

Both ask for the final number inside ``<answer>`` tags, the format every extraction method tries first.
"""

from __future__ import annotations

from countdown_rl.tasks.base import PromptTemplate, question_templates

__all__ = ["ANSWER_INSTRUCTION", "CHAT_SYSTEM_PROMPT", "PROMPT_TEMPLATES"]

CHAT_SYSTEM_PROMPT = (
    "You are a helpful assistant. You solve math word problems: reason step by step, briefly, "
    "then give the final answer."
)
ANSWER_INSTRUCTION = (
    "Give the final answer, a number only, inside <answer> </answer> tags, for example <answer> 42 </answer>."
)
# Both templates (countdown_rl.tasks.base.question_templates) ask for brief reasoning: the GSM8K write-up trains with
# 128 new tokens, so a long derivation is cut off before its answer.
PROMPT_TEMPLATES: dict[str, PromptTemplate] = question_templates(CHAT_SYSTEM_PROMPT, ANSWER_INSTRUCTION)
