"""The trainer's side of the generation backends: what adapts pure generation code to TRL's private state.

The backends (:mod:`countdown_rl.generation`) know no trainer; this module reads and writes TRL's attributes for
them, so a TRL upgrade is checked here and in :mod:`countdown_rl.training.trainer` only.

1. A backend with a rollout generator (:mod:`countdown_rl.generation.backends`, e.g. ``compiled``):
   :func:`build_rollout_generator` sizes it (the recipe's prompt buckets, or a sample of the training and
   evaluation prompts tokenized by TRL's ``_tokenize_prompts``); :class:`WarmUpCallback` warms it up at
   ``on_train_begin`` (compile time logged once as ``generation/compile_seconds``, kept out of step 1);
   :func:`generate_rollouts` is TRL's ``_generate_single_turn`` through it, cut after the first EOS as TRL cuts.
2. vLLM colocated on vLLM's CPU platform: :func:`use_cpu_weight_sync` gives TRL's ``VLLMGeneration`` the CPU sync
   (:func:`countdown_rl.generation.vllm_sync.reload_cpu_engine` over TRL's parameter walk); :func:`awake_engine`
   is the colocated engine for a generation outside TRL's rollouts (the held-out evaluation), woken and put back
   to sleep as TRL's own generate does.
3. The colocated engine's dtype: TRL builds ``vllm.LLM`` without one, so vLLM's ``auto`` would make a float32 model
   bfloat16 on every x86 CPU (emulated where the CPU has no bf16 kernels). :func:`colocated_engine_dtype` passes it
   ``vllm_dtype`` (unset: the run's precision, :func:`countdown_rl.generation.vllm_settings.engine_dtype`) through
   TRL's module-level ``LLM`` name while :class:`~countdown_rl.training.trainer.CountdownGRPOTrainer` builds it.
"""

from __future__ import annotations

import contextlib
import types
import weakref
from collections.abc import Iterator

from transformers.trainer_callback import TrainerCallback

from countdown_rl.generation.backends import get_backend
from countdown_rl.generation.compiled import completion_lists
from countdown_rl.generation.vllm_settings import engine_dtype
from countdown_rl.generation.vllm_sync import CPU_SYNC, TRL_SYNC, reload_cpu_engine, vllm_on_cpu
from countdown_rl.runs.record import update_extra

PROMPT_SAMPLE = 256  # training prompts tokenized to size an automatic prompt bucket


# -- rollout generators (generation_backend: compiled) ----------------------------------------------------------
def trainer_rows(trainer) -> int:
    """Completions one process generates per call: TRL's generation batch over the processes."""
    return trainer.args.generation_batch_size // trainer.accelerator.num_processes


def sample_prompt_lengths(trainer) -> list[int]:
    """Token counts of up to :data:`PROMPT_SAMPLE` training and evaluation prompts, tokenized as TRL does."""
    lengths = []
    for dataset in (trainer.train_dataset, trainer.eval_dataset):
        if dataset is None or not hasattr(dataset, "select") or "prompt" not in dataset.column_names:
            continue
        prompts = dataset.select(range(min(PROMPT_SAMPLE, len(dataset))))["prompt"]
        if prompts:
            lengths += [len(ids) for ids in trainer._tokenize_prompts(list(prompts))[0]]
    return lengths


def build_rollout_generator(trainer):
    """The trainer's rollout generator for its ``generation_backend`` (None when TRL generates itself)."""
    from trl.distributed import DistributedBackend

    name = trainer.args.generation_backend
    backend = get_backend(name)
    if backend.rollouts is None:
        return None
    dist = DistributedBackend(trainer.accelerator)
    if dist.is_zero3 or getattr(trainer, "is_fsdp_enabled", False):
        raise ValueError(f"generation_backend={name!r} does not support sharded weights (DeepSpeed ZeRO-3, FSDP); "
                         "use 'transformers' or 'vllm'")
    return backend.rollout_generator(max_new_tokens=trainer.max_completion_length,
                                     prompt_buckets=trainer.args.generation_prompt_buckets,
                                     prompt_lengths=lambda: sample_prompt_lengths(trainer),
                                     rows=trainer_rows(trainer))


def trainer_generation_context(trainer):
    """TRL's own generation context (unwrapped model, checkpointing and its input hooks off, ZeRO-3 gathering).

    Warm-up, training and in-training evaluation all generate inside it, so the model's modules and hooks look the
    same to every call and one compiled graph serves them all (with LoRA + checkpointing, the embedding's
    input-require-grads hook is otherwise a guard that fails: a recompile).
    """
    from trl.models import unwrap_model_for_generation

    return unwrap_model_for_generation(
        trainer.model_wrapped,
        trainer.accelerator,
        gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
        gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs,
    )


def warm_up(trainer) -> None:
    """Compile for the training row count (and the evaluation one when evaluating); log the time once."""
    gen = trainer.rollout_generator
    row_counts = [trainer_rows(trainer)]
    if trainer.eval_dataset is not None and trainer.args.eval_strategy != "no":
        row_counts.append(trainer.args.per_device_eval_batch_size)
    before = sum(gen.compile_seconds.values())
    with trainer_generation_context(trainer) as model:
        for rows in row_counts:
            if not gen.warm_up(model, trainer.generation_config, rows):
                record_fallback(trainer)
                return
    spent = sum(gen.compile_seconds.values()) - before
    if spent:
        # Its own key, logged with the first step; step_time does not contain it.
        trainer._metrics["train"]["generation/compile_seconds"].append(spent)


