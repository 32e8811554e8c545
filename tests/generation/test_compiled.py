"""``generation_backend: compiled`` (countdown_rl.generation.compiled) on the CPU, against plain ``generate``.

1. Pre-load checks: pad/EOS ids and the static cache length are checked from the tokenizer and the model's config
   (no weights). (The config key against ``use_vllm``: tests/training/test_config.py.)
2. LoRA: merging for generation and restoring leaves the base weights bit-identical (peft's own unmerge does not).
3. Fallback: where torch.compile cannot run, one warning and plain ``generate`` (token for token the plain path).
4. Parity (compiles; slow): a plain and a compiled trainer from the same saved tiny model train two optimizer
   steps with greedy decoding on prompts of two lengths, with weights that move between steps; every batch TRL
   builds (completion ids and masks, lengths, old log-probs with ``num_iterations=2``) is the same. Then seeded
   sampling from both gives the same tokens: transformers compiles only the model forward, so logits processors,
   ``torch.multinomial`` and the RNG stream are the plain path's; the float32 logits of the compiled graph differ
   from eager ones by rounding only, too little to move a sample here. (Not guaranteed in general: in bf16 a
   sample near a CDF boundary could flip; then only the distribution of lengths and rewards would match.)
5. LoRA training (slow): weights after two steps with the compiled backend equal, bit for bit, the weights of a
   plain-path LoRA run trained on the same completions.
6. ``countdown-rl train`` with the key (resumed bit-exactly across a crash) and ``countdown-rl eval --backend
   compiled`` (slow).
7. A budget schedule (slow): the rollouts follow it with no recompile, token for token the plain path's.
"""

from __future__ import annotations

import json
import logging

import pytest
import torch
from datasets import Dataset
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from countdown_rl.generation.compiled import (
    CompiledGeneration,
    check_generation_lengths,
    compile_unavailable_reason,
    merged_lora,
    static_cache,
)
from countdown_rl.training.trainer import CountdownGRPOTrainer
from tests.helpers.budgets import SCHEDULED, check_budgets, recording_reward
from tests.helpers.trainers import logged, tiny_trainer

EOS_ID = 3  # <|im_end|> in the tiny tokenizer

pytestmark = [pytest.mark.usefixtures("one_torch_thread"),  # conftest: tiny models, one thread
              pytest.mark.comparison]  # CI runs it again under another processor's kernels


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Each test's models compile afresh: dynamo caches graphs per code object and stops compiling after 8."""
    yield
    torch._dynamo.reset()


def token_reward(completions, completion_ids, **kwargs):
    """Dense toy reward from the token ids (a random model never solves Countdown), non-zero for every completion."""
    return [(1 + len(ids) + sum(ids) % 7) / 20 for ids in completion_ids]


def _dataset():
    # Two prompt lengths: each optimizer step (2 prompts) sees a short and a long prompt, padded to one bucket.
    rows = [
        {"prompt": f"Numbers {a} {b} {c}, target {t}. Answer:" + extra, "nums": [a, b, c], "target": t}
        for (a, b, c, t), extra in [
            ((7, 7, 65, 51), ""), ((79, 17, 60, 36), " Use each number once, + - * / only."),
            ((3, 4, 9, 21), ""), ((10, 2, 8, 40), " Use each number once, + - * / only."),
        ]
    ]
    return Dataset.from_list(rows)


# The plain and compiled runs compared here: prompts of two lengths, 12 tokens, a learning rate that moves the
# weights between steps, and REINFORCE on the raw dense reward (non-zero advantages even when a group's greedy
# completions agree, so step 2 generates from updated weights).
COMPILED_RUN = dict(max_completion_length=12, temperature=1.0, disable_tqdm=True, learning_rate=0.05,
                    baseline="none", std_normalization="none")


def _trainer(model_dir, tmp_path, peft_config=None, trainer_cls=CountdownGRPOTrainer, **overrides):
    return tiny_trainer(model_dir, tmp_path, reward=token_reward, train_dataset=_dataset(), task=None,
                        peft_config=peft_config, trainer_cls=trainer_cls, **{**COMPILED_RUN, **overrides})


