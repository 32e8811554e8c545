"""Prompt-once log-probs equal the plain pass: per-token log-probs, entropies and every parameter's gradient.

Method: the tiny Qwen3 in fp32 with TRL's fused head (temperature 0.7), micro-batches laid out as TRL lays them out
(prompts left-padded to one length, groups shuffled, split, or all distinct), the plain pass being TRL's own
``_get_per_token_logps_and_entropies``; then whole trainer steps with the flag on and off.
"""

import pytest
import torch
from transformers import AutoModelForCausalLM

from countdown_rl.training.shared_prompt import distinct_prompts, shared_prompt_logps
from tests.helpers.trainers import logged, tiny_trainer

pytestmark = pytest.mark.comparison  # CI runs it again under another processor's kernels

PROMPT_LEN, COMPLETION_LEN = 10, 6


@pytest.fixture(scope="module", params=["full", "lora"])
def fused_model(tiny_model_dir, request):
    """The tiny Qwen3 with TRL's fused head, as TRL prepares it (the head before a LoRA adapter, if any)."""
    from trl.trainer.utils import add_fused_lm_head

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    add_fused_lm_head(model, temperature=0.7, outputs=("log_probs", "entropy"))
    if request.param == "lora":
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    return model


def _micro_batch(layout: str, seed: int = 1):
    """Rows of ``[prompt, completion]`` as TRL holds them: 4 prompts of varied padding, G = 4 (or all distinct)."""
    g = torch.Generator().manual_seed(seed)
    prompts = torch.randint(5, 400, (4, PROMPT_LEN), generator=g)
    prompt_mask = torch.ones_like(prompts)
    for i, pad in enumerate((3, 0, 5, 1)):  # left padding of different lengths
        prompts[i, :pad], prompt_mask[i, :pad] = 1, 0
    index = {"grouped": torch.arange(4).repeat_interleave(4), "all_distinct": torch.arange(4),
             "split_group": torch.tensor([0, 0, 0, 1, 1, 2, 3]),  # groups cut across micro-batches
             "shuffled": torch.arange(4).repeat_interleave(4)[torch.randperm(16, generator=g)]}[layout]
    completions = torch.randint(5, 400, (index.numel(), COMPLETION_LEN), generator=g)
    lengths = torch.randint(1, COMPLETION_LEN + 1, (index.numel(),), generator=g)
    completion_mask = (torch.arange(COMPLETION_LEN) < lengths.unsqueeze(1)).long()
    input_ids = torch.cat([prompts[index], completions], dim=1)
    attention_mask = torch.cat([prompt_mask[index], completion_mask], dim=1)
    return input_ids, attention_mask, completion_mask


def _plain(model, input_ids, attention_mask):
    labels = input_ids.masked_fill(attention_mask == 0, -100)
    labels[:, :-COMPLETION_LEN] = -100
    out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, fused_lm_head=True)
    return out.log_probs[:, -COMPLETION_LEN:], out.entropy[:, -COMPLETION_LEN:]


def _grads(model, logps, completion_mask):
    model.zero_grad()
    (logps * completion_mask).sum().backward()
    return [p.grad.clone() for p in model.parameters() if p.requires_grad]


@pytest.mark.parametrize("layout", ["grouped", "shuffled", "split_group"])
def test_log_probs_entropies_and_gradients_equal_the_plain_pass(fused_model, layout):
    input_ids, attention_mask, completion_mask = _micro_batch(layout)
    logps, entropies = _plain(fused_model, input_ids, attention_mask)
    plain_grads = _grads(fused_model, logps, completion_mask)
    shared = shared_prompt_logps(fused_model, input_ids, attention_mask, COMPLETION_LEN, compute_entropy=True)
    assert shared is not None
    mask = completion_mask.bool()
    torch.testing.assert_close(shared[0][mask], logps[mask].detach(), rtol=0, atol=1e-5)
    torch.testing.assert_close(shared[1][mask], entropies[mask].detach(), rtol=0, atol=1e-5)
    for plain_grad, grad in zip(plain_grads, _grads(fused_model, shared[0], completion_mask), strict=True):
        torch.testing.assert_close(grad, plain_grad, rtol=1e-4, atol=1e-5)


