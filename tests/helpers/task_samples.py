"""Sample rows and completions shared by the tests of one task's modules (verifier, rewards, task, prompts)."""

from __future__ import annotations

REAL_ROW = {
    "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
    "How many clips did Natalia sell altogether in April and May?",
    "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
    "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72",
}
"""GSM8K's first train row, in the source layout (a worked solution ending with ``#### 72``)."""
GOLD_ROW = {"question": REAL_ROW["question"], "gold": "72"}
"""The same GSM8K row prepared: ``question`` and ``gold``."""

BIG = 100_000
"""Characters in the "100 KB" inputs of the bounded-work tests."""


def fmt(answer: str) -> str:
    """A MATH completion in the R1-Zero format (the prompt already opened <think>)."""
    return f"Let me think. </think> <answer>{answer}</answer>"
