"""Prompt templates for the Countdown task (pure Python).

1. Each template turns a puzzle ``(nums, target)`` into a prompt; the task wording is shared, so the
   templates differ only in framing.
2. ``"r1_zero"``: plain text for base models in the R1-Zero / TinyZero style -- a User/Assistant
   transcript whose Assistant turn is already open and ends with ``<think>``, so the completion starts
   inside the reasoning block.
3. ``"chat"``: ``[system, user]`` messages for instruct models; the chat template adds the assistant
   turn (and, for Qwen3, the recipe switches thinking on or off through TRL's ``chat_template_kwargs``).
4. :func:`build_prompt` looks a template up in :data:`PROMPT_TEMPLATES` by name.
"""

from __future__ import annotations

from collections.abc import Sequence

from countdown_rl.tasks.base import Prompt, PromptTemplate, r1_zero_prompt

__all__ = ["PROMPT_TEMPLATES", "Prompt", "PromptTemplate", "build_prompt", "task_text"]

CHAT_SYSTEM_PROMPT = (
    "You are a helpful assistant. You first reason about the problem step by step in your mind, "
    "then give the user the answer."
)


def _format_nums(nums: Sequence[int]) -> str:
    # int() so numpy / Arrow scalars print like the plain list "[7, 7, 65]".
    return "[" + ", ".join(str(int(x)) for x in nums) + "]"


def task_text(nums: Sequence[int], target: int) -> str:
    """The task statement shared by all templates.

    >>> task_text([7, 7, 65], 51).split(".")[0]
    'Using the numbers [7, 7, 65], create an equation that equals 51'
    """
    # "exactly once": the verifier requires every given number to appear once (the Countdown rule).
    return (
        f"Using the numbers {_format_nums(nums)}, create an equation that equals {int(target)}. "
        "You may use the basic arithmetic operations (+, -, *, /), and each number must be used exactly once. "
        "Show your reasoning inside <think> </think> tags, and give the final answer inside "
        "<answer> </answer> tags, for example <answer> (1 + 2) / 3 </answer>."
    )


def _r1_zero(nums: Sequence[int], target: int) -> str:
    return r1_zero_prompt(task_text(nums, target))


def _chat(nums: Sequence[int], target: int) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": CHAT_SYSTEM_PROMPT},
        {"role": "user", "content": task_text(nums, target)},
    ]


PROMPT_TEMPLATES: dict[str, PromptTemplate] = {
    t.name: t
    for t in (
        PromptTemplate("r1_zero", False, lambda row: _r1_zero(row["nums"], row["target"]),
                       "plain-text R1-Zero transcript ending with an open <think>"),
        PromptTemplate("chat", True, lambda row: _chat(row["nums"], row["target"]),
                       "system + user messages for instruct (chat-template) models"),
    )
}
"""Templates by name: ``"r1_zero"`` (plain text) and ``"chat"`` (conversational)."""


def build_prompt(nums: Sequence[int], target: int, template: str = "r1_zero") -> Prompt:
    """Render a puzzle with a named template: a string (``"r1_zero"``) or chat messages (``"chat"``).

    >>> build_prompt([7, 7, 65], 51).endswith("Let me solve this step by step.\\n<think>")
    True
    >>> [m["role"] for m in build_prompt([7, 7, 65], 51, template="chat")]
    ['system', 'user']
    """
    try:
        spec = PROMPT_TEMPLATES[template]
    except (KeyError, TypeError):
        raise ValueError(f"unknown prompt template {template!r}; choose one of {sorted(PROMPT_TEMPLATES)}") from None
    return spec.render({"nums": nums, "target": target})