def test_all_distinct_prompts_leave_it_to_the_plain_pass(fused_model):
    input_ids, attention_mask, _ = _micro_batch("all_distinct")
    assert shared_prompt_logps(fused_model, input_ids, attention_mask, COMPLETION_LEN) is None


def test_distinct_prompts_tell_padding_apart():
    ids = torch.tensor([[1, 5, 6], [1, 5, 6], [5, 5, 6]])
    mask = torch.tensor([[0, 1, 1], [1, 1, 1], [1, 1, 1]])  # same ids, other mask: another prompt
    first, inverse = distinct_prompts(ids, mask)
    assert first.numel() == 3 and inverse.unique().numel() == 3


@pytest.mark.parametrize("options", [
    pytest.param(dict(algorithm="grpo"), id="grpo"),
    pytest.param(dict(loss_type="dapo", num_iterations=2, beta=0.04), id="dapo-it2-kl"),
    pytest.param(dict(algorithm="dr_grpo", skip_zero_advantage=True), id="dr_grpo-skip"),
    pytest.param(dict(importance_sampling_level="sequence", top_entropy_quantile=0.5), id="gspo-filter"),
])
def test_two_trainer_steps_with_the_flag_on_and_off_give_equal_weights(tiny_model_dir, tmp_path, options):
    """SGD: Adam's first steps divide each gradient by its own size, so float noise in a near-zero gradient would be a
    full step either way and hide what is compared."""
    runs = {}
    for flag in (False, True):
        trainer = tiny_trainer(tiny_model_dir, tmp_path / str(flag), task=None, shared_prompt_forward=flag,
                               optim="sgd", learning_rate=0.1, generation_kwargs={"sequence_bias": [[[3], 4.0]]},
                               **options)
        trainer.train()
        runs[flag] = trainer
    for (name, off), on in zip(runs[False].model.named_parameters(), runs[True].model.parameters(), strict=True):
        torch.testing.assert_close(on, off, rtol=1e-4, atol=1e-6, msg=name)
    assert logged(runs[True], "loss") == pytest.approx(logged(runs[False], "loss"), rel=1e-4, abs=1e-6)


def test_gradient_checkpointing_log_probs_and_gradients_equal_the_plain_pass(tiny_model_dir):
    """The tail's checkpointed layers replay against the read-only cache; the prompt pass runs plainly."""
    from trl.trainer.utils import add_fused_lm_head

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    add_fused_lm_head(model, temperature=0.7, outputs=("log_probs", "entropy"))
    model.train()
    input_ids, attention_mask, completion_mask = _micro_batch("shuffled")
    logps, _ = _plain(model, input_ids, attention_mask)
    plain_grads = _grads(model, logps, completion_mask)
    model.gradient_checkpointing_enable({"use_reentrant": False})
    shared, _ = shared_prompt_logps(model, input_ids, attention_mask, COMPLETION_LEN)
    mask = completion_mask.bool()
    torch.testing.assert_close(shared[mask], logps[mask].detach(), rtol=0, atol=1e-5)
    for plain_grad, grad in zip(plain_grads, _grads(model, shared, completion_mask), strict=True):
        torch.testing.assert_close(grad, plain_grad, rtol=1e-4, atol=1e-5)
    layers = [m for m in model.modules() if hasattr(m, "_can_checkpoint_with_cache")]
    assert layers and all(m.gradient_checkpointing and not m._can_checkpoint_with_cache for m in layers)  # restored


def _prompt_passes(trainer) -> list[int]:
    """Counts the forwards that run against a prompt cache (observed with a forward hook, nothing replaced)."""
    from countdown_rl.training.shared_prompt import PromptCache

    calls = []
    trainer.model.register_forward_pre_hook(
        lambda module, args, kwargs: calls.append(1) if isinstance(kwargs.get("past_key_values"), PromptCache)
        else None, with_kwargs=True)
    return calls


