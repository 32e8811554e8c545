"""``countdown-rl demo``: SFT warm-up then GRPO on Countdown, offline, on a CPU, in a few minutes.

1. Puzzles (:mod:`countdown_rl.demo.puzzles`): one seeded pool of easy generated puzzles, cut in three disjoint
   parts: ``num_sft`` for SFT, ``num_rl`` for RL, ``num_eval`` held out (no puzzle is on two sides).
2. Base model: the tiny byte-level BPE tokenizer and a small random Qwen3 from :mod:`countdown_rl.demo.tiny`, saved
   to ``base/``.
3. SFT warm-up: TRL's ``SFTTrainer`` on prompt-completion pairs (r1_zero prompt -> solver trace + EOS, loss on
   the completion only; ``--trace search`` writes 0-2 checked wrong attempts before the solution, a longer
   trace that a tight budget cuts). It is stopped early on purpose: the model has the format and some
   arithmetic but is often wrong, which leaves RL something to fix. Saved to ``sft/``.
4. Zero-shot evaluation of the SFT model: greedy, at ``max_completion_length``, on the held-out puzzles ->
   ``zero_shot/`` (eval.json, eval.md, samples.jsonl); then ``pass_k`` (16) samples a puzzle at temperature 1.0 ->
   ``zero_shot_sampled/`` (pass@1 and pass@16: whether RL sharpens the model or narrows it); and greedy on
   ``expression_eval`` (300) more held-out puzzles of the expression pool (the public data's distribution, where a
   fixed sum or difference solves a fifth or more; none in any part) -> ``zero_shot_expression/``.
5. RL: a ``countdown-rl train`` recipe (:func:`rl_recipe`) run by the one pipeline
   (:func:`countdown_rl.training.pipeline.run_recipe`): ``CountdownGRPOTrainer`` (GRPO, or Dr.GRPO with
   ``--algorithm dr_grpo``) with the ``countdown`` reward (1.0 correct / 0.1 answer tag / 0.0), 500 steps of 4
   prompts x 8 samples at temperature 0.3, each step filled by dynamic sampling (DAPO's group filter: more prompts
   drawn, up to 4 generation rounds, until its 4 groups hold some correct and some wrong completions; about 3 passes
   over the RL puzzles), no KL (beta 0), on the RL puzzles
   written to ``<algorithm>/data/train.jsonl`` (the held-out ones to ``test.jsonl``; the recipe to
   ``<algorithm>/recipe.yaml``). The run directory is ``<output_dir>/<algorithm>``; checkpoints every
   ``save_steps`` make it resumable (``--resume``).
6. Final evaluation with the same puzzles and settings -> ``<algorithm>/eval/`` (and sampled ->
   ``<algorithm>/eval_sampled/``, the expression pool's -> ``<algorithm>/eval_expression/``); the zero-shot files are copied to ``<algorithm>/zero_shot/`` and ``run_info.json`` / ``trainer_state.json`` written, so
   ``countdown-rl report <output_dir>/<algorithm>`` works. A before/after table (:mod:`countdown_rl.demo.table`) is
   printed and ``<algorithm>/demo_results.json`` written (in the run's folder: a second algorithm leaves the
   first's), with the exact McNemar test of RL against SFT on the same puzzles and the best target-blind rule's
   row (then the same table on the expression pool's puzzles).
   Accuracy is always the strict Countdown accuracy of :mod:`evaluation`.

The stages are plain functions (:func:`warm_start` = puzzles + base model + :func:`sft_warmup_on_traces`;
:func:`zero_shot_stage`; :func:`rl_stage` = :func:`rl_recipe` run by :func:`train_rl`, with :func:`evaluate_stage`
as its final evaluation) so that
``benchmarks/toy_replication.py`` runs SFT once and six RL runs from it. Their settings are
:class:`countdown_rl.demo.config.DemoConfig`; their folders and stage records :mod:`countdown_rl.demo.run_dir`.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from countdown_rl.algorithms.curriculum import describe_schedule
from countdown_rl.algorithms.presets import ALGORITHMS, display_name
from countdown_rl.demo.config import DemoConfig, device_of, placed, placement_line
from countdown_rl.demo.puzzles import TRACES, demo_puzzles, expression_puzzles, expression_spec, trace_examples
from countdown_rl.demo.run_dir import (
    DEMO_SOURCE,
    FINAL_EXPRESSION_DIR,
    FINAL_SAMPLED_DIR,
    PROG,
    RECIPE_FILE,
    RESULTS_FILE,
    RL_DATA_DIR,
    ZERO_SHOT_EXPRESSION_DIR,
    ZERO_SHOT_SAMPLED_DIR,
    finish_stage,
    prepare_run_dir,
    print_header,
    read_json_or_none,
    setup_environment,
    stage_done,
)
from countdown_rl.demo.table import blind_rule_by_model, blind_rule_of, paired_test, results_table
from countdown_rl.evaluation.eval_files import EVAL_JSON
from countdown_rl.files import write_json_atomic
from countdown_rl.runs.record import FINAL_EVAL_DIR, ZERO_SHOT_DIR, RunRecord
from countdown_rl.training.pipeline import progress_callback


class RunStopped(Exception):
    """Training stopped early (interrupted after a checkpoint, or a non-finite step); ``code`` is the exit code."""

    def __init__(self, code: int):
        super().__init__(f"training stopped early (exit code {code})")
        self.code = code


# --------------------------------------------------------------------------------------------------------------
# Stages
# --------------------------------------------------------------------------------------------------------------


def sft_warmup_on_traces(
    base_dir: str | Path,
    out_dir: str | Path,
    puzzles: Sequence[Mapping[str, Any]],
    *,
    trace: str = "solver",
    min_failed: int = 0,
    max_failed: int = 2,
    seed: int = 0,
    show_progress: bool = True,
    template: str = "r1_zero",
    **sft: Any,
) -> Path:
    """Supervised warm-up on solver traces; the model and tokenizer are saved to ``out_dir``.

    Prompt = the r1_zero prompt (ends with ``<think>``), completion = ``solver_trace(open_think=False)`` (or
    ``search_trace`` with ``trace="search"``) + EOS, loss on the completion only. With ``template="chat"`` the
    prompt is the chat one and the trace, opening ``<think>`` itself, is the assistant's turn of the model's chat
    template (:func:`countdown_rl.training.warmup.sft_examples`). ``sft`` goes to
    :func:`countdown_rl.training.warmup.sft_warmup` (``steps``, ``batch_size``, ``learning_rate``, ``use_cpu``,
    ``bf16``, ``gradient_checkpointing``).
    """
    from countdown_rl.training.warmup import sft_warmup

    examples = trace_examples(puzzles, trace=trace, template=template, min_failed=min_failed, max_failed=max_failed,
                              seed=seed)
    callbacks = [progress_callback(max(1, sft["steps"] // 10))] if show_progress else []
    return sft_warmup(base_dir, out_dir, examples, seed=seed, callbacks=callbacks, **sft)


def evaluate_stage(
    model,
    tokenizer,
    puzzles: Sequence[Mapping[str, Any]],
    *,
    budgets: Sequence[int],
    out_dir: str | Path | None = None,
    meta: Mapping[str, Any] | None = None,
    batch_size: int = 150,
    show_progress: bool = True,
    template: str = "r1_zero",
    backend: str = "transformers",
    device: str = "cpu",
    temperature: float = 0.0,
    num_samples: int = 1,
    seed: int = 0,
    task: Any = "countdown",
    task_options: Sequence[str] = (),
) -> list:
    """``task``'s evaluation (a task, or its name; strict Countdown by default) at each budget (one generation at the
    largest, cut to each), greedy unless ``temperature`` > 0 (``num_samples`` a puzzle, seeded by ``seed``:
    pass@k); writes eval.json / eval.md / samples.jsonl to ``out_dir`` when given. ``model`` is a model object with its
    ``tokenizer``, a saved model folder (``tokenizer`` None; loaded onto ``device``), or with ``backend="vllm"`` a
    ``vllm.LLM``. ``task_options``: the options ``task`` was made with, for the files' meta.
    Returns one ``BudgetResult`` per budget, in order.
    """
    from countdown_rl.evaluation.eval_files import eval_meta, write_eval_outputs
    from countdown_rl.evaluation.scoring import evaluate_budgets
    from countdown_rl.tasks import get_task

    if isinstance(model, (str, os.PathLike)):
        from countdown_rl.models.loading import load_causal_lm, load_tokenizer

        tokenizer = tokenizer or load_tokenizer(model)
        model = load_causal_lm(model).to(device)
    task = get_task(task) if isinstance(task, str) else task
    scored = evaluate_budgets(
        model, tokenizer, list(puzzles), budgets=budgets, task=task, template=template,
        batch_size=batch_size, temperature=temperature, num_samples=num_samples, seed=seed,
        show_progress=show_progress, backend=backend,
    )
    results = [result for result, _ in scored]
    if out_dir is not None:
        full_meta = eval_meta(**{"task": task.name, **({"task_options": list(task_options)} if task_options else {}),
                                 "template": template, "num_rows": len(puzzles),
                                 "backend": backend, "temperature": temperature, "num_samples": num_samples,
                                 **({"seed": seed} if num_samples > 1 or temperature > 0 else {}), **(meta or {})})
        write_eval_outputs(out_dir, results, {r.max_tokens: rows for r, rows in scored}, full_meta)
    return results


def rl_batches(config: DemoConfig) -> tuple[int, int]:
    """(completions a training forward and backward holds, micro-batches a step) of the RL stage: the step's
    ``prompts_per_step x num_generations`` completions in micro-batches of ``per_device_train_batch_size`` (whole
    groups); a size that does not divide the step or splits a group is one line (ValueError), checked before anything
    loads.

    >>> from countdown_rl.demo.config import quick_config
    >>> rl_batches(quick_config(prompts_per_step=4, num_generations=4, per_device_train_batch_size=8))
    (8, 2)
    """
    batch = config.prompts_per_step * config.num_generations
    micro = batch if config.per_device_train_batch_size is None else config.per_device_train_batch_size
    if micro <= 0 or batch % micro or micro % config.num_generations:
        raise ValueError(f"--per_device_train_batch_size {micro} must divide the step's {batch} completions "
                         f"(prompts_per_step x num_generations) and be a multiple of --num_generations "
                         f"{config.num_generations} (whole groups)")
    return micro, batch // micro


def rl_recipe(config: DemoConfig, sft_dir: str | Path, run_dir: str | Path, *, num_eval: int,
              generation: Mapping[str, Any] | None = None, final_eval: bool = True,
              reward_funcs: Sequence[str] | None = None) -> dict[str, Any]:
    """The RL stage of ``config`` as a ``countdown-rl train`` recipe (its keys, as a recipe file holds them): from
    ``sft_dir`` into ``run_dir``, on the puzzles :func:`train_rl` writes to ``run_dir/data`` (``train.jsonl``, and
    ``num_eval`` held-out ones in ``test.jsonl``).

    One rollout per optimizer step (``prompts_per_step`` prompts x ``num_generations`` samples), ``config.task``'s
    default reward (``countdown`` for Countdown) unless ``reward_funcs`` names others, a constant rate after
    ``warmup_steps`` 0, atomic checkpoints every ``save_steps`` (the newest two kept), the first
    ``in_training_eval`` held-out puzzles scored greedily every ``eval_steps`` (the report's curve).
    ``generation`` adds the rollouts' keys (e.g. ``use_vllm``, ``vllm_mode``, ``generation_backend``); ``config.lora``
    trains an adapter (merged into ``run_dir/merged``); ``final_eval`` False leaves the final evaluation to the
    caller. ``budget_schedule`` (``[[start_step, budget], ...]``, largest budget ``max_completion_length``) is the
    trainer's completion-budget curriculum.

    >>> from countdown_rl.demo.config import quick_config
    >>> rl_recipe(quick_config(), "sft", "grpo", num_eval=32)["per_device_train_batch_size"]
    16
    """
    from countdown_rl.tasks import task_class

    micro, accumulation = rl_batches(config)
    in_training_eval = min(config.in_training_eval, num_eval)
    reward_funcs = task_class(config.task).default_reward_funcs if reward_funcs is None else reward_funcs
    recipe = {
        # the model
        "model_name_or_path": str(sft_dir), "dtype": "auto",
        # the data: the demo's puzzles, as files (train_rl writes them)
        "task": config.task, **({"task_options": list(config.task_options)} if config.task_options else {}),
        "dataset_name": str(Path(run_dir) / RL_DATA_DIR), "dataset_split": "train",
        "eval_dataset_split": "test", "test_size": num_eval, "prompt_template": config.prompt_template,
        "reward_funcs": list(reward_funcs), "eval_subset_size": in_training_eval,
        "final_eval_size": None if final_eval else 0, "resume": config.resume,
        # the run
        "output_dir": str(run_dir), "algorithm": config.algorithm, "max_steps": config.max_steps,
        "per_device_train_batch_size": micro, "num_generations": config.num_generations,
        "gradient_accumulation_steps": accumulation, "num_iterations": 1,
        "max_completion_length": config.max_completion_length,
        "budget_schedule": [list(pair) for pair in config.budget_schedule] if config.budget_schedule else None,
        "temperature": config.temperature, "beta": config.beta,
        "mask_truncated_completions": config.mask_truncated_completions,
        "skip_zero_advantage": config.skip_zero_advantage,
        **({"dynamic_sampling": True, "dynamic_sampling_max_rounds": config.dynamic_sampling_max_rounds}
           if config.dynamic_sampling else {}),
        "learning_rate": config.grpo_learning_rate, "lr_scheduler_type": "constant_with_warmup", "warmup_steps": 0,
        "weight_decay": 0.0, "max_grad_norm": 1.0, "logging_steps": 1,
        "save_strategy": "steps", "save_steps": config.save_steps, "save_total_limit": 2,
        "eval_strategy": "steps" if in_training_eval else "no", "eval_steps": config.eval_steps,
        "per_device_eval_batch_size": max(config.num_generations,
                                          64 // config.num_generations * config.num_generations),
        "use_cpu": device_of(config) == "cpu", "bf16": config.bf16,
        "gradient_checkpointing": config.gradient_checkpointing,
        "report_to": "none",
        "seed": config.seed, "data_seed": config.seed,
        "disable_tqdm": True,  # the short progress lines replace the bar and its log dicts
        **dict(generation or {}),
    }
    if config.lora:  # an adapter on the SFT model, merged for evaluation
        recipe.update({"use_peft": True, "lora_r": 16, "lora_alpha": 32, "lora_dropout": 0.0,
                       "lora_target_modules": ["all-linear"], "merge_adapter": True})
    return recipe


def train_rl(recipe: Mapping[str, Any], train_puzzles: Sequence[Mapping[str, Any]],
             eval_puzzles: Sequence[Mapping[str, Any]], *, record: RunRecord,
             final_evaluation: Any = None, show_progress: bool = True, callbacks: Sequence[Any] = ()):
    """Run :func:`rl_recipe`'s recipe as ``countdown-rl train`` runs one
    (:func:`countdown_rl.training.pipeline.run_recipe`), on these puzzles; returns its ``RecipeRun``.

    The recipe is checked and the run directory claimed first (the output-directory guard: a resume must match the
    saved recipe, and starts from the newest complete checkpoint, an incomplete one skipped with a warning); then
    the puzzles and ``recipe.yaml`` are written into the run directory, and the recipe runs. ``record`` describes the
    run in ``run_info.json``; ``final_evaluation`` replaces the trainer's (see ``run_recipe``); ``callbacks`` join the
    trainer's. A signal (checkpoint saved) or a non-finite step raises :class:`RunStopped`.
    """
    import yaml

    from countdown_rl.data.jsonl import write_jsonl
    from countdown_rl.training.pipeline import plan_recipe, run_recipe
    from countdown_rl.training.recipe import recipe_from_keys

    script_args, training_args, model_args = recipe_from_keys(recipe)
    planned = plan_recipe(script_args, training_args, model_args)
    data = Path(script_args.dataset_name)
    write_jsonl((dict(row) for row in train_puzzles), data / "train.jsonl")
    write_jsonl((dict(row) for row in eval_puzzles), data / "test.jsonl")
    # The recipe as a file: `countdown-rl train --config <run_dir>/recipe.yaml` trains the same run.
    (Path(training_args.output_dir) / RECIPE_FILE).write_text(yaml.safe_dump(dict(recipe), sort_keys=False),
                                                               encoding="utf-8")
    steps = training_args.max_steps
    progress = [progress_callback(max(1, steps // 10))] if show_progress else []
    run = run_recipe(script_args, training_args, model_args, planned, record=record, final_evaluation=final_evaluation,
                     callbacks=[*progress, *callbacks], quiet=True)
    if run.stopped is not None:  # a signal (checkpoint saved) or a non-finite step: one line said which
        raise RunStopped(run.stopped)
    return run


def demo_record(model: str | Path, dataset: str, puzzles: Mapping[str, Sequence[Any]],
                extra: Mapping[str, Any] | None = None) -> RunRecord:
    """The RL run's record: the model it started from, the puzzles' description and counts, the demo as its source."""
    data = {name: len(puzzles[name]) for name in ("sft", "rl", "eval")}
    return RunRecord(model=str(model), dataset=dataset, data=data, source=DEMO_SOURCE, extra=dict(extra or {}))


# --------------------------------------------------------------------------------------------------------------
# The whole demo
# --------------------------------------------------------------------------------------------------------------


@dataclass
class WarmStart:
    """What every RL run starts from: the puzzles, the SFT model folder and the record that identifies it."""

    puzzles: dict[str, list[dict[str, Any]]]
    sft_dir: Path
    record: dict[str, Any]


def sft_record(config: DemoConfig) -> dict[str, Any]:
    """What identifies an SFT stage (kept in ``sft/run_info.json``): the base model, puzzles and SFT settings."""
    base_record = {"stage": "base", "model_size": config.model_size, "seed": config.seed}
    return {
        "stage": "sft", "base": base_record, "puzzles": asdict(config.puzzles), "steps": config.sft_steps,
        "batch_size": config.sft_batch_size, "learning_rate": config.sft_learning_rate, "trace": config.trace,
        **({"min_failed": config.min_failed, "max_failed": config.max_failed} if config.trace == "search" else {}),
        **sft_precision(config),
    }


def sft_precision(config: DemoConfig) -> dict[str, bool]:
    """The SFT record's precision key: ``{"bf16": True}`` under bf16, none in fp32 (so a folder made before the
    option existed still resumes)."""
    return {"bf16": True} if config.sft_bf16 else {}


def sft_stage_done(sft_dir: str | Path, config: DemoConfig) -> bool:
    """Whether ``sft_dir`` holds a finished SFT stage made with ``config``'s settings (reusable by
    :func:`warm_start`)."""
    return stage_done(Path(sft_dir), sft_record(config))


def warm_start(config: DemoConfig) -> WarmStart:
    """Puzzles, base model and SFT warm-up into ``config.output_dir`` (``base/``, ``sft/``); with
    ``config.resume`` a finished SFT stage made with the same settings is reused instead of trained again."""
    from countdown_rl.demo.tiny import save_tiny_model

    out = Path(config.output_dir)
    base_dir, sft_dir = out / "base", out / "sft"
    print_header(f"puzzles: {config.puzzles.describe()}")
    puzzles = demo_puzzles(config.puzzles, config.seed)
    puzzles["expression"] = expression_puzzles(config, puzzles)
    also = f" (and {len(puzzles['expression'])} of the expression pool)" if puzzles["expression"] else ""
    print(f"{len(puzzles['sft'])} for SFT, {len(puzzles['rl'])} for RL, {len(puzzles['eval'])} held out{also}")

    record = sft_record(config)
    base_record = record["base"]
    if config.resume and stage_done(sft_dir, record):
        print_header(f"SFT warm-up: reusing {sft_dir}")
    else:
        print_header(f"base model: tiny tokenizer + Qwen3 '{config.model_size}' -> {base_dir}")
        save_tiny_model(base_dir, config.model_size, config.seed)
        finish_stage(base_dir, base_record, model=f"tiny Qwen3 '{config.model_size}'", dataset="none")
        print_header(f"SFT warm-up: {config.sft_steps} steps on {config.trace} traces -> {sft_dir}")
        sft_warmup_on_traces(
            base_dir, sft_dir, puzzles["sft"], steps=config.sft_steps, batch_size=config.sft_batch_size,
            learning_rate=config.sft_learning_rate, trace=config.trace, min_failed=config.min_failed,
            max_failed=config.max_failed, seed=config.seed, show_progress=not config.quick, bf16=config.sft_bf16,
            use_cpu=config.device == "cpu", gradient_checkpointing=config.gradient_checkpointing,
        )
        finish_stage(sft_dir, record, model=str(base_dir), dataset=config.puzzles.describe())  # last: complete
    return WarmStart(puzzles, sft_dir, record)


def zero_shot_stage(config: DemoConfig, warm: WarmStart, budgets: Sequence[int], part: str = "eval") -> list:
    """Greedy evaluation of the SFT model on the held-out puzzles (``part`` "eval"; "expression": the expression
    pool's) at ``budgets`` -> ``<output_dir>/zero_shot`` (``zero_shot_expression``); with ``config.resume`` an
    evaluation of the same SFT model on the same puzzles at the same budgets is read back instead."""
    from countdown_rl.evaluation.eval_files import read_eval

    out = Path(config.output_dir)
    zero_dir = out / (ZERO_SHOT_DIR if part == "eval" else ZERO_SHOT_EXPRESSION_DIR)
    puzzles, budgets = warm.puzzles[part], sorted(set(budgets))
    stage = warm.record if part == "eval" else {**warm.record, "part": part, "count": len(puzzles)}
    previous = read_json_or_none(zero_dir / EVAL_JSON)
    if (config.resume and isinstance(previous, dict) and previous.get("meta", {}).get("demo_stage") == stage
            and [r.get("max_tokens") for r in previous.get("results", [])] == budgets):
        print_header(f"zero-shot evaluation: reusing {zero_dir}")
        return read_eval(zero_dir)["results"]
    which = "held-out" if part == "eval" else "held-out expression-pool"
    print_header(f"zero-shot evaluation of the SFT model: {len(puzzles)} {which} puzzles, greedy, "
                 f"{' / '.join(map(str, budgets))} tokens -> {zero_dir}")
    spec = config.puzzles if part == "eval" else expression_spec(config)
    meta = {"model": str(warm.sft_dir), "dataset": spec.describe(), "stage": zero_dir.name, "demo_stage": stage}
    return evaluate_stage(str(warm.sft_dir), None, puzzles, budgets=budgets, out_dir=zero_dir,
                          meta=meta, batch_size=config.eval_batch_size, show_progress=not config.quick,
                          device=device_of(config))


def sampled_evaluation(config: DemoConfig, model, tokenizer, puzzles: Sequence[Mapping[str, Any]], out_dir: Path,
                       meta: Mapping[str, Any]):
    """``config.pass_k`` samples a puzzle at ``config.pass_temperature`` (seeded by ``config.seed``) at
    ``max_completion_length`` -> ``out_dir``; the ``BudgetResult`` (its ``pass_at_k``), None when ``pass_k`` is 0.
    With ``config.resume`` an evaluation in ``out_dir`` with the same ``meta`` and settings is read back instead."""
    from countdown_rl.evaluation.eval_files import read_eval

    if not config.pass_k:
        return None
    settings = {"temperature": config.pass_temperature, "num_samples": config.pass_k, "seed": config.seed}
    previous = read_json_or_none(out_dir / EVAL_JSON)
    if (config.resume and isinstance(previous, dict)
            and {key: previous.get("meta", {}).get(key) for key in [*meta, *settings]} == {**meta, **settings}):
        print_header(f"sampled evaluation: reusing {out_dir}")
        return read_eval(out_dir)["results"][0]
    print_header(f"sampled evaluation: {config.pass_k} samples a puzzle at temperature {config.pass_temperature:g} "
                 f"(pass@1, pass@{config.pass_k}) -> {out_dir}")
    [result] = evaluate_stage(model, tokenizer, puzzles, budgets=[config.max_completion_length], out_dir=out_dir,
                              meta=meta, batch_size=config.eval_batch_size * config.pass_k,  # as many prompts
                              show_progress=not config.quick, device=device_of(config), **settings)
    return result


def rl_stage(config: DemoConfig, warm: WarmStart, run_dir: str | Path,
             run_info: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``config.algorithm`` at ``config.max_completion_length`` (or its ``budget_schedule``) from the SFT model into
    ``run_dir``, then the final evaluation at ``max_completion_length`` (``run_dir/eval``) and the zero-shot files
    copied next to it, so ``countdown-rl report run_dir`` works; ``run_info`` adds keys to run_info.json. Returns
    ``{"trainer", "model", "tokenizer", "resumed_from", "global_step", "result"}`` (``result``: the final
    ``BudgetResult``)."""
    run_dir = Path(run_dir)
    budget, dataset, puzzles = config.max_completion_length, config.puzzles.describe(), warm.puzzles
    name = display_name(config.algorithm)
    schedule = config.budget_schedule
    budgets = describe_schedule(schedule) if schedule else str(budget)
    print_header(f"{name} at {budgets} tokens: {config.max_steps} steps x {config.prompts_per_step} prompts x "
            f"{config.num_generations} samples -> {run_dir}")
    # on a GPU the compiled backend (gpu_config); on the CPU TRL's plain generate, as measured
    on_gpu = device_of(config) == "cuda" and not config.quick
    recipe = rl_recipe(config, warm.sft_dir, run_dir, num_eval=len(puzzles["eval"]),
                       generation={"generation_backend": "compiled"} if on_gpu else None)
    trained: dict[str, Any] = {}

    def final_evaluation(run, rows):
        """The demo's own evaluation (same puzzles and settings as the zero-shot one), before the model card."""
        trained.update(model=run.model, tokenizer=run.trainer.processing_class, resumed_from=run.resumed_from,
                       global_step=run.global_step, trainer=run.trainer)
        if run.resumed_from:
            print(f"resumed from {run.resumed_from}")
        elif config.resume:
            print(f"no checkpoint in {run_dir}: trained from the start")
        print_header(f"evaluation after {name}: same puzzles and settings -> {run_dir / FINAL_EVAL_DIR}")
        [trained["result"]] = evaluate_stage(
            run.model, run.trainer.processing_class, puzzles["eval"], budgets=[budget],
            out_dir=run_dir / FINAL_EVAL_DIR,
            meta={"model": str(run_dir), "dataset": dataset, "stage": "final", "algorithm": config.algorithm},
            batch_size=config.eval_batch_size, show_progress=not config.quick,
        )
        shutil.copytree(Path(config.output_dir) / ZERO_SHOT_DIR, run_dir / ZERO_SHOT_DIR, dirs_exist_ok=True)
        trained["sampled"] = sampled_evaluation(
            config, run.model, run.trainer.processing_class, puzzles["eval"], run_dir / FINAL_SAMPLED_DIR,
            {"model": str(run_dir), "stage": "final_sampled", "algorithm": config.algorithm})
        if puzzles.get("expression"):
            print_header(f"evaluation after {name} on the held-out expression-pool puzzles -> "
                         f"{run_dir / FINAL_EXPRESSION_DIR}")
            [trained["expression"]] = evaluate_stage(
                run.model, run.trainer.processing_class, puzzles["expression"], budgets=[budget],
                out_dir=run_dir / FINAL_EXPRESSION_DIR,
                meta={"model": str(run_dir), "dataset": expression_spec(config).describe(),
                      "stage": FINAL_EXPRESSION_DIR, "algorithm": config.algorithm},
                batch_size=config.eval_batch_size, show_progress=not config.quick,
            )
        return trained["result"]

    # the final evaluation, then the model card (which shows it) and the status: run_recipe's last steps
    train_rl(recipe, puzzles["rl"], puzzles["eval"], record=demo_record(warm.sft_dir, dataset, puzzles, run_info),
             final_evaluation=final_evaluation, show_progress=not config.quick)
    return trained


def run_demo(config: DemoConfig) -> dict[str, Any]:
    """Run every stage (reusing complete ones with ``config.resume``); returns what demo_results.json holds."""
    if config.algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {list(ALGORITHMS)}, got {config.algorithm!r}")
    if config.trace not in TRACES or not 0 <= config.min_failed <= config.max_failed:
        raise ValueError(f"trace must be one of {TRACES} and 0 <= min_failed <= max_failed, got trace="
                         f"{config.trace!r}, min_failed={config.min_failed}, max_failed={config.max_failed}")
    if config.pass_k < 0 or config.pass_k == 1 or (config.pass_k and config.pass_temperature <= 0):
        raise ValueError(f"pass_k must be 0 (no sampled evaluation) or >= 2 samples at a pass_temperature > 0, got "
                         f"pass_k={config.pass_k}, pass_temperature={config.pass_temperature}")
    out = Path(config.output_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--output_dir {out} exists and is not a folder")
    config, placement = placed(config)  # --device cuda without a GPU: one line, before anything loads
    setup_environment(config.num_threads)
    print(placement_line(placement), flush=True)
    started = time.time()
    timings: dict[str, float] = {}
    run_dir = out / config.algorithm
    prepare_run_dir(run_dir, config.resume)
    out.mkdir(parents=True, exist_ok=True)
    budget = config.max_completion_length

    t = time.time()
    warm = warm_start(config)
    timings["sft_s"] = time.time() - t
    t = time.time()
    [before] = zero_shot_stage(config, warm, [budget])
    print(f"SFT accuracy {100 * before.accuracy:.1f}%")
    before_sampled = sampled_evaluation(config, str(warm.sft_dir), None, warm.puzzles["eval"],
                                        out / ZERO_SHOT_SAMPLED_DIR, {"model": str(warm.sft_dir),
                                                                      "stage": "zero_shot_sampled",
                                                                      "demo_stage": warm.record})
    [before_expression] = zero_shot_stage(config, warm, [budget], part="expression") if warm.puzzles["expression"] \
        else [None]
    timings["zero_shot_eval_s"] = time.time() - t
    t = time.time()
    trained = rl_stage(config, warm, run_dir, run_info={"placement": placement})
    after = trained["result"]
    timings["rl_and_final_eval_s"] = time.time() - t
    timings["total_s"] = time.time() - started
    puzzles, sft_dir, zero_dir = warm.puzzles, warm.sft_dir, out / ZERO_SHOT_DIR
    blind, blind_after = blind_rule_of(zero_dir), blind_rule_of(run_dir / FINAL_EVAL_DIR)
    sampled = (before_sampled, trained.get("sampled"))
    table = results_table(before, after, config.algorithm, trained["global_step"], blind, blind_after, sampled)
    paired = paired_test(zero_dir, run_dir / FINAL_EVAL_DIR, budget)
    expression = None
    if before_expression is not None:
        expression_dirs = (out / ZERO_SHOT_EXPRESSION_DIR, run_dir / FINAL_EXPRESSION_DIR)
        blinds = [blind_rule_of(path) for path in expression_dirs]
        after_expression = trained["expression"]
        expression = {
            "num_puzzles": len(puzzles["expression"]),
            "paths": {"zero_shot": str(expression_dirs[0]), "eval": str(expression_dirs[1])},
            "dataset": expression_spec(config).describe(),
            "sft": before_expression.to_dict(), "trained": after_expression.to_dict(),
            "gain_points": 100 * (after_expression.accuracy - before_expression.accuracy),
            "paired_test": paired_test(*expression_dirs, budget),
            "blind_rule": blind_rule_by_model({"sft": blinds[0], "trained": blinds[1]}),
            "table": results_table(before_expression, after_expression, config.algorithm, trained["global_step"],
                                   *blinds),
        }
    results = {
        "command": PROG,
        "algorithm": config.algorithm,
        "max_completion_length": budget,
        "num_eval_puzzles": len(puzzles["eval"]),
        "dataset": config.puzzles.describe(),
        "sft": before.to_dict(),
        "trained": after.to_dict(),
        "gain_points": 100 * (after.accuracy - before.accuracy),
        "paired_test": paired,
        # pass@1 / pass@k at pass_temperature (None: pass_k 0)
        "sft_sampled": None if sampled[0] is None else sampled[0].to_dict(),
        "trained_sampled": None if sampled[1] is None else sampled[1].to_dict(),
        "blind_rule": blind_rule_by_model({"sft": blind, "trained": blind_after}),
        # the same two models on the held-out expression-pool puzzles (None: none, DemoConfig.expression_eval)
        "expression": expression,
        "global_step": trained["global_step"],
        "resumed_from": trained["resumed_from"],
        "paths": {"base": str(out / "base"), "sft": str(sft_dir), "zero_shot": str(zero_dir), "run": str(run_dir),
                  "eval": str(run_dir / FINAL_EVAL_DIR)},
        "timings": timings,
        "table": table,
        "device": placement["device"],
        "precision": placement,  # each training stage's precision, and why not bf16 where the demo wanted it
        "config": asdict(config),
    }
    write_json_atomic(run_dir / RESULTS_FILE, results)  # per run: GRPO and Dr.GRPO can share out's stages

    print_header(f"results (strict Countdown accuracy, greedy, held-out puzzles; trained {placement_line(placement)})")
    print(table)
    print(f"\naccuracy {100 * before.accuracy:.1f}% -> {100 * after.accuracy:.1f}% "
          f"({results['gain_points']:+.1f} points; McNemar p = {paired['p_value']:.3g}, {paired['only_a']} puzzles "
          f"only RL solved, {paired['only_b']} only SFT) on {len(puzzles['eval'])} puzzles, {budget} tokens, "
          f"in {timings['total_s']:.0f} s; the best target-blind rule solves "
          f"{'?' if blind is None else format(100 * blind['accuracy'], '.1f')}%")
    if expression is not None:
        e_paired, e_blind = expression["paired_test"], expression["blind_rule"]
        print(f"\nthe same models on {expression['num_puzzles']} held-out puzzles of the expression pool (the public "
              f"Countdown data's distribution; none trained on):")
        print(expression["table"])
        print(f"\naccuracy {100 * before_expression.accuracy:.1f}% -> {100 * after_expression.accuracy:.1f}% "
              f"({expression['gain_points']:+.1f} points; McNemar p = {e_paired['p_value']:.3g}); the best "
              f"target-blind rule solves {'?' if e_blind is None else format(100 * e_blind['accuracy'], '.1f')}%")
    print(f"files: {run_dir / RESULTS_FILE}; SFT model {sft_dir}; RL run {run_dir} "
          f"(model, checkpoints, eval/, zero_shot/); report: countdown-rl report {run_dir}")
    return results
