"""CountdownGRPOConfig: presets, derived TRL keys, and clashes reported with the keys that clash; the generation
backend against TRL's keys (``use_vllm``, continuous batching), from the backend registry."""

import re

import pytest

from countdown_rl.training.trainer import CountdownGRPOConfig


def _config(tmp_path, **kwargs):
    return CountdownGRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", **kwargs)


@pytest.mark.parametrize(
    "kwargs, reduction, std, loss_type",
    [
        (dict(), None, "group", "dapo"),  # none of ours: TRL's defaults
        (dict(algorithm="grpo"), "masked_mean", "group", "grpo"),
        (dict(algorithm="dr_grpo"), "masked_mean_drgrpo", "none", "dr_grpo"),
        (dict(algorithm="grpo", reduction="token_mean"), "token_mean", "group", "bnpo"),
        (dict(algorithm="dr_grpo", std_normalization="batch"), "masked_mean_drgrpo", "batch", "dr_grpo"),
        (dict(algorithm="grpo", reduction="hybrid", hybrid_alpha=0.25), "hybrid", "group", "grpo"),
        # TRL's names alone, and overriding a preset like ours do
        (dict(loss_type="grpo", scale_rewards="group"), "masked_mean", "group", "grpo"),
        (dict(loss_type="bnpo", scale_rewards=False), "token_mean", "none", "bnpo"),
        (dict(algorithm="dr_grpo", loss_type="dapo"), None, "none", "dapo"),
        (dict(algorithm="grpo", loss_type="dr_grpo"), "masked_mean_drgrpo", "group", "dr_grpo"),
        (dict(algorithm="dr_grpo", scale_rewards="group"), "masked_mean_drgrpo", "group", "dr_grpo"),
        (dict(loss_type="cispo", std_normalization="none"), None, "none", "cispo"),
    ],
)
def test_presets_and_overrides_derive_trl_keys(tmp_path, kwargs, reduction, std, loss_type):
    cfg = _config(tmp_path, **kwargs)
    assert (cfg.reduction, cfg.std_normalization, cfg.loss_type, cfg.scale_rewards) == (reduction, std, loss_type, std)


def test_agreeing_explicit_trl_keys_are_accepted(tmp_path):
    cfg = _config(tmp_path, algorithm="dr_grpo", loss_type="dr_grpo", scale_rewards="none")
    assert cfg.loss_type == "dr_grpo" and cfg.scale_rewards == "none"
    assert _config(tmp_path, algorithm="grpo", scale_rewards=True).scale_rewards == "group"
    assert _config(tmp_path, reduction="token_mean", loss_type="bnpo").reduction == "token_mean"


@pytest.mark.parametrize(
    "kwargs, label",
    [
        (dict(), "dapo"),
        (dict(loss_type="grpo"), "grpo"),  # equals the preset: named by it
        (dict(algorithm="dr_grpo"), "dr_grpo"),
        (dict(algorithm="dr_grpo", loss_type="dapo"), "dapo (std none)"),
        (dict(algorithm="grpo", baseline="none"), "grpo (std group, baseline none)"),
        (dict(algorithm="grpo", reduction="hybrid", hybrid_alpha=0.25), "hybrid 0.25 (std group)"),
        (dict(multi_objective_aggregation="normalize_then_sum", loss_type="grpo"), "grpo (GDPO advantages)"),
    ],
)
def test_the_algorithm_label_says_what_runs(tmp_path, kwargs, label):
    assert _config(tmp_path, **kwargs).algorithm_label == label


def test_a_plain_trl_config_is_adopted_with_every_trl_value_kept(tmp_path):
    from dataclasses import fields

    from trl import GRPOConfig

    trl_args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", loss_type="sapo", beta=0.02,
                          importance_sampling_level="sequence", top_entropy_quantile=0.5)
    ours = CountdownGRPOConfig.from_trl(trl_args)
    assert isinstance(ours, CountdownGRPOConfig)
    for f in fields(GRPOConfig):
        assert getattr(ours, f.name) == getattr(trl_args, f.name), f.name
    assert (ours.algorithm, ours.reduction, ours.std_normalization, ours._own_advantages) == (None, None, "group",
                                                                                              False)