def _record_batches(trainer) -> list[dict]:
    """Keep every batch TRL builds (observation only: the method is called and its result returned unchanged)."""
    batches = []
    build = trainer._generate_and_score_completions

    def recorded(inputs):
        out = build(inputs)
        batches.append({k: v.detach().clone() if torch.is_tensor(v) else v for k, v in out.items()})
        return out

    trainer._generate_and_score_completions = recorded
    return batches


# ---------------------------------------------------------------------------------------------------------------
# 1. Config and pre-load checks
# ---------------------------------------------------------------------------------------------------------------


def test_lengths_are_checked_from_tokenizer_and_config(tiny_model_dir):
    tokenizer, config = AutoTokenizer.from_pretrained(tiny_model_dir), AutoConfig.from_pretrained(tiny_model_dir)
    check_generation_lengths(tokenizer, config, [128], 256)
    check_generation_lengths(tokenizer, config, None, 256)
    with pytest.raises(ValueError, match="2048"):
        check_generation_lengths(tokenizer, config, [1024], 1500)
    config.vocab_size = 3  # eos id 3 no longer exists
    with pytest.raises(ValueError, match="eos_token_id=3 is outside"):
        check_generation_lengths(tokenizer, AutoConfig.from_pretrained(tiny_model_dir, vocab_size=3), None, 16)
    tokenizer.pad_token = None
    with pytest.raises(ValueError, match="no pad token"):
        check_generation_lengths(tokenizer, AutoConfig.from_pretrained(tiny_model_dir), None, 16)


