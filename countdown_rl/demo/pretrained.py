"""``countdown-rl demo --model_name_or_path M [--task NAME --task_options K=V ...]``: the demo's stages on a real
pretrained model (``smollm2``: SmolLM2-135M-Instruct), on Countdown or any task with a generator and demonstrations.

1. Model: ``--model_name_or_path`` is a model folder, a Hub id in the local cache, a ``.gguf`` file or a packaged name
   (``smollm2``), converted once (:mod:`countdown_rl.models.source`); anything else is one line, naming the
   install command of the packaged models, before anything loads.
2. Rows (:func:`demo_rows`), in the model's chat template: Countdown's are the tiny demo's pool and split
   (:func:`countdown_rl.demo.puzzles.demo_puzzles`), plus ``num_transfer`` reference puzzles (the reference setup's
   shape: 3-4 numbers in 1..99, targets 1..100, none of them trained on); another task's are its generated rows in
   three disjoint parts (:func:`countdown_rl.demo.task_rows.task_parts`), its options checked first.
3. Base: the model's greedy zero-shot evaluation on the held-out rows -> ``base_eval/``.
4. SFT warm-up (:func:`sft_stage`) as the assistant's turn of the chat template, loss on that turn only: Countdown's
   solver traces, another task's demonstrations (a format warm-up: the reference answer in ``<answer>`` tags)
   -> ``sft/``; its evaluation -> ``zero_shot/`` (the RL run's starting accuracy, as in the tiny demo).
5. RL (GRPO, or Dr.GRPO) from ``sft/`` with the task's reward: rollouts through a colocated vLLM engine where vLLM is
   installed, else the compiled backend (``--quick``: plain ``generate``, as 2 steps do not repay a compile); said
   once, and recorded; ``--lora`` trains a peft adapter on top of the SFT model, merged
   for evaluation -> ``<algorithm>/`` (checkpoints, run record, ``eval/``).
6. Countdown: each of the three models also at ``transfer_budgets`` on the reference puzzles -> ``transfer/base/``,
   ``transfer/sft/``, ``<algorithm>/transfer/``.
7. The three-row table (accuracy, correct / partial / failed, mean tokens, wall time) and the exact McNemar test of
   the RL model against the SFT model on the same held-out rows -> ``<algorithm>/demo_results.json``; Countdown's
   under the best target-blind rule, with the transfer table; another task's with each model's answer-format rate
   and its accuracy read without the tags (its own gain and McNemar test: a gain that is not the format alone), under
   the best constant answer (:mod:`countdown_rl.evaluation.readings`). What the RL run writes stays in its folder,
   so ``--algorithm dr_grpo --resume`` next to a GRPO run reuses stages 3-4 and leaves the GRPO run's files as they
   are.

Evaluations go through vLLM where it is installed (one eager engine per model), else transformers' ``generate``.
``--resume`` reuses every finished stage made with the same settings and continues RL from its newest checkpoint.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from countdown_rl.algorithms.presets import ALGORITHMS, display_name
from countdown_rl.demo.config import DemoConfig, PuzzleSpec, placed, placement_line
from countdown_rl.demo.puzzles import demo_puzzles, unseen_puzzles
from countdown_rl.demo.run_dir import (
    FINAL_SAMPLED_DIR,
    RESULTS_FILE,
    ZERO_SHOT_SAMPLED_DIR,
    finish_stage,
    prepare_run_dir,
    print_header,
    read_json_or_none,
    setup_environment,
    stage_done,
)
from countdown_rl.demo.stages import (
    demo_record,
    evaluate_stage,
    rl_batches,
    rl_recipe,
    sft_precision,
    sft_warmup_on_traces,
    train_rl,
)
from countdown_rl.demo.table import (
    TOKEN_HEADERS,
    beyond_header,
    beyond_rule,
    blind_row,
    blind_rule_by_model,
    blind_rule_of,
    paired_test,
    token_cells,
)
from countdown_rl.evaluation.eval_files import EVAL_JSON
from countdown_rl.files import write_json_atomic
from countdown_rl.generation.vllm_import import VLLM_LEFT_OUT, leave_vllm_out
from countdown_rl.generation.vllm_settings import bind_every_core, engine_dtype
from countdown_rl.runs.memory import release_memory
from countdown_rl.runs.record import FINAL_EVAL_DIR, ZERO_SHOT_DIR
from countdown_rl.tasks import get_task

if TYPE_CHECKING:
    from countdown_rl.tasks.base import Task

__all__ = ["check_demo_model", "choose_backends", "pretrained_config", "rollout_keys", "run_pretrained_demo"]

BASE_EVAL_DIR = "base_eval"
# The evaluation engines' KV block (tokens) on a CPU: benchmarks/vllm_cpu_engine.py (benchmarks/results/real-model.md,
# "The evaluation engine on 2 cores")
EVAL_BLOCK_SIZE = 32
TRANSFER_DIR = "transfer"
# The reference puzzles (the reference setup's shape: 3-4 numbers up to 99, targets up to 100): how far the small
# model's skill transfers.
REFERENCE_PUZZLES = {"min_numbers": 3, "max_numbers": 4, "min_number": 1, "max_number": 99, "min_target": 1,
                     "max_target": 100}


def pretrained_config(model: str, quick: bool = False, task: str = "countdown", **overrides: Any) -> DemoConfig:
    """The real-model demo's settings (``quick``: a few minutes, no gain expected) on ``task``, ``overrides`` on top.
    Another task than Countdown takes :data:`TASK_SIZED` (:data:`TASK_QUICK`) over Countdown's.

    On the balanced default pool (benchmarks/results/archive.md, "SmolLM2-135M-Instruct on balanced puzzles"; stale:
    measured when the pool held the blind-rule cap as a whole, not on each part) these settings did not teach the
    task: SFT 6.0%, below the best target-blind rule (8.7%), GRPO 9.7%, at seed 0.
    Chosen on the expression pools (benchmarks/results/archive.md, "SmolLM2-135M-Instruct through the demo: GRPO and
    Dr.GRPO at seeds 0 and 1"): the whole run takes 41 minutes on 2 CPU cores; RL gains >= 5 points at seed 1 (GRPO
    +9.3, Dr.GRPO +10.0), not at seed 0 (+0.3, -2.3), because what it learns in that time is to add all the numbers.
    Chosen by the trials there: RL at 1e-5 (5e-5 collapsed: -12 points; 2e-5 moved -3.7 to +2.0), 4 prompts x 8
    samples at temperature 0.7 under bf16 autocast, 40 steps; the zero-advantage completions skip the training
    passes (the same update, about half the step) and truncated completions add no loss (against the length collapse
    seen at 5e-5); no KL anchor (beta 0.04 gained +1.0 at seed 0 and doubled the step).

    ``device="cuda"`` (not ``quick``) sizes it for one GPU (:data:`GPU_SIZED`; another task: its recipe at a
    GPU's batch sizes, :data:`TASK_GPU_SIZED`). bf16 is what the demo wants; where
    it runs on a CPU without bf16 kernels, :func:`countdown_rl.demo.config.placed` turns it off (and says so).
    """
    # The chat prompt, temperature 0.7 under bf16 autocast, truncated completions masked, zero-advantage ones skipped.
    # No sampled evaluation (pass_k 0): 16 samples of 300 puzzles would take SmolLM2 longer on a CPU than its RL stage.
    # No expression-pool evaluation: its transfer evaluation scores the reference (expression) puzzles instead.
    # No dynamic sampling (the tiny demo's is on): these settings were chosen without it.
    common = {"model_name_or_path": model, "prompt_template": "chat", "temperature": 0.7, "dynamic_sampling": False,
              "bf16": True, "mask_truncated_completions": True, "skip_zero_advantage": True, "pass_k": 0,
              "expression_eval": 0}
    if quick:  # one checkpoint, at the end: SmolLM2's (weights and Adam state) is 1.6 GB. Every stage, on few rows:
        # each held-out and transfer row is one more chat prompt to prefill in each of three evaluations
        base = DemoConfig(
            **common, puzzles=PuzzleSpec(num_sft=32, num_rl=16, num_eval=4),
            sft_steps=2, sft_batch_size=2, sft_learning_rate=2e-5, max_steps=2, prompts_per_step=2,
            num_generations=4, grpo_learning_rate=1e-6, max_completion_length=48, save_steps=2,
            eval_steps=2, in_training_eval=2, eval_batch_size=8, transfer_budgets=(32, 48), num_transfer=2, quick=True,
        )
    else:
        base = DemoConfig(
            **common, puzzles=PuzzleSpec(num_sft=2000, num_rl=1000, num_eval=300),
            sft_steps=60, sft_batch_size=8, sft_learning_rate=5e-5, max_steps=40, prompts_per_step=4,
            num_generations=8, grpo_learning_rate=1e-5, max_completion_length=64, save_steps=5,
            eval_steps=10, in_training_eval=50, eval_batch_size=64, transfer_budgets=(128, 256), num_transfer=100,
        )
    if not quick and overrides.get("device") == "cuda":
        base = replace(base, **GPU_SIZED)
    if task != "countdown":
        sized = TASK_QUICK if quick else TASK_SIZED
        base = replace(base, task=task, **sized, transfer_budgets=(sized["max_completion_length"],))
        if not quick and overrides.get("device") == "cuda":
            base = replace(base, **TASK_GPU_SIZED)
        if overrides.get("lora") and not quick:
            base = replace(base, grpo_learning_rate=TASK_LORA_LEARNING_RATE)
    return replace(base, **overrides)


# Another task (the format warm-up teaches the answer in tags, with no reasoning written out, so completions are a
# few tokens). Chosen on reasoning-gym's default mixture with SmolLM2-135M-Instruct on 2 CPU cores at seeds 0 and 1
# (benchmarks/results/real-model.md, "SmolLM2 on reasoning-gym's default mixture"): 30 warm-up steps bring the answer
# format to 100% on held-out rows; RL at 1e-5 with dynamic sampling gained +7.5 points (p 0.0003) and kept pass@4,
# where 2e-5 without it gained +3.7 (p 0.2) and narrowed pass@4 by 11 points; its held-out accuracy was as high at
# step 20 as at step 40, so 30 steps: +13.0 (p 7e-08) at seed 1, the whole run 26.6 minutes. The step's 64
# completions train in micro-batches of 16 (two groups; the same update up to float rounding): a whole step's
# activations and logits (SmolLM2's vocabulary is 49,152) were most of the RL stage's 16.4 GB.
TASK_SIZED = {"puzzles": PuzzleSpec(num_sft=240, num_rl=640, num_eval=400), "sft_steps": 30, "sft_batch_size": 8,
              "sft_learning_rate": 5e-5, "sft_bf16": True, "max_steps": 30, "prompts_per_step": 8,
              "num_generations": 8, "grpo_learning_rate": 1e-5, "temperature": 1.0, "dynamic_sampling": True,
              "max_completion_length": 48, "pass_k": 4, "num_transfer": 300, "save_steps": 10, "eval_steps": 15,
              "in_training_eval": 64, "eval_batch_size": 256, "per_device_train_batch_size": 16}
# With --lora (an adapter of rank 16, alpha 32, on every linear layer of the warm-up model), RL's rate: chosen at seed 1
# (real-model.md, the trials' run 4): +11.0 points (p 6e-08) where full fine-tuning at 1e-5 gained +13.0.
TASK_LORA_LEARNING_RATE = 1e-4
TASK_QUICK = {"puzzles": PuzzleSpec(num_sft=32, num_rl=16, num_eval=4), "max_completion_length": 32, "pass_k": 2,
              "num_transfer": 2, "dynamic_sampling": False}


# Another task on one GPU: the CPU's recipe (steps, rate, prompts a step: what was tuned and confirmed), at a GPU's
# batch sizes: a step's completions in one pass (no micro-batches), evaluations 300 prompts a batch; bf16 throughout
# (demo.config.placed). Not yet measured on a GPU.
TASK_GPU_SIZED = {"per_device_train_batch_size": None, "eval_batch_size": 300}


# The real-model demo on one GPU. Not yet measured on a GPU: chosen from the CPU trials (benchmarks/results/archive.md,
# "SmolLM2-135M-Instruct on balanced puzzles", rows 4-7) and the GPU profiles. 150 SFT steps (under bf16) took the SFT
# model from 8.0% to 18.3%, 10 points above the blind rule, where 2 cores had time for 60; RL at 1e-5 then lost 6.3
# points and at 3e-6 held them, over 40-120 steps of 4 prompts: "more RL steps than 2 cores give" was the untried
# lever, so 300 steps of 16 prompts x 8 (a GPU's decode step barely grows with the rows), about 5 passes over the
# 1,000 RL puzzles. Rollouts through vLLM where installed, else the compiled backend (choose_backends).
GPU_SIZED = {"sft_steps": 150, "sft_bf16": True, "max_steps": 300, "prompts_per_step": 16, "grpo_learning_rate": 3e-6,
             "save_steps": 25, "eval_steps": 25, "in_training_eval": 100, "eval_batch_size": 300}


def check_demo_model(model: str) -> None:
    """One line (ValueError) unless ``model`` is a loadable source; nothing is loaded or converted here."""
    from countdown_rl.models.source import PACKAGED_MODELS, check_model_file_source, check_model_source

    if check_model_file_source(model, "--model_name_or_path"):
        return
    try:
        check_model_source(model, "--model_name_or_path")
    except ValueError as err:
        packaged = ", ".join(f"{name} ({install})" for name, (_, _, install) in PACKAGED_MODELS.items())
        raise ValueError(f"{err}; packaged models: {packaged}") from None
    if Path(model).expanduser().is_dir() and not (Path(model).expanduser() / "config.json").is_file():
        raise ValueError(f"--model_name_or_path {model}: a folder without config.json (not a saved model)")


def choose_backends(model_dir: str, quick: bool = False, device: str = "cpu") -> tuple[str, str, str | None]:
    """(rollouts, evaluations, why not vLLM): ``vllm`` for both where vLLM is installed and runs the model, else
    ``compiled`` rollouts (static cache + ``torch.compile``) and transformers ``generate`` evaluations.

    ``compiled`` because on the CPU, under the demo's bf16 autocast, it generated SmolLM2's rollout batch in 0.80x
    plain ``generate``'s time after a first compile of 22-42 s a batch shape (``benchmarks/rollout_backends.py
    --model smollm2``; benchmarks/results/real-model.md): 40 steps repay it. ``quick`` (2 steps) does not: plain
    ``generate``.
    For the same reason ``quick`` on the CPU leaves vLLM out where it runs the model (the reason says so): an engine
    start per stage, and weight syncs into it, do not repay 2 steps and 8 held-out puzzles; its OpenMP threads also
    slow to a crawl beside other busy processes (the SmolLM2 quick run's 2-step RL stage took 14 minutes beside
    the SLURM tests' training runs).
    On ``device="cuda"`` the check of vLLM's CPU kernels is left out (the GPU build runs the model).
    """
    from countdown_rl.generation.backends import get_backend
    from countdown_rl.generation.vllm_sync import check_cpu_engine_model

    without_vllm = "transformers" if quick else "compiled"
    if not get_backend("vllm").installed():
        return without_vllm, "transformers", "vLLM is not installed"
    if device == "cuda":
        return "vllm", "vllm", None
    if quick:
        return without_vllm, "transformers", "--quick on the CPU: an engine start does not repay 2 steps"
    try:
        check_cpu_engine_model(model_dir, "--model_name_or_path")
    except ValueError as err:
        return without_vllm, "transformers", str(err)
    return "vllm", "vllm", None


def rollout_keys(backend: str) -> dict[str, Any]:
    """The RL recipe's rollout keys (:func:`countdown_rl.demo.stages.rl_recipe`'s ``generation``) for ``backend``
    (``vllm``: a colocated engine; else a ``generation_backend``).

    >>> rollout_keys("vllm")["vllm_mode"]
    'colocate'
    """
    if backend == "vllm":
        return {"use_vllm": True, "vllm_mode": "colocate", "vllm_enable_sleep_mode": False}
    return {"generation_backend": backend}


@dataclass
class DemoRows:
    """What every stage reads: the task, its three parts (``sft``, ``rl``, ``eval``), the transfer rows (Countdown's
    reference puzzles, or another task's transfer setting; none when there is none) and the task that scores them,
    the rows' description, and what the SFT stage learns and records."""

    task: Task
    parts: dict[str, list[dict[str, Any]]]
    transfer: list[dict[str, Any]]
    dataset: str
    sft_what: str
    sft_record: dict[str, Any]
    base_record: dict[str, Any] = field(default_factory=dict)
    transfer_task: Task | None = None


def demo_rows(config: DemoConfig) -> DemoRows:
    """Countdown: the tiny demo's pool and split, the reference puzzles, solver traces to learn. Another task: its
    generated rows cut in three (:func:`countdown_rl.demo.task_rows.task_parts`), its demonstrations (the reference
    answer in ``<answer>`` tags) to learn, and ``num_transfer`` rows of its transfer setting
    (``config.transfer_options``; none without); its name and options in the records."""
    from countdown_rl.demo.task_rows import check_demo_task, describe_task, task_parts, transfer_rows

    if config.task == "countdown":
        puzzles = demo_puzzles(config.puzzles, config.seed)
        return DemoRows(get_task("countdown"), puzzles, _transfer_puzzles(config, puzzles["sft"] + puzzles["rl"]),
                        config.puzzles.describe(), "solver traces", {"trace": config.trace})
    task = check_demo_task(config.task, config.task_options)
    spec = config.puzzles
    parts = task_parts(task, spec.num_sft, spec.num_rl, spec.num_eval, config.seed)
    named = {"task": config.task, "task_options": list(config.task_options)}
    transfer, transfer_task = [], None
    if config.transfer_options and config.num_transfer > 0 and config.transfer_budgets:
        transfer_task = check_demo_task(config.task, config.transfer_options)
        # another seed than the parts', and no problem any part holds (the held-out ones are scored apart)
        transfer = transfer_rows(transfer_task, config.num_transfer, config.seed + 7919,
                                 [row for rows in parts.values() for row in rows])
        named["transfer_options"] = list(config.transfer_options)
    return DemoRows(task, parts, transfer, describe_task(task, config.task_options), "reference answers",
                    {"examples": "demonstrations", **named}, named, transfer_task)


def sft_stage(config: DemoConfig, rows: DemoRows, base_dir: Path, sft_dir: Path) -> None:
    """The SFT warm-up in the model's chat template (loss on the assistant's turn) -> ``sft_dir``: Countdown's solver
    traces, or another task's demonstrations (its format: the answer in tags)."""
    settings = {"steps": config.sft_steps, "batch_size": config.sft_batch_size,
                "learning_rate": config.sft_learning_rate, "seed": config.seed, "use_cpu": config.device == "cpu",
                "bf16": config.sft_bf16, "gradient_checkpointing": config.gradient_checkpointing}
    if config.task == "countdown":
        sft_warmup_on_traces(base_dir, sft_dir, rows.parts["sft"], trace=config.trace, show_progress=not config.quick,
                             template=config.prompt_template, **settings)
        return
    from countdown_rl.training.pipeline import progress_callback
    from countdown_rl.training.warmup import sft_warmup, task_examples

    callbacks = [] if config.quick else [progress_callback(max(1, config.sft_steps // 10))]
    sft_warmup(base_dir, sft_dir, task_examples(rows.task, rows.parts["sft"], config.prompt_template),
               callbacks=callbacks, **settings)


def _transfer_puzzles(config: DemoConfig, trained_on: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if config.num_transfer <= 0 or not config.transfer_budgets:
        return []
    # Another seed than the demo's pool
    return unseen_puzzles(config.num_transfer, config.seed + 7919, REFERENCE_PUZZLES, trained_on)


@dataclass
class EvalJob:
    """One evaluation of a model: ``rows`` at ``budgets`` into ``out_dir``, scored by ``task`` (made with
    ``options``; None: the demo's task); greedy, or ``samples`` a row at ``temperature`` (pass@k)."""

    out_dir: Path
    rows: Sequence[Mapping[str, Any]]
    budgets: Sequence[int]
    task: Task | None = None
    options: Sequence[str] | None = None
    samples: int = 1
    temperature: float = 0.0

    def stage(self, stage: Mapping[str, Any]) -> dict[str, Any]:
        """The stage record its files carry (a sampled evaluation's names its sampling)."""
        return dict(stage) if self.samples == 1 else {**stage, "samples": self.samples,
                                                      "temperature": self.temperature}


class _Evaluator:
    """Evaluations of a saved model: through one eager vLLM engine when vLLM is installed, else transformers
    ``generate``; reused (with ``resume``) when the folder holds an evaluation of the same stage at the same
    budgets."""

    def __init__(self, config: DemoConfig, backend: str, task: Task):
        self.config, self.backend, self.task = config, backend, task

    def reusable(self, job: EvalJob, stage: Mapping[str, Any]) -> bool:
        previous = read_json_or_none(job.out_dir / EVAL_JSON)
        return (self.config.resume and isinstance(previous, dict)
                and previous.get("meta", {}).get("demo_stage") == job.stage(stage)
                and [r.get("max_tokens") for r in previous.get("results", [])] == sorted(job.budgets))

    def evaluate(self, model_dir: Path, jobs: Mapping[str, EvalJob], stage: Mapping[str, Any],
                 dataset: str) -> dict[str, list]:
        """Evaluate ``model_dir`` on each job; one engine serves them all. Returns each job's results (one per
        budget) under its name."""
        from countdown_rl.evaluation.eval_files import read_eval
        from countdown_rl.generation.vllm_settings import engine_settings

        todo = {name for name, job in jobs.items() if not self.reusable(job, stage)}
        engine = self._engine(model_dir) if todo and self.backend == "vllm" else None
        results = {}
        for name, job in jobs.items():
            if name not in todo:
                print(f"reusing {job.out_dir}", flush=True)
                results[name] = read_eval(job.out_dir)["results"]
                continue
            job_stage = job.stage(stage)
            meta = {"model": str(model_dir), "dataset": dataset, "stage": stage["stage"], "demo_stage": job_stage,
                    **({"vllm_engine": engine_settings(engine)} if engine is not None else {})}
            sampling = ({"temperature": job.temperature, "num_samples": job.samples, "seed": self.config.seed}
                        if job.samples > 1 else {})
            model = engine if engine is not None else str(model_dir)
            results[name] = evaluate_stage(
                model, None, job.rows, budgets=job.budgets, out_dir=job.out_dir, meta=meta,
                batch_size=self.config.eval_batch_size * job.samples,  # as many prompts a batch
                template=self.config.prompt_template, backend=self.backend, show_progress=not self.config.quick,
                device=self.config.device, task=job.task or self.task,
                task_options=self.config.task_options if job.options is None else job.options, **sampling)
        del engine
        release_memory()
        return results

    def _engine(self, model_dir: Path):
        from countdown_rl.generation.sampling import vllm_engine

        # Eager: one engine per model, so compiling each (1.5-2 min on 2 cores) would cost more than it saves. The
        # dtype the run placed (fp32 on a CPU without bf16 kernels), not vLLM's auto (bf16 on every x86 CPU).
        # KV blocks of EVAL_BLOCK_SIZE tokens: only whole blocks are cached, and vllm-cpu's 128 is longer than the
        # demo's prompts, so no prompt would ever be reused (pass@k's samples, the chat head every row shares).
        return vllm_engine(model_dir, dtype=engine_dtype(self.config.bf16, device=self.config.device),
                           seed=self.config.seed, enforce_eager=True, max_model_len=1024,
                           **({"block_size": EVAL_BLOCK_SIZE} if self.config.device == "cpu" else {}))


def _minutes(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds / 60:.1f} min"


def _row(label: str, result, blind: dict[str, Any] | None, seconds: float | None) -> list[str]:
    from countdown_rl.files import format_percent

    return [label, format_percent(result.accuracy), f"{result.correct} / {result.partial} / {result.failed}",
            beyond_rule(blind, result.max_tokens), *token_cells(result), _minutes(seconds)]


def run_pretrained_demo(config: DemoConfig, own_process: bool = False) -> dict[str, Any]:
    """Every stage of the real-model demo (module docstring); returns what ``demo_results.json`` holds.
    ``own_process``: the demo is its process's entry point, which then imports no vLLM unless a backend uses it."""
    from countdown_rl.models.source import resolve_model_source

    if config.algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {list(ALGORITHMS)}, got {config.algorithm!r}")
    out = Path(config.output_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--output_dir {out} exists and is not a folder")
    check_demo_model(str(config.model_name_or_path))
    config, placement = placed(config)  # --device cuda without a GPU: one line, before anything loads
    rl_batches(config)  # a micro-batch that splits a group: one line, before anything loads
    rows = demo_rows(config)  # a task's bad options or too few rows: one line, before anything loads
    setup_environment(config.num_threads)
    # GiB per engine: an evaluation's prompts and answers are ~150 tokens (23k tokens of fp32 SmolLM2 KV a GiB), and 2
    # cores are busy long before 150 sequences run at once
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # the demo prints a line per stage; vLLM's INFO buries them
    run_dir = out / config.algorithm
    prepare_run_dir(run_dir, config.resume)
    out.mkdir(parents=True, exist_ok=True)
    started, timings = time.time(), {}
    budget, name = config.max_completion_length, display_name(config.algorithm)
    t = time.time()
    print_header(f"model: {config.model_name_or_path}")
    source = resolve_model_source(str(config.model_name_or_path), "--model_name_or_path")
    base_dir = Path(source.path)
    print(f"loading from {base_dir}" + (" (converted from GGUF once, cached)" if source.conversion else ""))
    backend, eval_backend, why_not_vllm = choose_backends(str(base_dir), quick=config.quick, device=config.device)
    if own_process and "vllm" not in (backend, eval_backend) and leave_vllm_out():
        print(VLLM_LEFT_OUT)
    evaluator = _Evaluator(config, eval_backend, rows.task)
    timings["model_s"] = time.time() - t

    parts, transfer, dataset = rows.parts, rows.transfer, rows.dataset
    kept_out = ("reference puzzles (3-4 numbers up to 99)" if config.task == "countdown" else
                f"rows of the transfer setting ({' '.join(config.transfer_options)})")
    reference = f"; {len(transfer)} {kept_out} at {list(config.transfer_budgets)} tokens" if transfer else ""
    print(f"{dataset}: {len(parts['sft'])} for SFT, {len(parts['rl'])} for RL, {len(parts['eval'])} held "
          f"out{reference}; evaluations through {evaluator.backend}, rollouts through {backend}"
          + (f" ({why_not_vllm})" if why_not_vllm else ""))
    print(placement_line(placement), flush=True)
    engines = [what for what, name in (("rollouts", backend), ("evaluations", eval_backend)) if name == "vllm"]
    vllm_run = {}
    if engines:  # each engine's dtype and threads, said once; what each engine got goes to its record
        binding = bind_every_core() if config.device == "cpu" else "the GPU"
        vllm_run = {"vllm_dtype": engine_dtype(config.bf16, device=config.device), "vllm_binding": binding}
        print(f"vLLM for the {' and '.join(engines)}: {vllm_run['vllm_dtype']}, threads on {binding}", flush=True)
    budgets_of = {"held_out": [budget], "transfer": sorted(config.transfer_budgets)}

    def jobs(eval_dir: Path, transfer_dir: Path, sampled_dir: Path | None = None) -> dict[str, EvalJob]:
        todo = {"held_out": EvalJob(eval_dir, parts["eval"], budgets_of["held_out"])}
        if transfer and config.transfer_budgets:
            todo["transfer"] = EvalJob(transfer_dir, transfer, budgets_of["transfer"], rows.transfer_task,
                                       config.transfer_options if rows.transfer_task else None)
        if sampled_dir is not None and config.pass_k:  # pass@1 / pass@k of the SFT and RL models
            todo["sampled"] = EvalJob(sampled_dir, parts["eval"], budgets_of["held_out"], samples=config.pass_k,
                                      temperature=config.pass_temperature)
        return todo

    # Base model: zero-shot.
    t = time.time()
    # the record's keys stay as they were (a folder made before the field renames still resumes)
    base_record = {"stage": "base", "model": str(config.model_name_or_path), "source": source.record,
                   "template": config.prompt_template, "puzzles": asdict(config.puzzles), "seed": config.seed,
                   "transfer": len(transfer), **rows.base_record}
    print_header(f"base model, zero-shot: greedy, {budget} tokens -> {out / BASE_EVAL_DIR}")
    base_results = evaluator.evaluate(base_dir, jobs(out / BASE_EVAL_DIR, out / TRANSFER_DIR / "base"),
                                      base_record, dataset)
    timings["base_eval_s"] = time.time() - t

    # SFT warm-up and its evaluation.
    t = time.time()
    sft_dir = out / "sft"
    sft_record = {"stage": "sft", "base": base_record, "steps": config.sft_steps, "batch_size": config.sft_batch_size,
                  "learning_rate": config.sft_learning_rate, **rows.sft_record, **sft_precision(config)}
    if config.resume and stage_done(sft_dir, sft_record):
        print_header(f"SFT warm-up: reusing {sft_dir}")
    else:
        print_header(f"SFT warm-up: {config.sft_steps} steps x {config.sft_batch_size} {rows.sft_what} in the chat "
                     f"template -> {sft_dir}")
        sft_stage(config, rows, base_dir, sft_dir)
        release_memory()  # the warm-up's trainer, model and optimiser
        finish_stage(sft_dir, sft_record, model=str(base_dir), dataset=dataset)
    timings["sft_s"] = time.time() - t
    t = time.time()
    print_header(f"after SFT: greedy, {budget} tokens -> {out / ZERO_SHOT_DIR}")
    sft_results = evaluator.evaluate(sft_dir, jobs(out / ZERO_SHOT_DIR, out / TRANSFER_DIR / "sft",
                                                   out / ZERO_SHOT_SAMPLED_DIR), sft_record, dataset)
    timings["sft_eval_s"] = time.time() - t

    # RL.
    t = time.time()
    print_header(f"{name}{' (LoRA)' if config.lora else ''} at {budget} tokens: {config.max_steps} steps x "
                 f"{config.prompts_per_step} prompts x {config.num_generations} samples, rollouts through {backend} "
                 f"-> {run_dir}")
    # The final evaluation is the stage below (through vLLM where it runs, on the saved or merged model), so the
    # recipe leaves it out; the model card, the adapter merge (--lora) and the status are the recipe's.
    recipe = rl_recipe(config, sft_dir, run_dir, num_eval=len(parts["eval"]), generation=rollout_keys(backend),
                       final_eval=False)
    run_info = {"base_model": str(config.model_name_or_path), **source.record, "rollout_backend": backend,
                "eval_backend": eval_backend, "why_not_vllm": why_not_vllm, "lora": config.lora, "placement": placement,
                **vllm_run}
    run = train_rl(recipe, parts["rl"], parts["eval"], record=demo_record(sft_dir, dataset, parts, run_info),
                   show_progress=not config.quick)
    if run.trained.resumed_from:
        print(f"resumed from {run.trained.resumed_from}")
    global_step = run.trained.global_step
    del run  # the trainer's engine and model: the final evaluation loads the saved model
    release_memory()  # the RL stage's peak, kept by the heap otherwise while the evaluation's engine runs
    final_dir = run_dir / "merged" if config.lora else run_dir
    timings["rl_s"] = time.time() - t
    t = time.time()
    final_record = {"stage": "final", "sft": sft_record, "algorithm": config.algorithm, "steps": global_step}
    print_header(f"after {name}: same {'puzzles' if config.task == 'countdown' else 'rows'} and settings -> "
                 f"{run_dir / FINAL_EVAL_DIR}")
    final_results = evaluator.evaluate(final_dir, jobs(run_dir / FINAL_EVAL_DIR, run_dir / TRANSFER_DIR,
                                                       run_dir / FINAL_SAMPLED_DIR), final_record, dataset)
    shutil.copytree(out / ZERO_SHOT_DIR, run_dir / ZERO_SHOT_DIR, dirs_exist_ok=True)
    timings["final_eval_s"] = time.time() - t
    timings["total_s"] = time.time() - started
    held_out = [results["held_out"][0] for results in (base_results, sft_results, final_results)]
    sampled = [results["sampled"][0] if "sampled" in results else None for results in (sft_results, final_results)]
    common = _common_results(config, out, run_dir, held_out, sampled, timings, backend, evaluator.backend,
                             global_step, placement, dataset, rows.task.columns)
    if config.task == "countdown":
        return _results(config, out, run_dir, base_results, sft_results, final_results, held_out, common)
    transfer_results = ([results["transfer"] for results in (base_results, sft_results, final_results)]
                        if "transfer" in base_results else None)
    return _task_results(config, rows, out, run_dir, held_out, common, transfer_results)


def _labels(config: DemoConfig, global_step: int) -> tuple[str, str, str]:
    trained = f"after {display_name(config.algorithm)} ({global_step} steps)"
    return "base model (zero-shot)", "after SFT warm-up", trained


def _stage_seconds(timings: Mapping[str, float]) -> tuple[float, float, float]:
    """Each model's wall time: its evaluation, and the training that made it."""
    return (timings["base_eval_s"], timings["sft_s"] + timings["sft_eval_s"],
            timings["rl_s"] + timings["final_eval_s"])


def _common_results(config, out, run_dir, held_out, sampled, timings, backend, eval_backend, global_step, placement,
                    dataset, columns) -> dict[str, Any]:
    """What ``demo_results.json`` holds on any task: the three models' held-out results, the RL gain over SFT and its
    exact McNemar test, the SFT and RL models' sampled results (pass@1 / pass@k; None without ``pass_k``), the
    backends, the timings, the paths and the settings."""
    return {
        "command": "countdown-rl demo", "model": config.model_name_or_path, "algorithm": config.algorithm,
        "lora": config.lora, "max_completion_length": config.max_completion_length, "dataset": dataset,
        "rollout_backend": backend, "eval_backend": eval_backend,
        "base": held_out[0].to_dict(), "sft": held_out[1].to_dict(), "trained": held_out[2].to_dict(),
        "gain_points": 100 * (held_out[2].accuracy - held_out[1].accuracy),
        "paired_test": paired_test(out / ZERO_SHOT_DIR, run_dir / FINAL_EVAL_DIR, config.max_completion_length,
                                   columns),
        "sft_sampled": None if sampled[0] is None else sampled[0].to_dict(),
        "trained_sampled": None if sampled[1] is None else sampled[1].to_dict(),
        "global_step": global_step, "timings": timings, "device": placement["device"], "precision": placement,
        "paths": {"base_eval": str(out / BASE_EVAL_DIR), "sft": str(out / "sft"),
                  "zero_shot": str(out / ZERO_SHOT_DIR), "run": str(run_dir), "eval": str(run_dir / FINAL_EVAL_DIR)},
        "config": asdict(config),
    }


def _summary(config: DemoConfig, results: Mapping[str, Any], what: str) -> str:
    """The line under the table: SFT -> RL accuracy, the gain and its McNemar test, on how many ``what``."""
    paired, name = results["paired_test"], display_name(config.algorithm)
    return (f"accuracy after SFT {100 * results['sft']['accuracy']:.1f}% -> after {name} "
            f"{100 * results['trained']['accuracy']:.1f}% ({results['gain_points']:+.1f} points; McNemar p = "
            f"{paired['p_value']:.3g}, {paired['only_a']} {what} only RL solved, {paired['only_b']} only SFT) on "
            f"{results['base']['num_rows']} {what}, {config.max_completion_length} tokens, in "
            f"{results['timings']['total_s'] / 60:.1f} min")


def _results(config, out, run_dir, base_results, sft_results, final_results, held_out, common) -> dict[str, Any]:
    from countdown_rl.files import format_percent, render_markdown_table

    global_step, placement = common["global_step"], common["precision"]
    labels = _labels(config, global_step)
    seconds = _stage_seconds(common["timings"])
    blinds = [blind_rule_of(d) for d in (out / BASE_EVAL_DIR, out / ZERO_SHOT_DIR, run_dir / FINAL_EVAL_DIR)]
    table = render_markdown_table(
        ["model", "accuracy", "correct / partial / failed", beyond_header(blinds[0]), *TOKEN_HEADERS, "stage time"],
        blind_row(blinds[0], 7) + [_row(label, result, blind, s) for label, result, blind, s
                                   in zip(labels, held_out, blinds, seconds, strict=True)])
    transfer_table = None
    if "transfer" in base_results:
        transfer_blind = blind_rule_of(out / TRANSFER_DIR / "base")
        blind_cells = ([["best target-blind rule", *(format_percent(transfer_blind["accuracy"])
                                                      for _ in base_results["transfer"])]] if transfer_blind else [])
        transfer_table = render_markdown_table(
            ["model", *(f"reference puzzles, {r.max_tokens} tokens" for r in base_results["transfer"])],
            blind_cells + [[label, *(format_percent(r.accuracy) for r in results["transfer"])]
                           for label, results in zip(labels, (base_results, sft_results, final_results), strict=True)])
    results = {
        **common, "num_eval_puzzles": held_out[0].num_rows,
        "blind_rule": blind_rule_by_model(dict(zip(("base", "sft", "trained"), blinds, strict=True))),
        "transfer": {label: [r.to_dict() for r in results["transfer"]] for label, results in
                     zip(("base", "sft", "trained"), (base_results, sft_results, final_results), strict=True)
                     if "transfer" in results},
        "table": table, "transfer_table": transfer_table,
        "paths": {**common["paths"], "transfer": str(out / TRANSFER_DIR),
                  "final_transfer": str(run_dir / TRANSFER_DIR)},
    }
    write_json_atomic(run_dir / RESULTS_FILE, results)  # per run: GRPO and Dr.GRPO share out's first stages
    print_header(f"results (strict Countdown accuracy, greedy, held-out puzzles; trained {placement_line(placement)})")
    print(table)
    if transfer_table:
        print("\n" + transfer_table)
    print("\n" + _summary(config, results, "puzzles"))
    print(f"files: {run_dir / RESULTS_FILE}; report: countdown-rl report {run_dir}")
    return results


def _task_results(config: DemoConfig, rows: DemoRows, out: Path, run_dir: Path, held_out: Sequence[Any],
                  common: Mapping[str, Any], transfer_results: Sequence[Sequence[Any]] | None) -> dict[str, Any]:
    """Another task's table and results: beside the strict accuracy (the answer in tags, the task's scorer), each
    model's format rate and its accuracy read without the tags (:mod:`countdown_rl.evaluation.readings`), with the
    same gain and McNemar test, the most common gold answer's accuracy (the blind baseline), pass@1 / pass@k of the
    SFT and RL models (``pass_k``), and the transfer setting's rows (``transfer_results``: each model's results
    there, base, SFT, RL; None without one) with their own test."""
    from countdown_rl.evaluation.eval_files import read_samples
    from countdown_rl.evaluation.readings import constant_answer, content_reading, format_rate, paired_content
    from countdown_rl.files import format_percent, render_markdown_table
    from countdown_rl.tasks.base import clip_shown

    task, budget, models = rows.task, config.max_completion_length, ("base", "sft", "trained")
    dirs = dict(zip(models, (out / BASE_EVAL_DIR, out / ZERO_SHOT_DIR, run_dir / FINAL_EVAL_DIR), strict=True))
    samples = {key: read_samples(path, budget) for key, path in dirs.items()}
    formats = {key: format_rate(rows_) for key, rows_ in samples.items()}
    content = {key: content_reading(task, rows_) for key, rows_ in samples.items()}
    content["gain_points"] = 100 * (content["trained"]["accuracy"] - content["sft"]["accuracy"])
    content["paired_test"] = paired_content(task, samples["sft"], samples["trained"], task.columns)
    constant = constant_answer(task, rows.parts["eval"], config.prompt_template)
    shown = clip_shown(constant["answer"], 20)
    k = config.pass_k if common["sft_sampled"] and common["trained_sampled"] else None

    def passes(key: str) -> str:
        sampled = common.get(f"{key}_sampled")
        if not k or not sampled:
            return "—"
        return f"{format_percent(sampled['pass_at_k'][1])} / {format_percent(sampled['pass_at_k'][k])}"

    table = render_markdown_table(
        ["model", "accuracy", "answer format", "accuracy without the tags", "correct / partial / failed",
         f"pass@1 / pass@{k or 'k'}", *TOKEN_HEADERS, "stage time"],
        [[f"best constant answer ({shown})", format_percent(constant["accuracy"]), "—",
          format_percent(constant["accuracy"]), "—", "—", "—", "—", "—"]]
        + [[label, format_percent(result.accuracy), format_percent(formats[key]),
            format_percent(content[key]["accuracy"]), f"{result.correct} / {result.partial} / {result.failed}",
            passes(key), *token_cells(result), _minutes(seconds)]
           for label, key, result, seconds in zip(_labels(config, common["global_step"]), models, held_out,
                                                  _stage_seconds(common["timings"]), strict=True)])
    transfer = None if transfer_results is None else _transfer_setting(config, rows, out, run_dir, transfer_results)
    results = {**common, "task": config.task, "task_options": list(config.task_options),
               "num_eval_rows": common["base"]["num_rows"], "format_rate": formats, "content": content,
               "constant_answer": constant, "pass_k": k, "transfer_setting": transfer, "table": table}
    write_json_atomic(run_dir / RESULTS_FILE, results)
    print_header(f"results ({config.task}, greedy, held-out rows; accuracy: the answer in <answer> tags, scored by "
                 f"the task; trained {placement_line(common['precision'])})")
    print(table)
    print("\n" + _summary(config, results, "rows"))
    paired = content["paired_test"]
    print(f"read without the tags: {100 * content['sft']['accuracy']:.1f}% -> "
          f"{100 * content['trained']['accuracy']:.1f}% ({content['gain_points']:+.1f} points; McNemar p = "
          f"{paired['p_value']:.3g}); the most common gold answer ({shown}) scores "
          f"{100 * constant['accuracy']:.1f}%")
    if transfer is not None:
        print(f"transfer setting ({' '.join(transfer['options'])}; {transfer['rows']} rows, none trained on): "
              f"base {format_percent(transfer['base']['accuracy'])}, SFT {format_percent(transfer['sft']['accuracy'])}"
              f" -> {format_percent(transfer['trained']['accuracy'])} ({transfer['gain_points']:+.1f} points; "
              f"McNemar p = {transfer['paired_test']['p_value']:.3g})")
    print(f"files: {run_dir / RESULTS_FILE}; report: countdown-rl report {run_dir}")
    return results


def _transfer_setting(config: DemoConfig, rows: DemoRows, out: Path, run_dir: Path,
                      results: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """The transfer setting's results (``results``: the base, SFT and RL models' there, one per budget): each model's
    accuracy on its rows, the RL gain over SFT and its exact McNemar test, and the best constant answer there."""
    from countdown_rl.evaluation.readings import constant_answer

    budget = config.transfer_budgets[-1]
    at_budget = {key: next(r for r in model if r.max_tokens == budget).to_dict()
                 for key, model in zip(("base", "sft", "trained"), results, strict=True)}
    task = rows.transfer_task or rows.task
    return {"options": list(config.transfer_options), "rows": len(rows.transfer), "max_tokens": budget, **at_budget,
            "gain_points": 100 * (at_budget["trained"]["accuracy"] - at_budget["sft"]["accuracy"]),
            "paired_test": paired_test(out / TRANSFER_DIR / "sft", run_dir / TRANSFER_DIR, budget, task.columns),
            "constant_answer": constant_answer(task, rows.transfer, config.prompt_template)}