def test_our_advantages_replace_trls_only_when_one_of_our_keys_asks(tmp_path):
    assert not _config(tmp_path)._own_advantages
    trl_keys_only = _config(tmp_path, loss_type="dr_grpo", scale_rewards="none", reduction="masked_mean_drgrpo")
    assert not trl_keys_only._own_advantages
    for kwargs in (dict(algorithm="grpo"), dict(std_normalization="none"), dict(baseline="none"),
                   dict(advantage_eps=1e-6), dict(skip_zero_advantage=True)):
        assert _config(tmp_path, **kwargs)._own_advantages, kwargs


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(reduction="masked_mean", loss_type="dr_grpo"),
         "loss_type='dr_grpo' clashes with reduction='masked_mean', which TRL calls loss_type='grpo'; set one"),
        (dict(reduction="token_mean", loss_type="dapo"), "loss_type='dapo' clashes with reduction='token_mean'"),
        (dict(reduction="hybrid", hybrid_alpha=0.5, loss_type="grpo"),
         "loss_type='grpo' clashes with reduction='hybrid', which mixes TRL's dr_grpo and grpo losses"),
        (dict(std_normalization="none", scale_rewards="group"),
         "scale_rewards='group' clashes with std_normalization='none'"),
        (dict(std_normalization="group", scale_rewards=False), "scale_rewards=False clashes"),
        (dict(loss_type="ppo"), "loss_type must be one of TRL's"),
        (dict(scale_rewards="median"), "scale_rewards must be one of"),
        (dict(reduction="hybrid"), "reduction 'hybrid' needs hybrid_alpha"),
        (dict(reduction="hybrid", hybrid_alpha=1.5), "hybrid_alpha in \\[0, 1\\]"),
        (dict(algorithm="grpo", hybrid_alpha=0.5), "hybrid_alpha is set but reduction is 'masked_mean'"),
        (dict(algorithm="ppo"), "algorithm must be one of"),
        (dict(baseline="median"), "baseline must be one of"),
        (dict(algorithm="dr_grpo", drgrpo_num_tokens=0), "drgrpo_num_tokens must be positive"),
        (dict(drgrpo_num_tokens=64), "drgrpo_num_tokens is Dr.GRPO's normaliser, but loss_type='dapo'"),
        (dict(multi_objective_aggregation="normalize_then_sum", algorithm="grpo"),
         "normalize_then_sum' computes GDPO's advantages itself and takes no algorithm"),
        (dict(multi_objective_aggregation="normalize_then_sum", baseline="none"), "takes no baseline"),
        (dict(skip_zero_advantage=True, beta=0.04), "skip_zero_advantage needs beta 0 \\(got beta=0.04\\)"),
        (dict(skip_zero_advantage=True, entropy_coef=0.01), "skip_zero_advantage needs no entropy bonus"),
        (dict(skip_zero_advantage=True, use_adaptive_entropy=True), "skip_zero_advantage needs no entropy bonus"),
        (dict(skip_zero_advantage=True, top_entropy_quantile=0.2),
         "skip_zero_advantage clashes with top_entropy_quantile=0.2"),
    ],
)
def test_contradictions_fail_fast_naming_the_keys(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message) as error:
        _config(tmp_path, **kwargs)
    assert "\n" not in str(error.value)


def test_every_added_field_has_help():
    from dataclasses import fields

    from trl import GRPOConfig

    base = {f.name for f in fields(GRPOConfig)}
    added = [f for f in fields(CountdownGRPOConfig) if f.name not in base]
    assert {f.name for f in added} >= {"algorithm", "reduction", "drgrpo_num_tokens", "hybrid_alpha", "baseline",
                                       "std_normalization", "advantage_eps", "budget_schedule"}
    for f in fields(CountdownGRPOConfig):
        if f.name in {a.name for a in added} | {"loss_type", "scale_rewards", "shuffle_dataset"}:
            assert f.metadata.get("help"), f.name


