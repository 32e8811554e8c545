"""Tripwire for TRL upgrades: every private TRL / transformers name countdown-rl touches, pinned.

:data:`PINNED` lists each one with its owner and, for a method, the parameters we rely on (as TRL 1.16.0 /
transformers declare them; ``None``: an attribute, which must still be assigned in its owner's code). The scanner
(:mod:`tests.helpers.trl_seam`) finds what the package really touches: a new private use that is not pinned fails
here, naming it and its file. If a test fails after changing the trl pin, re-read the new code of the name it
names and re-run the parity tests before updating the entry.
"""

import inspect
import re

import pytest
import trl
from trl import GRPOTrainer

from countdown_rl.training.trainer import CountdownGRPOTrainer
from tests.helpers.trl_seam import owner_class, private_uses

# name -> (the class that defines it, the parameters we rely on; None for an attribute)
PINNED = {
    # CountdownGRPOTrainer's hooks (training/trainer.py)
    "_calculate_rewards": ("trl:GRPOTrainer", ["self", "inputs", "prompts", "completions", "completion_ids_list"]),
    "_generate_and_score_completions": ("trl:GRPOTrainer", ["self", "inputs"]),
    "_compute_loss": ("trl:GRPOTrainer", ["self", "model", "inputs"]),
    "_generate_single_turn": ("trl:GRPOTrainer", ["self", "prompt_ids", "images", "multimodal_fields",
                                                  "num_generations", "has_tool_images"]),
    "_load_optimizer_and_scheduler": ("transformers:Trainer", ["self", "checkpoint"]),
    "_get_train_sampler": ("trl:GRPOTrainer", ["self", "dataset"]),
    "_prepare_inputs": ("trl:GRPOTrainer", ["self", "generation_batch"]),
    # what the hooks call and read
    "_get_per_token_logps_and_entropies": ("trl:GRPOTrainer", ["self", "model", "input_ids", "attention_mask",
                                                               "logits_to_keep", "batch_size", "compute_entropy",
                                                               "compute_aux_loss"]),
    "_logs": ("trl:GRPOTrainer", None),
    "_metrics": ("trl:GRPOTrainer", None),
    "_setup_devices": ("transformers:TrainingArguments", None),  # the cached_property behind args.device
    # the rollout generator's glue (training/rollouts.py)
    "_tokenize_prompts": ("trl:GRPOTrainer", ["self", "prompts"]),
    # vLLM colocated (training/rollouts.py, training/evaluation.py)
    "_iter_named_params": ("trl.generation.vllm_generation:VLLMGeneration", ["self"]),
    "_llm_weights_sleeping": ("trl.generation.vllm_generation:VLLMGeneration", None),
    "_last_loaded_step": ("trl:GRPOTrainer", None),
    # atomic checkpoints, the non-finite guard, preemption (training/reliability.py)
    "_save_checkpoint": ("transformers:Trainer", ["self", "model", "trial"]),
    "_get_output_dir": ("transformers:Trainer", ["self", "trial"]),
    "_get_grad_norm": ("transformers:Trainer", ["self", "model", "grad_norm"]),
    "_step": ("trl:GRPOTrainer", None),
    # group_micro_batches re-splits the generation batch TRL buffers (training/trainer.py)
    "_buffered_inputs": ("trl:GRPOTrainer", None),
}


@pytest.fixture(scope="module")
def uses() -> dict[str, set[str]]:
    return private_uses()


def test_trl_is_the_pinned_version():
    assert trl.__version__ == "1.16.0", "countdown-rl overrides private TRL hooks: pin and re-verify before upgrading"


def test_every_private_name_the_package_touches_is_pinned(uses):
    unpinned = [f"{name} (in {', '.join(sorted(files))})" for name, files in sorted(uses.items())
                if name not in PINNED]
    assert not unpinned, ("private TRL / transformers names used but not pinned in PINNED: " + "; ".join(unpinned)
                          + ". Pin each with its owner and signature (and keep it under countdown_rl/training/)")
    stale = sorted(set(PINNED) - set(uses))
    assert not stale, f"pinned but no longer used by countdown_rl (remove from PINNED): {stale}"


@pytest.mark.parametrize("name", sorted(PINNED))
def test_each_pinned_name_still_exists_as_we_use_it(name):
    owner_path, params = PINNED[name]
    owner = owner_class(owner_path)
    if params is None:  # an attribute: still assigned by its owner's code (or a cached property of it)
        source = inspect.getsource(owner)
        static = inspect.getattr_static(owner, name, None)
        assert re.search(rf"\bself\.{name}\s*(=|\+=)", source) or static is not None, (
            f"{name}: no longer an attribute of {owner_path} (nothing assigns self.{name})")
        return
    assert name in vars(owner), f"{name}: no longer defined by {owner_path}"
    actual = list(inspect.signature(getattr(owner, name)).parameters)
    assert actual[:len(params)] == params, f"{name} ({owner_path}): parameters {actual}, we rely on {params}"


def test_the_hooks_are_still_overridden():
    for name in ("_calculate_rewards", "_generate_and_score_completions", "_compute_loss", "_generate_single_turn",
                 "_load_optimizer_and_scheduler"):
        assert name in CountdownGRPOTrainer.__dict__, f"{name} is no longer overridden"


def test_setup_devices_is_a_cached_property_stored_under_its_name():
    from functools import cached_property

    from transformers import TrainingArguments

    # training/trainer.py swaps args.__dict__["_setup_devices"] to reload an optimizer on plain "cpu"
    assert isinstance(inspect.getattr_static(TrainingArguments, "_setup_devices"), cached_property)


