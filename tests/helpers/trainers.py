"""Tiny ``CountdownGRPOTrainer`` runs on the CPU, shared by the trainer, rollout, curriculum and vLLM tests.

:func:`tiny_trainer` builds one from a saved tiny model folder (``conftest.tiny_model_dir``): 8 Countdown-shaped
rows, 2 groups of 4 completions a step, no checkpoints, no reporting; each test passes what it is about as config
keywords. A random tiny model never solves Countdown, so the default reward is a dense toy one
(:func:`char_diversity_reward`), which varies between random completions.
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

# What every tiny CPU run shares; a test's keywords override these.
TINY_ARGS: dict[str, Any] = dict(
    use_cpu=True, bf16=False, report_to="none", gradient_checkpointing=False, per_device_train_batch_size=8,
    num_generations=4, max_completion_length=8, max_steps=2, learning_rate=1e-3, logging_steps=1,
    save_strategy="no", seed=0,
)


def char_diversity_reward(completions, **kwargs):
    """Dense toy reward: distinct characters per character (varies between random completions)."""
    return [len(set(c)) / (1 + len(c)) for c in completions]


def puzzle_rows(n: int = 8):
    """``n`` Countdown-shaped rows (``prompt``, ``nums``, ``target``) whose puzzles are easy sums."""
    from datasets import Dataset

    return Dataset.from_list([{"prompt": f"Numbers {i} {i + 1}, target {2 * i + 1}:", "nums": [i, i + 1],
                               "target": 2 * i + 1} for i in range(1, n + 1)])


def tiny_config(out, config_cls=None, **overrides):
    """A ``CountdownGRPOConfig`` (or ``config_cls``, e.g. TRL's) writing to ``out``: :data:`TINY_ARGS` plus
    ``overrides``."""
    from countdown_rl.training.trainer import CountdownGRPOConfig

    return (config_cls or CountdownGRPOConfig)(output_dir=str(out), **{**TINY_ARGS, **overrides})


def tiny_trainer(model_dir, out, *, reward=char_diversity_reward, train_dataset=None, eval_dataset=None,
                 task: str | None = "countdown", peft_config=None, trainer_cls=None, config_cls=None, **overrides):
    """A trainer on the model saved in ``model_dir`` (``task`` None: no task; ``reward`` one function or a list),
    config :func:`tiny_config`; ``trainer_cls`` / ``config_cls`` swap in others (TRL's own for stock runs)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from countdown_rl.tasks import get_task
    from countdown_rl.training.trainer import CountdownGRPOTrainer

    extra = {} if peft_config is None else {"peft_config": peft_config}
    task_kwargs = {} if task is None else {"task": get_task(task)}  # TRL's own trainer takes no task
    return (trainer_cls or CountdownGRPOTrainer)(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=reward if isinstance(reward, list) else [reward],
        args=tiny_config(out, config_cls, **overrides),
        train_dataset=puzzle_rows() if train_dataset is None else train_dataset,
        eval_dataset=eval_dataset, processing_class=AutoTokenizer.from_pretrained(model_dir),
        **task_kwargs, **extra,
    )


def logged(trainer, key):
    """``key`` of every training log entry (None where that entry lacks it)."""
    return [h.get(key) for h in trainer.state.log_history if "loss" in h]


class GradientRecorder(TrainerCallback):
    """A callback keeping each optimizer step's gradients (after accumulation and clipping, as the optimizer sees
    them): ``steps[i][name]``."""

    def __init__(self):
        self.steps: list[dict[str, Any]] = []

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        self.steps.append({name: p.grad.detach().clone() for name, p in model.named_parameters()
                           if p.grad is not None})