# ---------------------------------------------------------------------------------------------------------------
# generation_backend (the registry: countdown_rl.generation.backends)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"use_vllm": True, "generation_backend": "compiled"}, ["use_vllm", "generation_backend", "clashes"]),
        ({"use_vllm": True, "generation_backend": "transformers"}, ["use_vllm", "clashes"]),
        ({"generation_backend": "tensorrt"}, ["generation_backend", "tensorrt"]),
        ({"generation_prompt_buckets": [128]}, ["generation_prompt_buckets", "compiled"]),
        ({"generation_backend": "compiled", "generation_prompt_buckets": [0]}, ["positive"]),
        ({"generation_backend": "compiled", "use_transformers_continuous_batching": True}, ["continuous_batching"]),
    ],
)
def test_backend_clashes_are_one_line_errors(tmp_path, kwargs, words):
    with pytest.raises(ValueError) as err:
        _config(tmp_path, **kwargs)
    message = str(err.value)
    assert "\n" not in message and all(w in message for w in words), message


def test_backend_and_use_vllm_agree(tmp_path):
    assert _config(tmp_path).generation_backend == "transformers"
    cfg = _config(tmp_path, generation_backend="vllm")
    assert cfg.use_vllm and cfg.generation_backend == "vllm"
    assert _config(tmp_path, use_vllm=True).generation_backend == "vllm"
    assert _config(tmp_path, use_vllm=True, generation_backend="vllm").use_vllm
    cfg = _config(tmp_path, generation_backend="compiled", generation_prompt_buckets=[64, 128])
    assert not cfg.use_vllm and cfg.generation_prompt_buckets == [64, 128]


def test_the_backend_choices_are_the_registry():
    from dataclasses import fields

    from countdown_rl.generation.backends import backend_names

    choices = next(f for f in fields(CountdownGRPOConfig) if f.name == "generation_backend").metadata["choices"]
    assert choices == list(backend_names())  # None (unset) is the default, not a choice


def test_the_config_examples_hold():
    import doctest

    import countdown_rl.training.config as config_module

    assert doctest.testmod(config_module).failed == 0


@pytest.mark.parametrize("kwargs, why", [
    (dict(per_device_train_batch_size=4, num_generations=4, gradient_accumulation_steps=2, steps_per_generation=4),
     "steps_per_generation=4 does not divide gradient_accumulation_steps=2"),
    (dict(loss_type="bnpo"), "loss_type bnpo (token_mean) divides by each micro-batch's token count"),
    (dict(entropy_coef=0.01), "the entropy bonus is a mean over each micro-batch's tokens"),
    (dict(top_entropy_quantile=0.5), "top_entropy_quantile=0.5 takes its quantile over each micro-batch"),
])
def test_group_micro_batches_refuse_where_the_update_would_change(tmp_path, kwargs, why):
    with pytest.raises(ValueError, match=rf"^group_micro_batches would change the update: {re.escape(why)}.*; unset group_micro_batches$"):
        _config(tmp_path, group_micro_batches=True, **{"num_generations": 4, **kwargs})
    assert _config(tmp_path, **{"num_generations": 4, **kwargs}).group_micro_batches is False  # fine without it


def test_group_micro_batches_are_accepted_where_each_step_takes_whole_generation_batches(tmp_path):
    cfg = _config(tmp_path, group_micro_batches=True, per_device_train_batch_size=4, num_generations=4,
                  gradient_accumulation_steps=4, steps_per_generation=2, algorithm="dr_grpo", num_iterations=2)
    assert cfg.group_micro_batches and cfg.generation_batch_size == 8