def record_fallback(trainer) -> None:
    """The run record (written when training began, saying ``compiled``) says that plain generate runs instead."""
    if trainer.accelerator.is_main_process:
        update_extra(trainer.args.output_dir, rollouts=trainer.rollouts)


class WarmUpCallback(TrainerCallback):
    """Warms the trainer's rollout generator up at ``on_train_begin``: after the Trainer has switched gradient
    checkpointing on (and peft its input hooks) and wrapped the model, so the warm-up compiles the very graph the
    training steps use, and before step 1's clock starts."""

    def __init__(self, trainer):
        self._trainer = weakref.ref(trainer)  # the trainer holds this callback: no reference cycle

    def on_train_begin(self, args, state, control, **kwargs):
        trainer = self._trainer()
        if trainer is not None and trainer.rollout_generator is not None:
            warm_up(trainer)


def generate_rollouts(trainer, prompt_ids) -> list[list[int]] | None:
    """TRL's ``_generate_single_turn`` through the rollout generator: completion id lists cut after the first EOS;
    None when the generator cannot run here (it warned once; TRL's plain generate from then on)."""
    from trl.extras.profiling import profiling_context

    gen = trainer.rollout_generator
    with profiling_context(trainer, "transformers.generate"), trainer_generation_context(trainer) as model:
        if not gen.compile_seconds and gen.active:  # train() was not the entry point (a direct call): warm up here
            if not gen.warm_up(model, trainer.generation_config, trainer_rows(trainer)):
                record_fallback(trainer)
        completion = gen.generate(model, prompt_ids, trainer.generation_config) if gen.active else None
    if completion is None:
        return None
    return completion_lists(completion, trainer.eos_token_ids)


# -- vLLM colocated ----------------------------------------------------------------------------------------------
def _sync_weights_cpu(self) -> None:
    """``VLLMGeneration.sync_weights`` for a CPU engine: TRL's parameter walk (PEFT merge, gathers), our load."""
    reload_cpu_engine(self.llm, self._iter_named_params())


def use_cpu_weight_sync(vllm_generation) -> str:
    """Give TRL's ``VLLMGeneration`` the CPU sync when its colocated engine runs on vLLM's CPU platform.

    Returns :data:`~countdown_rl.generation.vllm_sync.CPU_SYNC` or ``TRL_SYNC`` (what runs, to be logged once).
    """
    if getattr(vllm_generation, "mode", None) != "colocate" or not vllm_on_cpu():
        return TRL_SYNC
    if vllm_generation.enable_sleep_mode:
        raise ValueError("vllm_enable_sleep_mode: vLLM's CPU backend has no sleep mode; set it to false")
    # On the instance: TRL builds the object inside GRPOTrainer.__init__ and calls sync_weights() on it.
    vllm_generation.sync_weights = types.MethodType(_sync_weights_cpu, vllm_generation)
    return CPU_SYNC


@contextlib.contextmanager
def awake_engine(vllm_generation) -> Iterator:
    """Yield TRL's colocated ``vllm.LLM`` ready to generate; the caller has synced the current weights.

    With ``vllm_enable_sleep_mode`` (CUDA) this mirrors TRL's ``VLLMGeneration.generate``: weights discarded by sleep
    level 2 are pushed again, the KV cache is woken, and the engine sleeps again afterwards.
    """
    llm = vllm_generation.llm
    if not vllm_generation.enable_sleep_mode:
        yield llm
        return
    if vllm_generation._llm_weights_sleeping:
        vllm_generation.sync_weights()  # wakes the weights and loads them
    llm.wake_up(tags=["kv_cache"])
    try:
        yield llm
    finally:
        llm.sleep(level=2)
        vllm_generation._llm_weights_sleeping = True


def vllm_dtype_of(args) -> str:
    """The dtype the run's colocated engine starts at: ``vllm_dtype``, else the run's precision on its device.

    >>> from types import SimpleNamespace
    >>> vllm_dtype_of(SimpleNamespace(vllm_dtype=None, bf16=False, fp16=False, use_cpu=True))
    'float32'
    """
    if getattr(args, "vllm_dtype", None) is not None:  # a plain GRPOConfig has no such key
        return args.vllm_dtype
    import torch

    on_cpu = args.use_cpu or not torch.cuda.is_available()
    return engine_dtype(bool(args.bf16), bool(args.fp16), "cpu" if on_cpu else "cuda")


@contextlib.contextmanager
def colocated_engine_dtype(args) -> Iterator[str | None]:
    """While TRL builds its colocated ``vllm.LLM`` (inside ``GRPOTrainer.__init__``), the engine gets
    :func:`vllm_dtype_of` ``args`` as its ``dtype`` (TRL passes none). Yields that dtype, or None where no colocated
    engine is built (no vLLM, server mode)."""
    if args is None or not (args.use_vllm and args.vllm_mode == "colocate"):
        yield None
        return
    import trl.generation.vllm_generation as trl_vllm

    dtype, built = vllm_dtype_of(args), getattr(trl_vllm, "LLM", None)
    if built is None:  # vllm is not installed: TRL's __init__ says so itself
        yield dtype
        return

    def with_dtype(*pos, **kwargs):
        kwargs.setdefault("dtype", dtype)
        return built(*pos, **kwargs)

    trl_vllm.LLM = with_dtype
    try:
        yield dtype
    finally:
        trl_vllm.LLM = built