def test_a_bad_cache_length_stops_train_before_the_model_loads(tiny_model_dir, tmp_path, capsys, monkeypatch):
    import transformers

    from tests.helpers.train_runs import SMOKE

    def tripwire(*args, **kwargs):
        raise AssertionError("the model was loaded before the error was reported")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", tripwire)
    from countdown_rl.commands.train import main
    from countdown_rl.tasks.countdown.puzzles import generate_countdown
    from countdown_rl.data.jsonl import write_jsonl

    write_jsonl(generate_countdown(32, seed=0), tmp_path / "p.jsonl")
    code = main(["--config", str(SMOKE), "--model_name_or_path", str(tiny_model_dir), "--dataset_name",
                 str(tmp_path / "p.jsonl"), "--output_dir", str(tmp_path / "out"), "--generation_backend", "compiled",
                 "--generation_prompt_buckets", "2040"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    [line] = [x for x in err.splitlines() if x.startswith("countdown-rl train: error: ")]
    assert "generation_prompt_buckets" in line and "2048" in line


def test_eval_backend_auto_picks_plain_generate_on_the_cpu():
    from countdown_rl.commands.evaluate import build_parser, resolve_backend

    assert not torch.cuda.is_available()
    assert resolve_backend("auto") == "transformers"
    assert resolve_backend("compiled", "cpu") == "compiled"
    assert build_parser().parse_args(["--model_name_or_path", "x", "--backend", "compiled"]).backend == "compiled"


def test_eval_backend_compiled_checks_the_cache_length_before_loading(tiny_model_dir, puzzles, tmp_path, capsys,
                                                                      monkeypatch):
    import transformers

    from countdown_rl.commands.evaluate import main as eval_main

    def tripwire(*args, **kwargs):
        raise AssertionError("the model was loaded before the error was reported")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", tripwire)
    code = eval_main(["--model_name_or_path", str(tiny_model_dir), "--dataset_name", str(puzzles), "--test-size", "16",
                      "--max_completion_length", "2000", "--backend", "compiled", "--output-dir", str(tmp_path),
                      "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--backend compiled" in err[0] and "2048" in err[0], err


# ---------------------------------------------------------------------------------------------------------------
# 2. LoRA merge for generation
# ---------------------------------------------------------------------------------------------------------------


def _lora_model(model_dir):
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(AutoModelForCausalLM.from_pretrained(model_dir),
                           LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules="all-linear"))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # non-zero B so that the merge changes the weights
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
    return model


def test_merged_lora_restores_the_base_weights_bit_for_bit(tiny_model_dir):
    model = _lora_model(tiny_model_dir)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        unmerged_logits = model(ids).logits
        with merged_lora(model):
            merged_logits = model(ids).logits
            assert any(not torch.equal(v, before[k]) for k, v in model.state_dict().items())
    torch.testing.assert_close(merged_logits, unmerged_logits, rtol=1e-5, atol=1e-5)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    # Why the backup: peft's own merge + unmerge round trip is not exact in floating point.
    model.merge_adapter()
    model.unmerge_adapter()
    assert any(not torch.equal(v, before[k]) for k, v in model.state_dict().items())


# ---------------------------------------------------------------------------------------------------------------
# 3. Fallback
# ---------------------------------------------------------------------------------------------------------------


def test_without_torch_compile_it_says_so_once_and_generates_plainly(tiny_model_dir, tmp_path, caplog):
    import torch._dynamo

    plain = _trainer(tiny_model_dir, tmp_path / "plain")
    compiled = _trainer(tiny_model_dir, tmp_path / "compiled", generation_backend="compiled")
    prompts = [[5, 6, 7, 8, 9], [10, 11]] * 4
    with (torch._dynamo.config.patch(disable=True),  # what TORCHDYNAMO_DISABLE=1 sets
          caplog.at_level(logging.WARNING, logger="countdown_rl.generation.compiled")):
        assert "disabled" in compile_unavailable_reason("cpu")
        torch.manual_seed(0)
        ids, _ = compiled._generate_single_turn(prompts, None, {}, 4)
        torch.manual_seed(0)
        compiled._generate_single_turn(prompts, None, {}, 4)
    torch.manual_seed(0)
    expected, _ = plain._generate_single_turn(prompts, None, {}, 4)
    assert ids == expected
    warnings = [r.getMessage() for r in caplog.records if "falling back" in r.getMessage()]
    assert len(warnings) == 1 and "disabled" in warnings[0], warnings


def test_a_run_whose_compiled_warm_up_fails_records_that_plain_generate_ran(tiny_model_dir, puzzles, tmp_path):
    """The run record is written when training begins (``rollouts: compiled``); the warm-up comes after it, at
    ``on_train_begin``, and a failure rewrites the key to say what generates instead (and why)."""
    from tests.helpers.train_runs import SMOKE, train

    out = tmp_path / "run"
    with torch._dynamo.config.patch(disable=True):  # what TORCHDYNAMO_DISABLE=1 sets
        assert train(SMOKE, tiny_model_dir, puzzles, out, "--generation_backend", "compiled", "--max_steps", "1") == 0
    extra = json.loads((out / "run_info.json").read_text())["extra"]
    assert extra["rollouts"].startswith("transformers (compiled fell back: torch.compile is disabled")
    assert json.loads((out / "run_info.json").read_text())["status"]["state"] == "finished"  # the rest kept


def test_the_module_examples_hold():
    import doctest

    import countdown_rl.generation.compiled as module

    assert doctest.testmod(module).failed == 0


def test_generation_config_turns_compile_on_for_a_static_cache():
    from transformers import GenerationConfig

    gen = CompiledGeneration(max_new_tokens=16, prompt_buckets=[32, 64])
    base = GenerationConfig(max_new_tokens=16, do_sample=True, top_k=5, disable_compile=True, pad_token_id=1)
    config = gen.generation_config(base)
    # no cache_implementation: generate() passes its static cache in (transformers refuses both)
    assert (config.cache_implementation, config.max_cache_len, config.disable_compile) == (None, 80, False)
    assert config.top_k == 5 and base.disable_compile  # sampling kept, the trainer's config untouched
    assert gen.width_for([10, 40]) == 64 and gen.width_for([100]) == 128 and gen.cache_length == 144


def test_under_bf16_autocast_the_static_cache_stores_what_plain_generate_attends_to(tiny_model_dir):
    """bf16 autocast over fp32 weights (the CPU demo's setting): keys reach the cache fp32 (the rotary embedding's
    fp32 cos/sin), values bf16. transformers' static cache takes one dtype and fails on the values; ours stores both
    fp32 (exact), and eager generate through it gives plain generate's tokens, and its scores to bf16 rounding.
    (Compiled, in training: below, slow.)"""
    from transformers import GenerationConfig, StaticCache

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    prompt = torch.tensor([[5, 6, 7, 8, 9, 10], [1, 1, 11, 12, 13, 14]])
    mask = (prompt != 1).long()
    config = GenerationConfig(max_new_tokens=10, do_sample=False, pad_token_id=1, eos_token_id=EOS_ID,
                              output_scores=True, return_dict_in_generate=True)
    with torch.autocast("cpu", dtype=torch.bfloat16), torch.no_grad():
        with pytest.raises(RuntimeError, match="same dtype"):  # what the compiled warm-up fell back on
            model.generate(input_ids=prompt, attention_mask=mask, generation_config=config,
                           past_key_values=StaticCache(config=model.config, max_cache_len=32))
        cache = static_cache(model, 32)
        ours = model.generate(input_ids=prompt, attention_mask=mask, generation_config=config, past_key_values=cache)
        plain = model.generate(input_ids=prompt, attention_mask=mask, generation_config=config)
    assert {cache.layers[0].keys.dtype, cache.layers[0].values.dtype} == {torch.float32}
    bf16_model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.bfloat16)
    with torch.no_grad():  # one dtype: nothing widened
        bf16_model.generate(input_ids=prompt, attention_mask=mask, generation_config=config,
                            past_key_values=(bf16_cache := static_cache(bf16_model, 32)))
    assert {bf16_cache.layers[0].keys.dtype, bf16_cache.layers[0].values.dtype} == {torch.bfloat16}
    assert torch.equal(ours.sequences, plain.sequences)
    # The scores to bf16 rounding (measured: 1 ulp, 0.0039 at 0.86): a static cache attends over its whole length
    # with masked slots, summing in another order; transformers' own static cache does the same for a bf16 model.
    for a, b in zip(ours.scores, plain.scores):
        torch.testing.assert_close(a, b, rtol=2**-7, atol=2**-7)
    assert len(set(ours.sequences[:, 6:].flatten().tolist())) > 1  # not one token repeated


# ---------------------------------------------------------------------------------------------------------------
# 4. Parity with plain generate (compiles)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_compiled_training_matches_plain_generate_token_for_token(tiny_model_dir, tmp_path, caplog):
    # num_iterations=2: each generation serves two optimizer steps (4 steps, 2 generations) and TRL computes the
    # old log-probs; the EOS bias makes some greedy completions end at once and others run to the budget.
    common = dict(num_iterations=2, max_steps=4,
                  generation_kwargs={"do_sample": False, "sequence_bias": [[[EOS_ID], 1.0]]})
    # Built and trained one after the other: two GRPOTrainers alive at once share accelerate's state and do not
    # train bit-identically even when both are plain.
    plain = _trainer(tiny_model_dir, tmp_path / "plain", **common)
    plain_batches = _record_batches(plain)
    plain.train()
    compiled = _trainer(tiny_model_dir, tmp_path / "compiled", generation_backend="compiled", **common)
    compiled_batches = _record_batches(compiled)
    weights_before = {k: v.clone() for k, v in compiled.model.state_dict().items()}
    with caplog.at_level(logging.INFO, logger="countdown_rl.generation.compiled"):
        compiled.train()

    gen = compiled.rollout_generator
    assert gen.active and list(gen.compile_seconds) == [8]
    assert any("first compile" in r.getMessage() for r in caplog.records)
    assert not any("recompiled" in r.getMessage() for r in caplog.records)
    logged = [h for h in compiled.state.log_history if "generation/compile_seconds" in h]
    assert len(logged) == 1, "the compile time is logged once"
    # The weights moved, so step 2 generated from updated weights.
    assert any(not torch.equal(v, weights_before[k]) for k, v in compiled.model.state_dict().items())

    assert len(plain_batches) == len(compiled_batches) == 2
    prompt_lengths = set()
    for p, c in zip(plain_batches, compiled_batches):
        assert torch.equal(p["completion_ids"], c["completion_ids"])
        assert torch.equal(p["completion_mask"], c["completion_mask"])
        assert torch.equal(p["prompt_ids"], c["prompt_ids"])
        assert torch.equal(p["old_per_token_logps"], c["old_per_token_logps"])  # eager forward, same inputs
        assert torch.equal(p["advantages"], c["advantages"])
        lengths = set(p["prompt_mask"].sum(1).tolist())
        assert max(lengths) - min(lengths) > 10  # a short and a long prompt in one bucket
        prompt_lengths |= lengths
    assert len(prompt_lengths) == 4
    lengths = torch.cat([b["completion_mask"].sum(1) for b in compiled_batches])
    assert lengths.min() < lengths.max(), "EOS should end some completions early"
    for key in ("completions/mean_length", "completions/clipped_ratio", "reward"):
        assert [h[key] for h in plain.state.log_history if key in h] == [
            h[key] for h in compiled.state.log_history if key in h]
    for key, value in plain.model.state_dict().items():
        assert torch.equal(compiled.model.state_dict()[key], value), key

    # Seeded sampling: the same tokens as plain generate (see the module docstring for why, and when not).
    for trainer in (plain, compiled):
        trainer.generation_config.do_sample = True
    first = compiled_batches[0]
    prompts = [ids[mask.bool()].tolist() for ids, mask in zip(first["prompt_ids"], first["prompt_mask"])]
    draws = {}
    for name, trainer in (("plain", plain), ("compiled", compiled)):
        torch.manual_seed(1234)
        draws[name] = [trainer._generate_single_turn(prompts, None, {}, 4)[0] for _ in range(4)]
    assert draws["plain"] == draws["compiled"]
    assert len({tuple(map(tuple, d)) for d in draws["plain"]}) == 4  # really sampling
    assert not any("recompiled" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------------------------------------------------------
# 5. LoRA training
# ---------------------------------------------------------------------------------------------------------------


class ReplayTrainer(CountdownGRPOTrainer):
    """The plain path, but TRL's generation hook returns completions recorded from another run.

    It also restores the RNG state the recorded run had after generating: TRL shuffles each generation batch with
    the global RNG, and sampling moved it (without this the rows train in another order: ~1e-6 differences).
    """

    replay: list = []

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        expected_prompts, completions, rng_state = self.replay.pop(0)
        assert prompt_ids == expected_prompts
        torch.set_rng_state(rng_state)
        return completions, None


@pytest.mark.slow
def test_lora_weights_equal_plain_training_on_the_same_completions(tiny_model_dir, tmp_path, caplog):
    from peft import LoraConfig

    caplog.set_level(logging.INFO, logger="countdown_rl.generation.compiled")

    lora = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    # Sampling, an EOS bias for varied lengths, gradient checkpointing on (switched off and back for generation).
    common = dict(max_steps=3, gradient_checkpointing=True,
                  generation_kwargs={"sequence_bias": [[[EOS_ID], 2.0]]})
    torch.manual_seed(0)  # TRL wraps the model in peft before Trainer seeds: seed the adapters' init here
    compiled = _trainer(tiny_model_dir, tmp_path / "compiled", peft_config=lora, generation_backend="compiled",
                        **common)
    recorded = []
    generate = compiled._generate_single_turn

    def recording(prompt_ids, *args, **kwargs):
        out = generate(prompt_ids, *args, **kwargs)
        recorded.append((prompt_ids, out[0], torch.get_rng_state()))
        return out

    compiled._generate_single_turn = recording
    compiled.train()
    assert compiled.rollout_generator.active and len(recorded) == 3
    # Warm-up and training generate in the same TRL context: one graph, no recompile (LoRA + checkpointing).
    messages = [r.getMessage() for r in caplog.records if r.name == "countdown_rl.generation.compiled"]
    assert sum("first compile" in m for m in messages) == 1 and not [m for m in messages if "recompiled" in m]
    assert compiled.model.is_gradient_checkpointing and compiled.model.training
    trained = {k: v.clone() for k, v in compiled.model.state_dict().items()}

    ReplayTrainer.replay = list(recorded)
    torch.manual_seed(0)
    plain = _trainer(tiny_model_dir, tmp_path / "plain", peft_config=lora, trainer_cls=ReplayTrainer, **common)
    plain.train()
    assert not ReplayTrainer.replay
    reference = plain.model.state_dict()
    assert trained.keys() == reference.keys()
    different = [k for k in trained if not torch.equal(trained[k], reference[k])]
    assert not different, f"{len(different)} tensors differ from the plain path, e.g. {different[:3]}"
    moved = [k for k in trained if "lora_B" in k and trained[k].abs().sum() > 0]
    assert moved, "training should have moved the adapters (lora_B starts at zero)"


# ---------------------------------------------------------------------------------------------------------------
# 6. countdown-rl train / eval
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_train_with_the_key_resumes_bit_exactly_and_eval_backend_compiled(tiny_model_dir, puzzles, tmp_path,
                                                                          capsys, caplog):
    from countdown_rl.commands.evaluate import main as eval_main
    from tests.helpers.train_runs import SMOKE, check_resume, resume_runs

    caplog.set_level(logging.INFO, logger="countdown_rl.generation.compiled")
    # In-training evaluation every 2 steps too (its batch of 8 shares the training graph).
    runs = resume_runs(SMOKE, tiny_model_dir, puzzles, tmp_path, lambda out: "true",
                       "--generation_backend", "compiled", "--eval_strategy", "steps", "--eval_steps", "2")
    check_resume(runs, "model.safetensors")
    state = json.loads((runs.full / "trainer_state.json").read_text())
    assert [h["step"] for h in state["log_history"] if "eval_accuracy" in h] == [2, 4]
    messages = [r.getMessage() for r in caplog.records if r.name == "countdown_rl.generation.compiled"]
    assert sum("first compile" in m for m in messages) == 3  # one per run: uninterrupted, crashed, resumed
    assert not [m for m in messages if "recompiled" in m or "falling back" in m]
    info = json.loads((runs.full / "run_info.json").read_text())
    assert info["recipe"]["generation_backend"] == "compiled"  # the effective recipe in the run record
    assert info["extra"]["rollouts"] == "compiled"  # and what generated the rollouts
    compile_logs = [h for h in state["log_history"] if "generation/compile_seconds" in h]
    assert len(compile_logs) == 1 and compile_logs[0]["step"] == 1
    assert json.loads((runs.full / "eval" / "eval.json").read_text())["meta"]["backend"] == "compiled"

    results = {}
    for backend in ("transformers", "compiled"):
        out = tmp_path / f"eval-{backend}"
        code = eval_main(["--model_name_or_path", str(runs.full), "--dataset_name", str(puzzles), "--test-size", "16",
                          "--max_completion_length", "8", "16", "--batch-size", "5", "--backend", backend,
                          "--output-dir", str(out), "--no-progress"])
        assert code == 0, capsys.readouterr().err
        results[backend] = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    # Greedy, 16 puzzles in batches of 5 (the last one padded to 5 rows): the same completions.
    assert results["compiled"] == results["transformers"]
    messages = [r.getMessage() for r in caplog.records if r.name == "countdown_rl.generation.compiled"]
    assert sum("first compile" in m for m in messages) == 4 and not any("recompiled" in m for m in messages)


@pytest.mark.slow
def test_two_process_cpu_launch_with_the_key(tiny_model_dir, puzzles, tmp_path):
    from tests.helpers.train_runs import DDP_LAUNCH, SMOKE, accelerate_launch

    out = tmp_path / "out"
    result = accelerate_launch(DDP_LAUNCH, ["-m", "countdown_rl.commands.train"], "--config", str(SMOKE),
                               "--model_name_or_path", str(tiny_model_dir), "--dataset_name", str(puzzles),
                               "--output_dir", str(out), "--final_eval_size", "8", "--generation_backend", "compiled",
                               timeout=600)
    logs = result.stdout + result.stderr
    assert result.returncode == 0, logs[-5000:]
    # Each process compiles one graph (8 sequences per rank in training and in the final evaluation alike).
    assert logs.count("compiled generation: first compile") == 2, logs[-5000:]
    assert "compiled generation unavailable" not in logs and "compiled generation: recompiled" not in logs
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 4
    final = json.loads((out / "eval" / "eval.json").read_text())
    assert final["meta"]["num_rows"] == 8 and final["meta"]["backend"] == "compiled"


# ---------------------------------------------------------------------------------------------------------------
# 7. A budget schedule (algorithms.curriculum) on the compiled path
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_compiled_path_follows_the_schedule_without_recompiling(tiny_model_dir, tmp_path, caplog):
    import logging

    plain_reward, compiled_reward = recording_reward(), recording_reward()
    plain = tiny_trainer(tiny_model_dir, tmp_path / "plain", reward=plain_reward, **{**SCHEDULED, "max_steps": 3})
    plain.train()
    compiled = tiny_trainer(tiny_model_dir, tmp_path / "compiled", reward=compiled_reward,
                            **{**SCHEDULED, "max_steps": 3}, generation_backend="compiled")
    try:
        with caplog.at_level(logging.INFO, logger="countdown_rl.generation.compiled"):
            compiled.train()
        gen = compiled.rollout_generator
        assert gen.active and gen.max_new_tokens == 8  # the static cache holds the largest budget
        assert not any("recompiled" in r.getMessage() for r in caplog.records)
        check_budgets(compiled_reward.calls, [4, 4, 8])
        assert [c["lengths"] for c in compiled_reward.calls] == [c["lengths"] for c in plain_reward.calls]
        assert logged(compiled, "reward") == logged(plain, "reward")  # the same tokens, budget by budget
    finally:
        torch._dynamo.reset()


# ---------------------------------------------------------------------------------------------------------------
# 8. bf16 autocast over fp32 weights (the CPU demo's setting)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_training_under_bf16_autocast_compiles_and_matches_plain_generate(tiny_model_dir, tmp_path, caplog):
    """Before the mixed-precision cache the warm-up failed here (``index_copy_(): ... Float and BFloat16``) and
    every rollout fell back to plain generate; now the compiled path runs and its greedy rollouts are the plain
    path's (the scores differ by bf16 rounding only: see the eager test above)."""
    common = {"bf16": True, "max_steps": 2,
              "generation_kwargs": {"do_sample": False, "sequence_bias": [[[EOS_ID], 1.0]]}}
    plain = _trainer(tiny_model_dir, tmp_path / "plain", **common)
    plain_batches = _record_batches(plain)
    plain.train()
    compiled = _trainer(tiny_model_dir, tmp_path / "compiled", generation_backend="compiled", **common)
    compiled_batches = _record_batches(compiled)
    with caplog.at_level(logging.INFO, logger="countdown_rl.generation.compiled"):
        compiled.train()
    messages = [r.getMessage() for r in caplog.records]
    assert compiled.rollout_generator.active, messages
    assert not any("falling back" in m or "recompiled" in m for m in messages), messages
    assert len(plain_batches) == len(compiled_batches) == 2
    for p, c in zip(plain_batches, compiled_batches):
        assert torch.equal(p["completion_ids"], c["completion_ids"])
        assert torch.equal(p["completion_mask"], c["completion_mask"])
    lengths = torch.cat([b["completion_mask"].sum(1) for b in compiled_batches])
    assert lengths.min() < lengths.max(), "EOS should end some completions early"
