"""Tripwire for TRL upgrades: CountdownGRPOTrainer overrides private GRPOTrainer hooks.

If this fails after changing the trl pin, re-read the new GRPOTrainer and re-run the parity tests before updating
the recorded signatures.
"""

import inspect

import trl
from trl import GRPOTrainer

from countdown_rl.trainer import CountdownGRPOTrainer

# hook -> the parameters we rely on, as TRL 1.16.0 declares them
PINNED_HOOKS = {
    "_calculate_rewards": ["self", "inputs", "prompts", "completions", "completion_ids_list"],
    "_generate_and_score_completions": ["self", "inputs"],
    "_compute_loss": ["self", "model", "inputs"],
}


def test_trl_is_the_pinned_version():
    assert trl.__version__ == "1.16.0", "countdown-rl overrides private TRL hooks: pin and re-verify before upgrading"


def test_overridden_hooks_keep_their_signatures():
    for name, params in PINNED_HOOKS.items():
        assert list(inspect.signature(getattr(GRPOTrainer, name)).parameters) == params, name
        assert name in CountdownGRPOTrainer.__dict__, f"{name} is no longer overridden"


def test_helpers_we_call_still_exist_with_the_arguments_we_pass():
    params = inspect.signature(GRPOTrainer._get_per_token_logps_and_entropies).parameters
    for arg in ("model", "input_ids", "attention_mask", "logits_to_keep", "compute_entropy", "compute_aux_loss"):
        assert arg in params
    source = inspect.getsource(GRPOTrainer._generate_and_score_completions)
    # We replace out["advantages"] and rewrite the logged advantages: both must still be produced there.
    assert 'self._logs["advantages"].extend(' in source
    assert '"advantages": advantages' in source
    assert "self._calculate_rewards(" in source
