"""The RL algorithms a recipe's ``algorithm`` key names: one table for the trainer, the card, the report and the demo.

Each algorithm is a preset of two knobs of :mod:`countdown_rl.algorithms.grpo`: the advantage's std normalisation
and the loss reduction.

1. ``grpo``: advantages ``(r - mean) / (std + eps)`` over the group, loss averaged per sequence then over the batch.
2. ``dr_grpo``: advantages ``r - mean`` (no std), loss summed per sequence and divided by a constant (the budget).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ALGORITHMS", "Algorithm", "display_name"]


@dataclass(frozen=True)
class Algorithm:
    """An algorithm preset: its display name, Hub tag, loss reduction and advantage std normalisation."""

    name: str
    display: str
    tag: str
    reduction: str
    std_normalization: str


ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm("grpo", "GRPO", "grpo", reduction="masked_mean", std_normalization="group"),
        Algorithm("dr_grpo", "Dr.GRPO", "dr-grpo", reduction="masked_mean_drgrpo", std_normalization="none"),
    )
}
"""Algorithm name -> :class:`Algorithm`."""


def display_name(name: str) -> str:
    """How tables and cards print an algorithm (unknown names as they are).

    >>> display_name("dr_grpo"), display_name("reinforce")
    ('Dr.GRPO', 'reinforce')
    """
    algorithm = ALGORITHMS.get(name)
    return algorithm.display if algorithm else name
