"""Prompt templates of the MATH task: ``r1_zero`` (the MATH ablations), ``boxed`` (the GR-REINFORCE
study), ``chat`` (instruct models).

``r1_zero`` keeps the DeepSeek-R1-Zero paper's full preamble (:data:`R1_ZERO_PAPER_PREAMBLE`, which names the
tags itself), as the MATH ablations trained with it; Countdown and GSM8K use the brief one of
``countdown_rl.tasks.base`` and name the tags in their task text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from countdown_rl.tasks.base import PromptTemplate

__all__ = ["BOXED_INSTRUCTION", "CHAT_SYSTEM_PROMPT", "PROMPT_TEMPLATES", "R1_ZERO_PAPER_PREAMBLE"]

R1_ZERO_PAPER_PREAMBLE = (
    "A conversation between User and Assistant. The User asks a question, and the Assistant solves it. "
    "The Assistant first thinks about the reasoning process in the mind and then provides the User with the "
    "answer. The reasoning process is enclosed within <think> </think> and the answer within <answer> </answer> "
    "tags, respectively, i.e., <think> reasoning process here </think> <answer> answer here </answer>."
)
BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
CHAT_SYSTEM_PROMPT = (
    "You are a helpful assistant. You first think about the reasoning process step by step inside <think> "
    "</think> tags, then give the final answer, in LaTeX, inside <answer> </answer> tags."
)


def _r1_zero(row: Mapping[str, Any]) -> str:
    return f"{R1_ZERO_PAPER_PREAMBLE}\nUser: {row['problem']}\nAssistant: <think>"


def _boxed(row: Mapping[str, Any]) -> str:
    return f"Problem: {row['problem']}\n{BOXED_INSTRUCTION}\nSolution:"


def _chat(row: Mapping[str, Any]) -> list[dict[str, str]]:
    return [{"role": "system", "content": CHAT_SYSTEM_PROMPT}, {"role": "user", "content": str(row["problem"])}]


PROMPT_TEMPLATES: dict[str, PromptTemplate] = {
    t.name: t
    for t in (
        PromptTemplate("r1_zero", False, _r1_zero,
                       "plain-text R1-Zero transcript ending with an open <think>; answer in <answer> tags "
                       "(the MATH ablations)"),
        PromptTemplate("boxed", False, _boxed,
                       "plain-text problem asking for the final answer in \\boxed{} (the GR-REINFORCE study)"),
        PromptTemplate("chat", True, _chat,
                       "system + user messages for instruct models; <think> then <answer> tags"),
    )
}
