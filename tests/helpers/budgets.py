"""Budget-schedule probes for training tests: a reward that records each rollout's budget, and the check on it."""

from __future__ import annotations

# The schedule the curriculum and compiled tests train with: 4 tokens from step 0, 8 from step 2 (4 steps).
SCHEDULED = dict(max_steps=4, budget_schedule=[[0, 4], [2, 8]])


def recording_reward(crash_in_call: int | None = None):
    """Dense toy reward that records, per call, the step, the budget it was given, the lengths and the rows."""

    def budget_probe(completions, completion_ids, completion_budget, nums, target, trainer_state, **kwargs):
        budget_probe.calls.append({
            "step": trainer_state.global_step, "budgets": sorted(set(completion_budget)),
            "lengths": [len(ids) for ids in completion_ids], "rows": [[list(n), int(t)] for n, t in zip(nums, target)],
        })
        if len(budget_probe.calls) == crash_in_call:
            raise RuntimeError(f"simulated crash in call {crash_in_call}")
        return [len(set(c)) / (1 + len(c)) for c in completions]

    budget_probe.calls = []
    return budget_probe


def check_budgets(calls, expected):
    """Each reward call got its rollout's budget, and the completions were cut at it (a random model runs on)."""
    assert [c["budgets"] for c in calls] == [[b] for b in expected]
    for call, budget in zip(calls, expected):
        assert max(call["lengths"]) == budget, call
