"""``countdown-rl warmup`` end to end, short: the tiny offline model saved as the base, then a two-step SFT on a
task's generated rows, saved beside it (the start of the CPU recipes; ``benchmarks/gr_reinforce_study.py`` runs it
long in the slow tier); a given model (``--model_name_or_path``) warmed up in its chat template, with the loss on the
assistant's answer only. From a ``.gguf`` file: tests/models/test_source.py."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file
from transformers import TrainerCallback

from countdown_rl.cli import main


def test_warmup_writes_the_base_and_the_warmed_up_model(tmp_path, capsys):
    out, base = tmp_path / "warm", tmp_path / "warm-base"
    assert main(["warmup", "--task", "format_copy", "--output_dir", str(out), "--max_steps", "2", "--num_rows", "16",
                 "--size", "test"]) == 0
    assert f"wrote the warmed-up format_copy model to {out} (base model: {base})" in capsys.readouterr().out
    for folder in (base, out):
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            assert (folder / name).is_file(), folder / name
    before, after = load_file(base / "model.safetensors"), load_file(out / "model.safetensors")
    assert before.keys() == after.keys()
    assert any(not torch.equal(before[key], after[key]) for key in before), "the SFT steps changed no weight"


def test_warmup_of_a_given_model_in_its_chat_template(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "warm"
    assert main(["warmup", "--model_name_or_path", str(tiny_model_dir), "--task", "countdown", "--prompt_template",
                 "chat", "--output_dir", str(out), "--max_steps", "2", "--num_rows", "16",
                 "--learning_rate", "1e-2"]) == 0
    assert f"(base model: {tiny_model_dir})" in capsys.readouterr().out
    assert not out.with_name("warm-base").exists()
    before, after = load_file(tiny_model_dir / "model.safetensors"), load_file(out / "model.safetensors")
    assert any(not torch.equal(before[key], after[key]) for key in before), "the SFT steps changed no weight"


def test_sft_under_bf16_autocast_takes_the_same_step_to_rounding_and_keeps_fp32_weights(tiny_model_dir, tmp_path):
    """``sft_trainer(bf16=True)``: the forward runs under bf16 autocast (its loss is not fp32's bit for bit, yet
    within bf16 rounding of it), and the trained weights are saved in fp32 as before."""
    from countdown_rl.tasks import get_task
    from countdown_rl.training.warmup import sft_trainer, task_examples

    task = get_task("countdown")
    examples = task_examples(task, [task.prepare_row(r) for r in task.generate(8, seed=3)], "chat")
    losses = {}
    for bf16 in (False, True):
        trainer = sft_trainer(tiny_model_dir, tmp_path / f"out-{bf16}", examples, steps=1, batch_size=8, bf16=bf16)
        trainer.train()
        losses[bf16] = trainer.state.log_history[0]["loss"]
        assert {p.dtype for p in trainer.model.parameters()} == {torch.float32}
    assert losses[True] != losses[False] and losses[True] == pytest.approx(losses[False], rel=1e-2)


@pytest.mark.comparison  # CI runs it again under another processor's kernels
def test_sft_with_gradient_checkpointing_recomputes_the_activations_and_gives_the_same_gradients(tiny_model_dir,
                                                                                                 tmp_path):
    """``sft_trainer(gradient_checkpointing=True)`` (the demo's ``--gradient_checkpointing``): the model recomputes
    each layer's activations in the backward pass, and the gradients of a batch are those without it. The
    recomputation repeats the forward's operations on the same inputs, so the loss is the same bit for bit; the
    gradients may differ only in the order a tied weight's two parts are summed: float32 roundings (rel 1e-5)."""
    from countdown_rl.tasks import get_task
    from countdown_rl.training.warmup import sft_trainer, task_examples

    task = get_task("countdown")
    examples = task_examples(task, [task.prepare_row(r) for r in task.generate(8, seed=3)], "chat")
    class Gradients(TrainerCallback):  # what the optimiser is about to apply, and whether the model recomputed
        def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
            self.recomputed = model.is_gradient_checkpointing
            self.grads = {name: p.grad.clone() for name, p in model.named_parameters()}

    losses, grads = {}, {}
    for checkpointing in (False, True):
        seen = Gradients()
        trainer = sft_trainer(tiny_model_dir, tmp_path / f"out-{checkpointing}", examples, steps=1, batch_size=8,
                              gradient_checkpointing=checkpointing, callbacks=[seen])
        trainer.train()
        assert seen.recomputed is checkpointing
        losses[checkpointing], grads[checkpointing] = trainer.state.log_history[0]["loss"], seen.grads
    assert losses[True] == losses[False]
    assert grads[True].keys() == grads[False].keys()
    for name, grad in grads[False].items():
        assert grad.abs().sum() > 0 or name.endswith("bias"), name
        torch.testing.assert_close(grads[True][name], grad, rtol=1e-5, atol=1e-8, msg=name)


def test_the_chat_completion_mask_covers_exactly_the_assistants_answer(tiny_model_dir, tmp_path):
    from countdown_rl.tasks import get_task
    from countdown_rl.training.warmup import sft_trainer, task_examples

    task = get_task("countdown")
    rows = [task.prepare_row(r) for r in task.generate(4, seed=3)]
    examples = task_examples(task, rows, "chat")
    trainer = sft_trainer(tiny_model_dir, tmp_path / "out", examples, steps=1)
    tokenizer = trainer.processing_class
    for example, row in zip(examples, trainer.train_dataset, strict=True):
        ids, mask = row["input_ids"], [label != -100 for label in row["labels"]]  # the tokens the loss counts
        assert len(ids) == len(mask) and mask == sorted(mask)  # prompt first, then the answer to the end
        answer = tokenizer.decode([i for i, m in zip(ids, mask, strict=True) if m])
        prompt = tokenizer.decode([i for i, m in zip(ids, mask, strict=True) if not m])
        assert answer == example["completion"] + "<|im_end|>\n"  # the answer and the template's end of turn
        assert answer.startswith("<think>")  # the chat prompt does not open the reasoning: the answer does
        assert prompt == tokenizer.apply_chat_template(example["prompt"], tokenize=False, add_generation_prompt=True)


def test_size_with_a_given_model_is_one_line(tiny_model_dir, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["warmup", "--model_name_or_path", str(tiny_model_dir), "--size", "test", "--task", "countdown",
              "--output_dir", str(tmp_path / "w")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert f"--size is the tiny model's; --model_name_or_path {tiny_model_dir} was given" in err


def test_a_missing_gguf_model_is_one_line_before_loading(tmp_path, capsys, no_loading):
    assert main(["warmup", "--model_name_or_path", str(tmp_path / "no.gguf"), "--task", "countdown", "--output_dir",
                 str(tmp_path / "w")]) == 2
    assert capsys.readouterr().err.strip() == \
        f"countdown-rl warmup: error: --model_name_or_path {tmp_path / 'no.gguf'}: no such GGUF file"
    assert not (tmp_path / "w").exists()


def test_warmup_from_a_recipe_learns_its_training_rows_only(tmp_path, capsys):
    """``--config``: the task, options, template and rows of a train recipe; its held-out rows are never learnt."""
    import yaml

    from countdown_rl.commands.warmup import recipe_rows
    from countdown_rl.data.arguments import DataArguments
    from countdown_rl.data.prepare import prepare_data

    recipe = tmp_path / "r.yaml"
    keys = {"task": "format_copy", "task_options": ["max_digits=2"], "dataset_name": "generated",
            "num_generated_rows": 60, "test_size": 20, "split_seed": 3, "prompt_template": "chat",
            "learning_rate": 1e-4, "output_dir": "elsewhere"}  # a train key too: read by train, not here
    recipe.write_text(yaml.safe_dump(keys))
    task, template, rows = recipe_rows(str(recipe))
    _, held_out, _ = prepare_data(DataArguments(**{k: v for k, v in keys.items() if k not in ("learning_rate",
                                                                                              "output_dir")}))
    assert (task.name, task.options.max_digits, template) == ("format_copy", 2, "chat")
    assert len(rows) == 40 and len(held_out) == 20
    assert not {r["number"] for r in rows} & set(held_out["number"])
    out = tmp_path / "warm"
    assert main(["warmup", "--config", str(recipe), "--output_dir", str(out), "--max_steps", "1", "--num_rows", "8",
                 "--size", "test"]) == 0
    assert (out / "model.safetensors").is_file()
    assert "wrote the warmed-up format_copy model" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    ([], "give --task (rows from the task's generator) or --config (a recipe's training rows), not both"),
    (["--task", "format_copy", "--config", "r.yaml"], "give --task"),
    (["--config", "r.yaml", "--task_options", "max_digits=2"], "--config takes the task options and prompt template"),
])
def test_warmup_asks_for_one_source_of_rows_in_one_line(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["warmup", *argv, "--output_dir", str(tmp_path / "w")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err


def test_warmup_from_a_missing_recipe_is_one_line(tmp_path, capsys):
    assert main(["warmup", "--config", str(tmp_path / "none.yaml"), "--output_dir", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "none.yaml" in err
    assert not (tmp_path / "w").exists()
