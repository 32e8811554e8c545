"""Tripwire for TRL upgrades: CountdownGRPOTrainer overrides private GRPOTrainer hooks.

If this fails after changing the trl pin, re-read the new GRPOTrainer and re-run the parity tests before updating
the recorded signatures.
"""

import inspect

import trl
from trl import GRPOTrainer

from countdown_rl.training.trainer import CountdownGRPOTrainer

# hook -> the parameters we rely on, as TRL 1.16.0 declares them
PINNED_HOOKS = {
    "_calculate_rewards": ["self", "inputs", "prompts", "completions", "completion_ids_list"],
    "_generate_and_score_completions": ["self", "inputs"],
    "_compute_loss": ["self", "model", "inputs"],
    # generation_backend: compiled
    "_generate_single_turn": ["self", "prompt_ids", "images", "multimodal_fields", "num_generations",
                              "has_tool_images"],
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


def test_what_the_compiled_generation_backend_relies_on():
    # Sizes the automatic prompt bucket with TRL's own prompt tokenization.
    assert list(inspect.signature(GRPOTrainer._tokenize_prompts).parameters) == ["self", "prompts"]
    # The plain path's GenerationConfig (sampling, EOS, pad, budget) is what the compiled path copies, with
    # compilation switched back on; and completions are cut after the first EOS in self.eos_token_ids.
    init = inspect.getsource(GRPOTrainer.__init__)
    assert "self.generation_config = GenerationConfig(**generation_kwargs, disable_compile=True)" in init
    assert "self.eos_token_ids" in init
    single = inspect.getsource(GRPOTrainer._generate_single_turn)
    assert "completion_mask = (sequence_indices <= eos_idx.unsqueeze(1)).int()" in single