def test_two_trainer_steps_with_gradient_checkpointing_on_and_off_give_equal_weights(tiny_model_dir, tmp_path,
                                                                                     caplog):
    runs, passes = {}, {}
    for flag in (False, True):
        with caplog.at_level("WARNING", logger="countdown_rl.training.trainer"):
            trainer = tiny_trainer(tiny_model_dir, tmp_path / str(flag), task=None, shared_prompt_forward=flag,
                                   gradient_checkpointing=True, optim="sgd", learning_rate=0.1,
                                   generation_kwargs={"sequence_bias": [[[3], 4.0]]})
            passes[flag] = _prompt_passes(trainer)
            trainer.train()
        runs[flag] = trainer
    assert not passes[False] and passes[True]  # the flag on ran prompt-once, under checkpointing
    assert not [r for r in caplog.records if "plain log-prob pass runs" in r.getMessage()]
    for (name, off), on in zip(runs[False].model.named_parameters(), runs[True].model.parameters(), strict=True):
        torch.testing.assert_close(on, off, rtol=1e-4, atol=1e-6, msg=name)


def test_reentrant_checkpointing_runs_the_plain_pass_and_says_so_once(tiny_model_dir, tmp_path, caplog):
    """Reentrant checkpointing passes no gradient to tensors outside a layer's arguments (the cache): with the flag
    unset (its default, on where it can run) the plain pass runs, the same update as with the flag off, and the log
    says why once."""
    runs = {}
    for flag in (False, None):
        with caplog.at_level("WARNING", logger="countdown_rl.training.trainer"):
            trainer = tiny_trainer(tiny_model_dir, tmp_path / str(flag), task=None, shared_prompt_forward=flag,
                                   gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": True},
                                   optim="sgd", learning_rate=0.1)
            trainer.train()
        runs[flag] = trainer
    said = [r for r in caplog.records if "shared_prompt_forward: the plain log-prob pass runs" in r.getMessage()]
    assert len(said) == 1 and "reentrant" in said[0].getMessage()
    for off, on in zip(runs[False].model.parameters(), runs[None].model.parameters(), strict=True):
        assert torch.equal(on, off)


def test_asked_for_where_it_cannot_run_the_run_refuses_in_one_line(tmp_path):
    """``shared_prompt_forward: true`` is a request: under reentrant checkpointing the config refuses before any
    model loads; on a model whose cache holds a Mamba state (NemotronH) the trainer refuses at its start."""
    from transformers import AutoModelForCausalLM, NemotronHConfig

    from countdown_rl.demo.tiny import build_tiny_tokenizer
    from countdown_rl.training.config import CountdownGRPOConfig

    with pytest.raises(ValueError, match=r"^shared_prompt_forward: true needs non-reentrant gradient checkpointing"):
        CountdownGRPOConfig(output_dir=str(tmp_path / "re"), use_cpu=True, report_to="none",
                            shared_prompt_forward=True, gradient_checkpointing=True,
                            gradient_checkpointing_kwargs={"use_reentrant": True})
    tokenizer = build_tiny_tokenizer()
    config = NemotronHConfig(num_hidden_layers=3, hybrid_override_pattern="M*-", hidden_size=64,
                             vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id)
    AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path / "hybrid")
    tokenizer.save_pretrained(tmp_path / "hybrid")
    with pytest.raises(ValueError, match=r"^shared_prompt_forward: true cannot run here: the model's cache holds "
                                         r"LinearAttentionLayer, not only attention layers; leave it unset"):
        tiny_trainer(tmp_path / "hybrid", tmp_path / "asked", task=None, shared_prompt_forward=True)
    unset = tiny_trainer(tmp_path / "hybrid", tmp_path / "unset", task=None)
    assert unset.log_prob_pass == "plain (the model's cache holds LinearAttentionLayer, not only attention layers)"


def test_a_cache_with_other_than_attention_layers_is_named():
    """A Mamba mixer's cache layer holds a recurrent state a tail pass would advance: such a model runs the plain
    pass (the trainer's reason names the layer kind)."""
    from transformers import NemotronHConfig, Qwen3Config

    from countdown_rl.training.shared_prompt import other_cache_layers

    hybrid = NemotronHConfig(num_hidden_layers=3, hybrid_override_pattern="M*-", hidden_size=64, vocab_size=100)
    assert other_cache_layers(hybrid) == ["LinearAttentionLayer"]
    sliding = Qwen3Config(num_hidden_layers=2, layer_types=["sliding_attention", "full_attention"], sliding_window=8,
                          use_sliding_window=True)
    assert other_cache_layers(sliding) == []


