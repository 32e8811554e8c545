"""The GRPO maths as pure functions: what an algorithm computes, with no trainer, model or file in sight.

- :mod:`.grpo`: group advantages, the clipped surrogate, ``masked_mean`` and the Dr.GRPO constant normaliser.
- :mod:`.presets`: the ``grpo`` / ``dr_grpo`` presets (advantage + reduction) and their display names.
- :mod:`.curriculum`: completion-budget schedules and easy-to-hard / staged data orders.

May import: the standard library, torch. Nothing else of ``countdown_rl``.
"""
