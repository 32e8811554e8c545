"""A reward whose groups differ or not by the puzzle alone, for the dynamic-sampling tests and their two-process run.

``puzzle_rows`` prompts read "Numbers i i+1, ..." (i = 1..16); the groups of the puzzles in :data:`DIFFER` score the
completions' ranks in the group (they differ whatever the completions), every other group 0.5 throughout.
"""

from __future__ import annotations

import re

G = 4  # num_generations
# round 1 (no shuffle) is puzzles 1 and 2, of which only 2 differs, so a step needs at least one more round
DIFFER = {2, 5, 6, 9, 12, 13}


def puzzle_index(prompt: str) -> int:
    """The ``i`` of a ``puzzle_rows`` prompt."""
    return int(re.search(r"Numbers (\d+) ", prompt).group(1))


def split_reward(prompts, completions, **kwargs):
    """The rank of the completion in its group (0..3) for the puzzles in DIFFER, 0.5 for every other one."""
    return [float(j % G) if puzzle_index(p) in DIFFER else 0.5 for j, p in enumerate(prompts)]


def batch_puzzles(trainer, batch) -> list[int]:
    """The puzzle of each row of a scored batch, from its prompt ids."""
    tokenizer = trainer.processing_class
    texts = [tokenizer.decode(ids[mask.bool()]) for ids, mask in zip(batch["prompt_ids"], batch["prompt_mask"])]
    return [puzzle_index(text) for text in texts]