def test_the_run_record_says_which_log_prob_pass_ran(tiny_model_dir, tmp_path):
    default = tiny_trainer(tiny_model_dir, tmp_path / "on", task=None)
    off = tiny_trainer(tiny_model_dir, tmp_path / "off", task=None, shared_prompt_forward=False)
    reentrant = tiny_trainer(tiny_model_dir, tmp_path / "re", task=None,
                             gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": True})
    assert (default.log_prob_pass, off.log_prob_pass) == ("prompt-once", "plain")
    assert reentrant.log_prob_pass.startswith("plain (reentrant gradient checkpointing")


def test_active_dropout_names_what_would_fire(tiny_model_dir):
    """A dropout module with p > 0 counts in training mode (LoRA's lora_dropout), a config's rate while the model
    trains (attention_dropout, applied functionally); nothing fires in eval mode."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig

    from countdown_rl.training.shared_prompt import active_dropout

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert active_dropout(model.train()) is None  # the tiny Qwen3 has attention_dropout 0
    lora = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj"], lora_dropout=0.05))
    assert (active_dropout(lora.train()), active_dropout(lora.eval())) == ("lora_dropout 0.05", None)
    assert active_dropout(lora.eval(), training=True) == "lora_dropout 0.05"  # as it will be when it trains
    config = AutoConfig.from_pretrained(tiny_model_dir, attention_dropout=0.1)
    attention = AutoModelForCausalLM.from_config(config)
    assert (active_dropout(attention.train()), active_dropout(attention.eval())) == ("attention_dropout 0.1", None)


def test_under_active_dropout_the_plain_pass_runs_and_true_refuses(tiny_model_dir, tmp_path):
    """Prompt-once would give the G rows of a group one dropout mask over the prompt (the plain pass draws one per
    row): with lora_dropout 0.05 the default runs the plain pass, the same update as the flag off bit for bit (the
    same draws), the record says why; asked for with true, the trainer refuses."""
    from peft import LoraConfig

    lora = LoraConfig(r=4, target_modules=["q_proj", "v_proj"], lora_dropout=0.05)
    runs = {}
    for flag in (False, None):
        trainer = tiny_trainer(tiny_model_dir, tmp_path / str(flag), task=None, peft_config=lora,
                               shared_prompt_forward=flag, optim="sgd", learning_rate=0.1, max_steps=1)
        trainer.train()
        runs[flag] = trainer
    for off, on in zip(runs[False].model.parameters(), runs[None].model.parameters(), strict=True):
        assert torch.equal(on, off)
    ran = runs[None].log_prob_passes["loss"]
    assert set(ran) == {"plain"} and list(ran["plain"]["why"]) == [
        "dropout is active (lora_dropout 0.05): the rows of a group would share one mask over the prompt, where "
        "the plain pass draws one per row"]
    assert runs[None].log_prob_pass.startswith("plain (dropout is active (lora_dropout 0.05)")
    assert runs[None].log_prob_pass_ran == runs[None].log_prob_pass
    with pytest.raises(ValueError, match=r"^shared_prompt_forward: true cannot run here: dropout is active "
                                         r"\(lora_dropout 0.05\)"):
        tiny_trainer(tiny_model_dir, tmp_path / "asked", task=None, peft_config=lora, shared_prompt_forward=True)


def test_a_chunk_that_shares_nothing_runs_plain_alone_and_the_others_are_kept(tiny_model_dir, tmp_path):
    """Two chunks of 4 rows: the first holds 2 prompts twice each (prompt-once: a prompt pass and a tail pass), the
    second 4 distinct prompts (TRL's plain pass on it alone): 3 forwards, not the 2 + 2 of a rerun of the whole pass
    plain; log-probs and gradients equal TRL's plain pass over both chunks; the counts say what ran and why."""
    from trl import GRPOTrainer

    trainer = tiny_trainer(tiny_model_dir, tmp_path, task=None)
    model = trainer.model
    input_ids, attention_mask, completion_mask = _micro_batch("grouped")  # rows 4k..4k+3: prompt k
    rows = [0, 1, 4, 5] + [2, 6, 10, 14]  # prompts 0, 0, 1, 1 | 0, 1, 2, 3
    ids, mask, completion = input_ids[rows], attention_mask[rows], completion_mask[rows]
    plain = GRPOTrainer._get_per_token_logps_and_entropies(trainer, model, ids, mask, COMPLETION_LEN, batch_size=4)
    plain_grads = _grads(model, plain[0], completion)
    forwards = []
    model.register_forward_pre_hook(lambda module, args: forwards.append(1))
    logps, _, _ = trainer._get_per_token_logps_and_entropies(model, ids, mask, COMPLETION_LEN, batch_size=4)
    assert len(forwards) == 3
    mask_ = completion.bool()
    torch.testing.assert_close(logps[mask_], plain[0][mask_].detach(), rtol=0, atol=1e-5)
    for plain_grad, grad in zip(plain_grads, _grads(model, logps, completion), strict=True):
        torch.testing.assert_close(grad, plain_grad, rtol=1e-4, atol=1e-5)
    assert trainer.log_prob_passes == {"loss": {
        "prompt-once": {"micro_batches": 1, "rows": 4, "distinct_prompts": 2},
        "plain": {"micro_batches": 1, "rows": 4, "distinct_prompts": 4, "why": {"every prompt distinct": 1}}}}
    assert trainer.log_prob_pass_ran == "prompt-once (plain in 1 of 2 micro-batches: every prompt distinct)"
    assert trainer.log_prob_pass == "prompt-once"  # the setting, as the record says before training


def test_the_run_record_says_what_the_passes_ran_with_counts(tiny_model_dir, tmp_path):
    """The record written before training says the setting; at the end it says what ran: 2 steps x 8 rows, 2
    prompts a step, every micro-batch prompt-once. A run where no micro-batch shared says plain, and why."""
    from countdown_rl.runs.record import RunRecord, read_run_record, write_run_record

    trainer = tiny_trainer(tiny_model_dir, tmp_path / "run", task=None)
    write_run_record(tmp_path / "run", RunRecord(extra={"log_prob_pass": trainer.log_prob_pass}))
    trainer.train()
    extra = read_run_record(tmp_path / "run").extra
    assert extra["log_prob_pass"] == "prompt-once"
    assert extra["log_prob_passes"] == {"loss": {"prompt-once": {"micro_batches": 2, "rows": 16,
                                                                 "distinct_prompts": 4}}}
    lone = tiny_trainer(tiny_model_dir, tmp_path / "lone", task=None)
    input_ids, attention_mask, _ = _micro_batch("all_distinct")
    with torch.no_grad():
        lone._get_per_token_logps_and_entropies(lone.model, input_ids, attention_mask, COMPLETION_LEN)
    assert lone.log_prob_pass_ran == "plain (every prompt distinct)"
    assert lone.log_prob_passes["no_grad"]["plain"]["why"] == {"every prompt distinct": 1}


@pytest.mark.parametrize(("device", "lora", "checkpointing", "on"), [
    ("cpu", False, False, True), ("cpu", True, True, True),  # every CPU row gained (1.34-3.61x)
    ("cuda", False, True, True),  # H200, full fine-tuning with checkpointing: 1.05-1.12x
    ("cuda", False, False, False),  # without checkpointing: 0.94-0.98x
    ("cuda", True, True, False),  # LoRA (with checkpointing): 0.82-0.92x
    ("mps", False, True, False),  # not measured
])
def test_the_default_is_on_only_where_a_measured_row_gained(device, lora, checkpointing, on):
    """The trainer passes its device type (CUDA cannot run here: the choice is a function of it)."""
    from countdown_rl.training.trainer import prompt_once_default

    chosen, why = prompt_once_default(device, lora=lora, gradient_checkpointing=checkpointing)
    assert chosen is on and why.startswith(f"default {'on' if on else 'off'} ")