def test_helpers_we_call_still_exist_with_the_arguments_we_pass():
    source = inspect.getsource(GRPOTrainer._generate_and_score_completions)
    # We replace out["advantages"] and rewrite the logged advantages: both must still be produced there.
    assert 'self._logs["advantages"].extend(' in source
    assert '"advantages": advantages' in source
    assert "self._calculate_rewards(" in source


def test_what_the_compiled_generation_backend_relies_on():
    # The plain path's GenerationConfig (sampling, EOS, pad, budget) is what the compiled path copies, with
    # compilation switched back on; and completions are cut after the first EOS in self.eos_token_ids.
    init = inspect.getsource(GRPOTrainer.__init__)
    assert "self.generation_config = GenerationConfig(**generation_kwargs, disable_compile=True)" in init
    assert "self.eos_token_ids" in init
    single = inspect.getsource(GRPOTrainer._generate_single_turn)
    assert "completion_mask = (sequence_indices <= eos_idx.unsqueeze(1)).int()" in single


def test_what_the_vllm_glue_relies_on():
    from trl.generation.vllm_generation import VLLMGeneration

    # awake_engine mirrors VLLMGeneration.generate's sleep handling; the CPU sync replaces sync_weights on the
    # instance and walks _iter_named_params as TRL's sync does.
    generate = inspect.getsource(VLLMGeneration.generate)
    assert "self._llm_weights_sleeping" in generate
    assert "self._iter_named_params()" in inspect.getsource(VLLMGeneration.sync_weights)
    # the in-training evaluation syncs as TRL's rollouts do, keyed on _last_loaded_step
    assert "self._last_loaded_step" in inspect.getsource(GRPOTrainer)
    # colocated_engine_dtype passes the run's dtype through the module's LLM name, which TRL calls without one
    # (in VLLMGeneration._init_vllm, run by __init__)
    init = inspect.getsource(VLLMGeneration._init_vllm)
    call = init[init.index("self.llm = LLM("):]
    call = call[:call.index("\n            )")]
    assert "dtype" not in call, "TRL now passes the colocated engine a dtype: re-check rollouts.colocated_engine_dtype"


def test_the_preemption_counter_is_the_micro_step():
    # PreemptionCallback's cycle end: TRL counts micro-steps in self._step and regenerates every
    # steps_per_generation * num_iterations of them.
    source = inspect.getsource(GRPOTrainer)
    assert "self._step += 1" in source or "self._step = " in source
    assert "steps_per_generation * self.num_iterations" in source


def test_the_step_limit_comes_before_a_step():
    """StepLimitMixin (training/reliability.py) overrides the public get_batch_samples, but relies on the private loop
    around it: each optimizer step's batches are drawn through it before any training_step, and the stop flag it
    sets is read once the (then empty) inner loop is done. GRPOTrainer overrides neither."""
    from transformers import Trainer

    source = inspect.getsource(Trainer._run_epoch)
    draw = source.index("self.get_batch_samples(epoch_iterator, num_batches, self.args.device)")
    inner = source.index("for i, inputs in enumerate(batch_samples):")
    step = source.index("self.training_step(model, inputs, num_items_in_batch)")
    assert draw < inner < step
    # read inside the inner loop (after a step) and again after it, where an empty one ends up
    assert source.count("if self.control.should_epoch_stop or self.control.should_training_stop:", step) == 2
    assert "get_batch_samples" not in vars(GRPOTrainer) and "_run_epoch" not in vars(GRPOTrainer)


def test_what_the_loss_hooks_rely_on():
    """training/config.py lists TRL's loss types, training/trainer.py knows what each one's reduction divides by
    (``full_batch_scale``) and makes TRL's dr_grpo divide by our constant through ``self.max_completion_length``."""
    from dataclasses import fields

    from trl import GRPOConfig

    from countdown_rl.training.config import TRL_LOSS_TYPES
    from countdown_rl.training.trainer import _PER_LOCAL_TOKEN, _PER_ROW

    help_text = next(f for f in fields(GRPOConfig) if f.name == "loss_type").metadata["help"]
    named = re.search(r"Supported values are (.*?)\. ", help_text).group(1)
    assert set(re.findall(r"'(\w+)'", named)) == set(TRL_LOSS_TYPES), "TRL's loss types changed: update both lists"
    source = inspect.getsource(GRPOTrainer._compute_loss)
    assert 'self.loss_type in ["grpo", "sapo"]' in source and 'self.loss_type == "luspo"' in source  # mean over rows
    assert "(per_token_loss.size(0) * self.max_completion_length)" in source  # dr_grpo: B * constant
    assert 'self.loss_type == "bnpo"' in source and "mask.sum().clamp(min=1.0)" in source  # local tokens
    assert 'inputs["num_items_in_batch"]' in source  # dapo / cispo / vespo: the generation batch's tokens
    assert _PER_ROW | _PER_LOCAL_TOKEN | {"dapo", "cispo", "vespo"} == set(TRL_LOSS_TYPES)
    # the one policy forward a loss call makes, which hybrid's second TRL pass reuses
    assert source.count("self._get_per_token_logps_and_entropies(") == 1


def test_the_generation_batch_is_shuffled_then_split_and_buffered():
    """group_micro_batches re-splits what _prepare_inputs buffers: TRL's shuffled generation batch, split into
    steps_per_generation micro-batches, the current one taken at self._step."""
    source = inspect.getsource(GRPOTrainer._prepare_inputs)
    assert "generation_batch = shuffle_sequence_dict(generation_batch)" in source
    assert "split_tensor_dict(generation_batch, self.args.steps_per_generation)" in source
    assert "inputs = self._buffered_inputs[self._step % self.args.steps_per_generation]" in source
