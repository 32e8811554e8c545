"""The GSM8K verifier reads the answer the sentence gives (issue 22): the reported cases as a table."""

from __future__ import annotations

import pytest

from countdown_rl.tasks.gsm8k.rewards import gsm8k_reward
from countdown_rl.tasks.gsm8k.verifier import judge_completion


# ---------------------------------------------------------------------------------------------- GSM8K: "answer is"

GSM8K_CASES = [
    # (completion, gold, reward)
    ("The answer is 300 + 120 + 60 = 480.", "480", 1.0),  # the value after the last "="
    ("The answer is 300 + 120 + 60 = 480.", "300", 0.0),
    ("The answer is $\\sqrt{16}$", "16", 0.0),  # a number inside a root is not the answer
    ("The answer is $\\sqrt{16}$", "4", 0.0),  # and the root is not evaluated
    ("The answer is $2^{10}$", "2", 0.0),
    ("The answer is $2^{10}$", "1024", 0.0),
    ("The answer is 5 - 3 = 2", "5", 0.0),
    ("The answer is 5 - 3 = 2", "2", 1.0),
    ("The answer is 5 - 3", "2", 1.0),  # plain arithmetic, evaluated exactly
    ("The answer is 2 \\times (3 + 4).", "14", 1.0),
    ("The answer is 18 apples.", "18", 1.0),
    ("The answer is $18/hour.", "18", 1.0),
    ("The answer is 18 or 20.", "18", 0.0),  # several answers: unreadable
    ("The answer is 18 or 20.", "20", 0.0),
    ("The answer is 18!", "18", 0.0),
    ("The answer is 72.", "72", 1.0),
    ("<answer>0,111</answer>", "111", 0.0),  # a comma that is no thousands separator: unreadable
    ("<answer>0,111</answer>", "0", 0.0),
    ("<answer>1,22</answer>", "22", 0.0),
    ("<answer>1,200</answer>", "1200", 1.0),
    ("<answer>72.</answer>", "72", 1.0),
    ("<answer> 72; </answer>", "72", 1.0),
    ("<answer>5 - 3 = 2</answer>", "2", 0.0),  # the whole tag content is the answer (kept on purpose)
]


@pytest.mark.parametrize(("text", "gold", "reward"), GSM8K_CASES, ids=[f"{t}|{g}" for t, g, _ in GSM8K_CASES])
def test_gsm8k_reads_the_answer_the_sentence_gives(text, gold, reward):
    assert gsm8k_reward([text], gold=[gold]) == [reward]
    # the last-number fallback does not rescue an unreadable "answer is" (it would read 16 in \sqrt{16})
    order = ["tags", "boxed", "answer_is", "last_number"]
    assert judge_completion(text, gold, order).reward == reward
