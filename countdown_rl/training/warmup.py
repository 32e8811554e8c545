"""Supervised warm-up before RL: a short SFT on demonstrations, so a small model starts with the format.

RL from a model that never writes the answer format learns nothing (every reward in a group is equal, so every
advantage is zero). The CPU demo and the toy studies therefore start from a briefly fine-tuned model:

1. :func:`task_examples` pairs each row's prompt (the task's template) with the task's demonstration
   (:meth:`countdown_rl.tasks.base.Task.demonstration`, e.g. ``<answer>4821</answer>`` for format_copy).
2. :func:`sft_examples` writes them as TRL's SFT expects: a plain prompt gets the EOS appended to its completion; a
   chat prompt (a list of messages) gets its completion as the assistant's message, so the model's own chat
   template renders both and the end of the turn is the template's.
3. :func:`sft_warmup` runs TRL's ``SFTTrainer`` on them (loss on the completion only), a short constant-rate run
   that is stopped early on purpose, and saves model and tokenizer.
4. ``countdown-rl warmup --task NAME --output_dir DIR`` (:mod:`countdown_rl.commands.warmup`) does both on the tiny
   offline Qwen3 (or ``--model_name_or_path``: a folder, Hub id, ``.gguf`` file or ``smollm2``) and the task's
   generated rows: the starting point of the CPU recipes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from countdown_rl.tasks.base import Task

__all__ = ["sft_examples", "sft_trainer", "sft_warmup", "task_examples"]


def task_examples(task: Task, rows: Sequence[Mapping[str, Any]], template: str | None = None) -> list[dict]:
    """``{"prompt", "completion"}`` pairs: the task's prompt and demonstration of each (prepared) row.

    >>> from countdown_rl.tasks import get_task
    >>> task = get_task("countdown")
    >>> task_examples(task, [{"nums": [2, 3], "target": 6}])[0]["completion"].endswith("<answer>2 * 3</answer>")
    True
    """
    return [{"prompt": task.prompt(row, template), "completion": task.demonstration(row, template)} for row in rows]


def sft_examples(examples: Sequence[Mapping[str, Any]], eos_token: str) -> list[dict]:
    """TRL's prompt-completion rows: a plain prompt's completion ends with ``eos_token``; a chat prompt's completion
    is the assistant's message (its chat template ends the turn).

    >>> sft_examples([{"prompt": "2 3 -> 6:", "completion": "2 * 3"}], "</s>")[0]["completion"]
    '2 * 3</s>'
    >>> sft_examples([{"prompt": [{"role": "user", "content": "2 3 -> 6"}], "completion": "2 * 3"}], "</s>")[0][
    ...     "completion"]
    [{'role': 'assistant', 'content': '2 * 3'}]
    """
    rows = []
    for e in examples:
        chat = isinstance(e["prompt"], list)
        completion = [{"role": "assistant", "content": e["completion"]}] if chat else e["completion"] + eos_token
        rows.append({"prompt": e["prompt"], "completion": completion})
    return rows


def sft_trainer(
    base_dir: str | Path,
    out_dir: str | Path,
    examples: Sequence[Mapping[str, Any]],
    *,
    steps: int,
    batch_size: int = 16,
    learning_rate: float = 3e-3,
    seed: int = 0,
    callbacks: Sequence[Any] = (),
    max_length: int = 256,
    use_cpu: bool = True,
    bf16: bool = False,
    gradient_checkpointing: bool = False,
):
    """TRL's ``SFTTrainer`` for the model in ``base_dir`` on ``examples`` (:func:`sft_examples`, loss on the
    completion only), ``steps`` steps, its own printing off and ``callbacks`` added; not yet trained. ``bf16``: the
    forwards and backwards under bf16 autocast (the weights and the optimiser stay fp32). ``gradient_checkpointing``:
    the backward recomputes each layer's activations (the same gradients, less memory, a second forward's time)."""
    from datasets import Dataset
    from transformers import set_seed
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from trl import SFTConfig, SFTTrainer

    from countdown_rl.models.loading import load_causal_lm, load_tokenizer

    if steps <= 0:
        raise ValueError(f"steps must be positive, got {steps}")
    out = Path(out_dir)
    tokenizer = load_tokenizer(base_dir)
    rows = sft_examples(examples, tokenizer.eos_token)
    set_seed(seed)
    args = SFTConfig(
        output_dir=str(out),
        max_steps=steps,
        per_device_train_batch_size=batch_size,
        learning_rate=learning_rate,
        # A short warm-up then a constant rate: the run is short and stopped early on purpose.
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=min(20, max(1, steps // 10)),
        weight_decay=0.0,
        completion_only_loss=True,
        max_length=max_length,
        # Off unless asked, where TRL's SFT default is on: recomputing activations costs ~15% of a step.
        gradient_checkpointing=gradient_checkpointing,
        logging_steps=max(1, steps // 20),
        save_strategy="no",
        report_to="none",
        use_cpu=use_cpu,
        bf16=bf16,
        seed=seed,
        data_seed=seed,
        disable_tqdm=True,
    )
    trainer = SFTTrainer(
        model=load_causal_lm(base_dir),
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
    )
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    for callback in callbacks:
        trainer.add_callback(callback)
    return trainer


def sft_warmup(base_dir: str | Path, out_dir: str | Path, examples: Sequence[Mapping[str, Any]], *, steps: int,
               **options: Any) -> Path:
    """SFT the model in ``base_dir`` on ``examples`` (:func:`sft_trainer`; ``options`` are its keywords); saves
    model and tokenizer to ``out_dir`` and returns it."""
    trainer = sft_trainer(base_dir, out_dir, examples, steps=steps, **options)
    trainer.train()
    trainer.save_model(str(out_dir))
    trainer.processing_class.save_pretrained(str(out_dir))
    return Path(out_dir)
