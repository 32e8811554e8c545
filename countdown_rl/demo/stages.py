"""``countdown-rl demo``: SFT warm-up then GRPO on Countdown, offline, on a CPU, in a few minutes.

1. Puzzles: one seeded pool of easy generated puzzles (3 numbers in 1..20, targets 1..50; the generator keeps
   each ``(target, sorted nums)`` once; ``balanced``: no target-blind template, such as adding the numbers, solves
   more than 6% of the SFT, RL or held-out part, each capped on its own, so a gain cannot be one fixed rule). The
   pool is cut in three disjoint parts: ``num_sft`` for SFT, ``num_rl`` for RL, ``num_eval`` held out (no puzzle
   is on two sides).
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
   ``countdown-rl report <output_dir>/<algorithm>`` works. A before/after table is printed and
   ``<algorithm>/demo_results.json`` written (in the run's folder: a second algorithm leaves the first's), with
   the exact McNemar test of RL against SFT on the same puzzles and the best target-blind rule's row (then the
   same table on the expression pool's puzzles).
   Accuracy is always the strict Countdown accuracy of :mod:`evaluation`.

The stages are plain functions (:func:`warm_start` = puzzles + base model + :func:`sft_warmup_on_traces`;
:func:`zero_shot_stage`; :func:`rl_stage` = :func:`rl_recipe` run by :func:`train_rl`, with :func:`evaluate_stage`
as its final evaluation) so that
``benchmarks/toy_replication.py`` runs SFT once and six RL runs from it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from countdown_rl.algorithms.curriculum import describe_schedule
from countdown_rl.algorithms.presets import ALGORITHMS, display_name
from countdown_rl.evaluation.eval_files import EVAL_JSON
from countdown_rl.files import write_json_atomic
from countdown_rl.runs.device import resolve_device
from countdown_rl.runs.record import (
    FINAL_EVAL_DIR,
    ZERO_SHOT_DIR,
    RunRecord,
    read_run_record,
    write_run_record,
)
from countdown_rl.training.pipeline import progress_callback

PROG = "countdown-rl demo"
DEMO_SOURCE = PROG  # the run record's source: a run directory this command may clear
RESULTS_FILE = "demo_results.json"
RL_DATA_DIR = "data"  # in the RL run's folder: the RL puzzles (train.jsonl) and the held-out ones (test.jsonl)
RECIPE_FILE = "recipe.yaml"  # in the RL run's folder: the recipe it ran, for countdown-rl train --config
# the sampled evaluations (pass@k): the SFT model's in <output_dir>, the RL model's in its run folder
ZERO_SHOT_SAMPLED_DIR, FINAL_SAMPLED_DIR = "zero_shot_sampled", "eval_sampled"
TRACES = ("solver", "search")  # SFT completions: puzzles.solver_trace or puzzles.search_trace
# the expression-pool evaluations (DemoConfig.expression_eval): the SFT model's in <output_dir>, the RL model's in its
# run folder; their puzzles come from another seed than the demo's pool (EXPRESSION_SEED = seed + this)
ZERO_SHOT_EXPRESSION_DIR, FINAL_EXPRESSION_DIR = "zero_shot_expression", "eval_expression"
EXPRESSION_SEED = 104729


class RunStopped(Exception):
    """Training stopped early (interrupted after a checkpoint, or a non-finite step); ``code`` is the exit code."""

    def __init__(self, code: int):
        super().__init__(f"training stopped early (exit code {code})")
        self.code = code


@dataclass(frozen=True)
class PuzzleSpec:
    """Which puzzles the demo generates (the generator's knobs) and how many of each kind."""

    min_numbers: int = 3
    max_numbers: int = 3
    min_number: int = 1
    max_number: int = 20
    min_target: int = 1
    max_target: int = 50
    num_sft: int = 4000
    num_rl: int = 2000
    num_eval: int = 300
    # "balanced": no target-blind template (e.g. "add the numbers") solves more than 6% of each part, so a gain cannot
    # come from one fixed rule; "expression" reproduces the figures measured before it (sum-heavy: ~20% blind)
    sampling: str = "balanced"

    def generator_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`countdown_rl.tasks.countdown.puzzles.generate_countdown`."""
        return {
            "min_numbers": self.min_numbers,
            "max_numbers": self.max_numbers,
            "min_number": self.min_number,
            "max_number": self.max_number,
            "min_target": self.min_target,
            "max_target": self.max_target,
            "sampling": self.sampling,
        }

    def describe(self) -> str:
        """One line for run_info.json and the tables."""
        count = (f"{self.min_numbers}" if self.min_numbers == self.max_numbers
                 else f"{self.min_numbers}-{self.max_numbers}")
        return (f"generated Countdown puzzles ({self.sampling}): {count} numbers in {self.min_number}.."
                f"{self.max_number}, targets {self.min_target}..{self.max_target}")


@dataclass(frozen=True)
class DemoConfig:
    """Every setting of the demo; the defaults are the full CPU demo, :func:`quick_config` the smoke version."""

    output_dir: str = "outputs/demo"
    algorithm: str = "grpo"
    seed: int = 0
    puzzles: PuzzleSpec = field(default_factory=PuzzleSpec)
    model_size: str = "demo"
    # SFT warm-up
    trace: str = "solver"  # "solver": the solution's steps; "search": min..max_failed wrong attempts, then them
    min_failed: int = 0
    max_failed: int = 2
    # 2000 steps, not 1000: from the stronger start (SFT 16.7% against 12.3% at seed 0) RL gained +10.3 points
    # against +3.3 in as many steps (benchmarks/results/archive.md, "How the tiny demo's setting was chosen")
    sft_steps: int = 2000
    sft_batch_size: int = 16
    sft_learning_rate: float = 2e-3
    # SFT's forwards and backwards under bf16 autocast (the weights stay fp32): on 2 CPU cores with bf16 kernels a
    # SmolLM2 SFT step cost 0.78x an fp32 one (benchmarks/results/real-model.md, "Precision on CPUs")
    sft_bf16: bool = False
    # RL: 500 steps, one pass over the 2000 RL puzzles; at 300 the gain was not significant at two seeds of three
    max_steps: int = 500
    prompts_per_step: int = 4
    num_generations: int = 8
    grpo_learning_rate: float = 1e-4
    # 0.3 with dynamic sampling (below): tuned on seeds 0-2, then run on seeds 13-15 chosen in advance, GRPO gained
    # +6.0 to +12.0 points (p < 0.05 at each) where temperature 0.7 without it gained +0.3 at seed 13; paired on the
    # same puzzles over those six seeds, 3.4 points more on average, pass@16 kept (benchmarks/results/demo.md,
    # "Dynamic sampling at temperature 0.3 on seeds 13, 14 and 15")
    temperature: float = 0.3
    beta: float = 0.0
    max_completion_length: int = 48
    # TRL's mask_truncated_completions: a completion the budget cut adds no loss (its negative advantage otherwise
    # pushes on every token it wrote, the ones before the cut included)
    mask_truncated_completions: bool = False
    # CountdownGRPOConfig.skip_zero_advantage: the groups scored all alike skip the loss's forward and backward
    # (the same update; needs beta 0); on by default: most of the tiny model's groups score alike
    skip_zero_advantage: bool = True
    # CountdownGRPOConfig.dynamic_sampling (DAPO's group filter): more prompts drawn, up to dynamic_sampling_max_rounds
    # generation rounds a step, until the step's groups all hold some correct and some wrong completions; at
    # temperature 0.3 most groups score alike, and without it a step would train on few of them
    dynamic_sampling: bool = True
    dynamic_sampling_max_rounds: int = 4
    # ((start_step, budget), ...): a completion-budget curriculum whose largest budget is max_completion_length
    budget_schedule: tuple[tuple[int, int], ...] | None = None
    save_steps: int = 50
    eval_steps: int = 50  # in-training greedy eval of `in_training_eval` held-out puzzles (report curve)
    in_training_eval: int = 100
    # pass@1 / pass@k of the SFT and RL models: pass_k samples a held-out puzzle at pass_temperature (0: not run),
    # so the table shows whether RL sharpened the model (pass@1 up) or narrowed it (pass@k down)
    pass_k: int = 16
    pass_temperature: float = 1.0
    # Held-out puzzles of the expression pool (a random expression's value: the public Countdown data's distribution,
    # where a fixed sum or difference of the numbers solves a fifth or more), none trained on, scored greedily by the
    # SFT and RL models beside the balanced held-out part: the gain on the distribution users know (0: none; only with
    # balanced puzzles, whose held-out part is not that pool already)
    expression_eval: int = 300
    # Evaluation and machine
    eval_batch_size: int = 150
    num_threads: int = 2
    resume: bool = False
    quick: bool = False
    # A real pretrained model (countdown_rl.demo.pretrained); None: the tiny random Qwen3 above
    model_name_or_path: str | None = None
    prompt_template: str = "r1_zero"  # the prompts' template: "chat" for an instruct model
    lora: bool = False  # RL trains a LoRA adapter on the SFT model
    transfer_budgets: tuple[int, ...] = ()  # also evaluated on the reference puzzles at these budgets
    num_transfer: int = 0
    # RL's forwards and backwards under bf16 autocast (the weights and the optimiser stay fp32): on a CPU with bf16
    # kernels a step costs ~0.7x an fp32 one; vLLM's rollouts are bf16 either way. The demo's wish: :func:`placed`
    # keeps it (and sft_bf16) only where the device computes bf16, fp32 elsewhere (emulated bf16 is 15-60x slower)
    bf16: bool = False
    # where every stage runs: "auto" (CUDA when torch sees a GPU, else the CPU), "cuda" or "cpu"
    device: str = "auto"
    # The task (countdown_rl.tasks' registry) and its options: Countdown's puzzles (``puzzles``) by default; another
    # task with a generator and demonstrations only with a real model (countdown_rl.demo.task_rows), whose rows are
    # ``puzzles``' counts of the task's generated rows
    task: str = "countdown"
    task_options: tuple[str, ...] = ()
    # Another task's transfer setting: its options for ``num_transfer`` rows kept out of training (e.g. a harder level
    # of a trained dataset), scored by every model at ``transfer_budgets``; () with Countdown (its reference puzzles)
    transfer_options: tuple[str, ...] = ()


# DemoConfig fields renamed to the recipe's (TRL's) names, old -> new: a record written before the rename (a
# benchmark's ``asdict(config)``) still describes the same settings, so resuming its folder reuses its runs.
RENAMED_FIELDS = {"grpo_steps": "max_steps", "model": "model_name_or_path", "template": "prompt_template"}
# DemoConfig fields added since, with the value every record written before them meant (as JSON holds it).
ADDED_FIELDS = {"task": "countdown", "task_options": [], "transfer_options": []}


def with_current_field_names(config: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded ``asdict(DemoConfig)`` with its renamed fields under their current names (:data:`RENAMED_FIELDS`)
    and the fields added since at the value they had then (:data:`ADDED_FIELDS`).

    >>> with_current_field_names({"grpo_steps": 300, "seed": 0})
    {'max_steps': 300, 'seed': 0, 'task': 'countdown', 'task_options': [], 'transfer_options': []}
    """
    return {**{RENAMED_FIELDS.get(key, key): value for key, value in config.items()},
            **{key: value for key, value in ADDED_FIELDS.items() if key not in config}}


def quick_config(**overrides: Any) -> DemoConfig:
    """The ~1-minute smoke version: same pipeline, few steps and puzzles, no accuracy gain expected."""
    base = DemoConfig(
        puzzles=PuzzleSpec(num_sft=256, num_rl=64, num_eval=32),
        sft_steps=30,
        max_steps=4,
        prompts_per_step=4,
        num_generations=4,
        save_steps=2,
        eval_steps=2,
        in_training_eval=16,
        eval_batch_size=32,
        pass_k=4,
        expression_eval=16,
        quick=True,
    )
    return replace(base, **overrides)


def gpu_config(**overrides: Any) -> DemoConfig:
    """The full demo sized for one GPU (what ``--device cuda``, or ``auto`` on a machine with one, runs).

    Not yet measured on a GPU: chosen from the CPU demo's figures and the GPU profiles (benchmarks/results/gpu.md, "GPU
    profile" and "Prompt-once on a GPU"). The puzzles, SFT warm-up, learning rates and RL sampling (dynamic sampling at
    temperature 0.3) stay the CPU demo's, so the tables compare:

    - bf16 autocast for SFT and RL: the GPU computes bf16 natively (the profiles ran bf16 throughout);
    - 16 prompts x 8 samples a step, not 4: a GPU's decode step barely grows with the rows (64 sequences of a 1.7B
      model at 35 ms a step), so four times the completions cost little more a step;
    - 1,000 RL steps, not 500: the CPU demo's gain grew with training (300 steps: not significant at two seeds of
      three; 500: significant); 16 prompts a step make it 8 passes over the 2,000 RL puzzles;
    - rollouts through the compiled backend (static cache + ``torch.compile``): 3.5x plain ``generate`` on an H100 in
      isolation, after a first compile of about 40 s.
    """
    base = DemoConfig(device="cuda", bf16=True, sft_bf16=True, prompts_per_step=16, max_steps=1000, eval_batch_size=300)
    return replace(base, **overrides)


def placed(config: DemoConfig) -> tuple[DemoConfig, dict[str, Any]]:
    """``config`` as this machine runs it: ``device`` resolved (``auto``: CUDA when torch sees a GPU; ``cuda``
    without one refuses in one line); bf16 for SFT and RL on a GPU, and on a CPU ``bf16`` / ``sft_bf16`` kept only
    where it has bf16 kernels (:func:`countdown_rl.runs.device.choose_precision`). The demo's bf16 is its own
    default, not the user's: on a CPU without bf16 kernels it runs fp32, and the second value says so (``device``,
    ``rl`` and ``sft``: each stage's precision and why, for the log, the run record, demo_results.json and the
    printed table).

    >>> config, placement = placed(replace(quick_config(), device="cpu"))
    >>> config.device, placement["rl"]["summary"]
    ('cpu', 'fp32 on cpu')
    """
    from countdown_rl.runs.device import choose_precision

    device = resolve_device(config.device)
    on_gpu = device == "cuda"  # bf16 on a GPU whatever the CPU-measured wishes say
    rl, sft = choose_precision(device, config.bf16 or on_gpu), choose_precision(device, config.sft_bf16 or on_gpu)
    placement = {"device": device, "asked": config.device, "rl": rl.to_dict(), "sft": sft.to_dict()}
    return replace(config, device=device, bf16=rl.bf16, sft_bf16=sft.bf16), placement


def device_of(config: DemoConfig) -> str:
    """``config.device`` as given when it names one (``cuda``, ``cpu``: what the recipe says), ``auto`` resolved.

    >>> device_of(replace(quick_config(), device="cuda"))
    'cuda'
    """
    return config.device if config.device in ("cuda", "cpu") else resolve_device(config.device)


def placement_line(placement: Mapping[str, Any]) -> str:
    """One line for the log and the printed results: the device, each training stage's precision, and why not bf16.

    >>> off = {"bf16": False, "why": "this CPU has no bf16 kernels"}
    >>> placement_line({"device": "cpu", "rl": off, "sft": {"bf16": False, "why": None}})
    'on cpu: RL fp32, SFT fp32 (bf16 off: this CPU has no bf16 kernels)'
    """
    stages = [placement["rl"], placement["sft"]]
    names = ["bf16" if stage["bf16"] else "fp32" for stage in stages]
    whys = list(dict.fromkeys(stage["why"] for stage in stages if stage.get("why")))
    return f"on {placement['device']}: RL {names[0]}, SFT {names[1]}" + "".join(f" (bf16 off: {why})" for why in whys)


# --------------------------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------------------------


def setup_environment(num_threads: int) -> None:
    """Offline Hub, no telemetry, and a thread setting that survives a busy machine.

    ``OMP_WAIT_POLICY=PASSIVE`` only works if set before torch loads its OpenMP runtime: with the default
    spinning threads, a 2-thread run sharing 2 cores with another process was 5-10x slower (measured).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import datasets
    import torch
    from transformers.utils import logging as hf_logging

    torch.set_num_threads(max(1, min(num_threads, os.cpu_count() or 1)))
    # The demo prints one line per stage and per few steps; the libraries' bars (tokenizing, loading, saving
    # weights) would bury them.
    datasets.disable_progress_bars()
    hf_logging.disable_progress_bar()


def read_json_or_none(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def stage_done(path: Path, stage: Mapping[str, Any]) -> bool:
    """Whether ``path`` holds a finished stage made with exactly these settings (its run record says so)."""
    try:
        record = read_run_record(path)
    except ValueError:
        return False
    return (record is not None and record.source == DEMO_SOURCE and record.status.get("state") == "finished"
            and record.extra.get("demo_stage") == json.loads(json.dumps(stage)))


def finish_stage(path: Path, stage: Mapping[str, Any], *, model: str, dataset: str) -> None:
    """Mark a stage folder finished: its run record (the same ``run_info.json`` as every run), written last."""
    write_run_record(path, RunRecord(algorithm=str(stage["stage"]), model=model, dataset=dataset, source=DEMO_SOURCE,
                                     status={"state": "finished", "step": None, "message": None},
                                     extra={"demo_stage": dict(stage)}))


def print_header(text: str) -> None:
    print(f"\n== {text} ==", flush=True)


# --------------------------------------------------------------------------------------------------------------
# Stages
# --------------------------------------------------------------------------------------------------------------


def demo_puzzles(spec: PuzzleSpec, seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    """``{"sft": [...], "rl": [...], "eval": [...]}``: disjoint lists of ``{"nums", "target"}``, fixed per seed.

    One generator call gives distinct puzzles, so no ``(target, sorted nums)`` is both trained on and evaluated.
    ``balanced``: the generator draws the three parts as its ``parts``, each holding the blind cap on its own (a
    random split of a capped pool does not: one template held 8.7% of a 300-puzzle held-out part). ``expression``:
    ``data.split_rows`` (dedupe + seeded hold-out) takes the eval set, as its figures were measured.
    """
    from countdown_rl.data.splits import split_rows
    from countdown_rl.tasks import get_task
    from countdown_rl.tasks.countdown.puzzles import generate_countdown

    total = spec.num_sft + spec.num_rl + spec.num_eval
    if spec.sampling == "balanced":
        pool = generate_countdown(total, seed=seed, parts=(spec.num_sft, spec.num_rl, spec.num_eval),
                                  **spec.generator_kwargs())
        cut = [spec.num_sft, spec.num_sft + spec.num_rl]
        return {"sft": pool[: cut[0]], "rl": pool[cut[0]: cut[1]], "eval": pool[cut[1]:]}
    pool = generate_countdown(total, seed=seed, **spec.generator_kwargs())
    train, test, _ = split_rows(get_task("countdown"), pool, test_size=spec.num_eval, seed=seed)
    train_rows = [{"nums": list(r["nums"]), "target": int(r["target"])} for r in train]
    return {
        "sft": train_rows[: spec.num_sft],
        "rl": train_rows[spec.num_sft:],
        "eval": [{"nums": list(r["nums"]), "target": int(r["target"])} for r in test],
    }


def unseen_puzzles(count: int, seed: int, generator_kwargs: Mapping[str, Any],
                   seen: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``count`` generated puzzles (``generate_countdown(..., seed=seed, **generator_kwargs)``), none of them in
    ``seen`` (the same target and numbers); a ValueError when fewer are left.

    >>> shape = {"min_numbers": 3, "max_numbers": 3, "max_number": 9, "max_target": 20}
    >>> first = unseen_puzzles(4, 0, shape, [])
    >>> [p in first for p in unseen_puzzles(4, 0, shape, first[:2])]
    [False, False, False, False]
    """
    from countdown_rl.tasks.countdown.puzzles import generate_countdown

    if count <= 0:
        return []
    known = {(int(p["target"]), tuple(sorted(p["nums"]))) for p in seen}
    pool = generate_countdown(2 * count + 16, seed=seed, **generator_kwargs)  # more than needed: some were seen
    kept = [{"nums": list(p["nums"]), "target": int(p["target"])} for p in pool
            if (int(p["target"]), tuple(sorted(p["nums"]))) not in known]
    if len(kept) < count:
        raise ValueError(f"only {len(kept)} of {len(pool)} generated puzzles are not already used, {count} wanted")
    return kept[:count]


def expression_spec(config: DemoConfig) -> PuzzleSpec:
    """The demo's puzzle shape drawn from the expression pool (:data:`DemoConfig.expression_eval`'s puzzles)."""
    return replace(config.puzzles, sampling="expression")


def expression_puzzles(config: DemoConfig, puzzles: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """``config.expression_eval`` puzzles of the demo's shape from the expression pool, none in any of the demo's
    parts (``puzzles``), fixed per seed; none when the demo's own puzzles are not balanced."""
    if config.puzzles.sampling != "balanced":
        return []
    shape = expression_spec(config).generator_kwargs()
    return unseen_puzzles(config.expression_eval, config.seed + EXPRESSION_SEED, shape,
                          [p for part in ("sft", "rl", "eval") for p in puzzles[part]])


def trace_examples(puzzles: Sequence[Mapping[str, Any]], *, trace: str = "solver", template: str = "r1_zero",
                   min_failed: int = 0, max_failed: int = 2, seed: int = 0) -> list[dict[str, Any]]:
    """``{"prompt", "completion"}`` per puzzle: the template's prompt and the puzzle's solver (or search) trace,
    opening ``<think>`` itself unless the prompt ends with it (r1_zero).

    >>> trace_examples([{"nums": [2, 3], "target": 6}], template="chat")[0]["completion"]
    '<think>2 * 3 = 6</think> <answer>2 * 3</answer>'
    """
    from countdown_rl.tasks.countdown.prompts import build_prompt
    from countdown_rl.tasks.countdown.puzzles import search_trace, solver_trace

    if trace not in TRACES:
        raise ValueError(f"trace must be one of {TRACES}, got {trace!r}")
    open_think = template != "r1_zero"  # only the r1_zero prompt ends with an open <think>

    def completion(p: Mapping[str, Any]) -> str:
        if trace == "search":
            return search_trace(p["nums"], p["target"], min_failed=min_failed, max_failed=max_failed, seed=seed,
                                open_think=open_think)
        return solver_trace(p["nums"], p["target"], open_think=open_think)

    return [{"prompt": build_prompt(p["nums"], p["target"], template), "completion": completion(p)} for p in puzzles]


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
    ``bf16``).
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

    >>> rl_recipe(quick_config(), "sft", "grpo", num_eval=32)["per_device_train_batch_size"]
    16
    """
    from countdown_rl.tasks import task_class

    batch = config.prompts_per_step * config.num_generations
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
        "per_device_train_batch_size": batch, "num_generations": config.num_generations,
        "gradient_accumulation_steps": 1, "num_iterations": 1,
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
        "use_cpu": device_of(config) == "cpu", "bf16": config.bf16, "gradient_checkpointing": False,
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


def prepare_run_dir(run: Path, resume: bool) -> None:
    """Without --resume, clear a previous demo run (its checkpoints would otherwise be resumed later);
    refuse to touch a non-empty folder that this command did not write."""
    if resume or not run.exists():
        return
    try:
        record = read_run_record(run)
    except ValueError:
        record = None
    if record is not None and record.source == DEMO_SOURCE:
        print(f"removing the previous run in {run} (pass --resume to continue it instead)")
        shutil.rmtree(run)
    elif any(run.iterdir()):
        raise ValueError(f"{run} exists and is not a {PROG} run directory; choose another --output_dir")


def paired_test(before_dir: str | Path, after_dir: str | Path, budget: int,
                columns: Sequence[str] = ("nums", "target")) -> dict[str, Any]:
    """The exact McNemar test of the model evaluated into ``after_dir`` against the one in ``before_dir`` on the same
    rows (the same ``columns``: the task's, Countdown's by default) at ``budget`` (``only_a``: rows only the after
    model solved)."""
    from countdown_rl.evaluation.eval_files import read_samples
    from countdown_rl.evaluation.paired import paired_counts

    before, after = read_samples(before_dir, budget), read_samples(after_dir, budget)
    if [[r.get(c) for c in columns] for r in before] != [[r.get(c) for c in columns] for r in after]:
        raise ValueError(f"{before_dir} and {after_dir} hold different puzzles: no paired test")
    return paired_counts([r["outcome"] == "correct" for r in after], [r["outcome"] == "correct" for r in before])


def blind_rule_of(eval_dir: str | Path) -> dict[str, Any] | None:
    """The best target-blind rule on an evaluation's puzzles, as its ``eval.json`` holds it (None: not recorded)."""
    from countdown_rl.evaluation.eval_files import read_eval

    return read_eval(eval_dir)["blind_rule"]


def blind_rule_by_model(blinds: Mapping[str, Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """``demo_results.json``'s ``blind_rule``: the rule on the held-out puzzles (the same for every model) and each
    model's correct answers split by whether the rule solves the puzzle (``by_model``: name -> its ``by_budget``).

    >>> split = {"rule": "a+b+c", "accuracy": 0.1, "solved": 1, "total": 10, "by_budget": {"8": {"correct_on_rest": 2}}}
    >>> blind_rule_by_model({"sft": split, "trained": None})["by_model"]
    {'sft': {'8': {'correct_on_rest': 2}}, 'trained': None}
    """
    known = [blind for blind in blinds.values() if blind]
    if not known:
        return None
    common = {key: value for key, value in known[0].items() if key != "by_budget"}
    if any({key: value for key, value in blind.items() if key != "by_budget"} != common for blind in known):
        raise ValueError("the evaluations' target-blind rules differ: they were not on the same puzzles")
    return {**common, "by_model": {name: blind["by_budget"] if blind else None for name, blind in blinds.items()}}


def beyond_rule(blind: Mapping[str, Any] | None, budget: int) -> str:
    """A table cell: correct answers at ``budget`` on the puzzles the blind rule does not solve."""
    from countdown_rl.evaluation.scoring import correct_beyond_rule

    count = correct_beyond_rule(blind, budget)
    return "—" if count is None else str(count)


def blind_row(blind: Mapping[str, Any] | None, width: int) -> list[list[str]]:
    """The best target-blind rule as the first row of a ``width``-column demo table (none if not recorded)."""
    if blind is None:
        return []
    from countdown_rl.files import format_percent

    row = [f"best target-blind rule ({blind['rule']})", format_percent(blind["accuracy"]), "—", "0"]
    return [row + ["—"] * (width - len(row))]


def beyond_header(blind: Mapping[str, Any] | None) -> str:
    """The header of :func:`beyond_rule`'s column: how many puzzles the rule misses."""
    others = "?" if blind is None else blind["total"] - blind["solved"]
    return f"correct of the {others} the rule misses"


# The length columns: the Dr.GRPO paper's length-bias signature (GRPO's per-sequence mean lets wrong answers grow
# longer) is read from the mean length of the correct and of the incorrect completions, before and after RL.
TOKEN_HEADERS = ("mean completion tokens", "tokens: correct / incorrect")


def token_cells(result) -> list[str]:
    """The :data:`TOKEN_HEADERS` cells of a ``BudgetResult``: the mean completion length over all completions, then
    over the correct and over the incorrect ones (``—`` where there are none).

    >>> from types import SimpleNamespace
    >>> token_cells(SimpleNamespace(mean_tokens=20.25, mean_tokens_correct=14.0, mean_tokens_incorrect=None))
    ['20.2', '14.0 / —']
    """
    from countdown_rl.files import format_number

    return [format_number(result.mean_tokens),
            f"{format_number(result.mean_tokens_correct)} / {format_number(result.mean_tokens_incorrect)}"]


def pass_header(sampled) -> list[str]:
    """The pass@k column's header for a sampled ``BudgetResult`` (none when there is none)."""
    if sampled is None:
        return []
    return [f"pass@1 / pass@{sampled.num_samples} (sampled)"]


def pass_cell(sampled) -> list[str]:
    """``pass@1 / pass@k`` of a sampled ``BudgetResult`` (none when there is none).

    >>> from types import SimpleNamespace
    >>> pass_cell(SimpleNamespace(num_samples=16, pass_at_k={1: 0.139, 2: 0.2, 16: 0.717}))
    ['13.9% / 71.7%']
    """
    from countdown_rl.files import format_percent

    if sampled is None:
        return []
    return [f"{format_percent(sampled.pass_at_k[1])} / {format_percent(sampled.pass_at_k[sampled.num_samples])}"]


def results_table(before, after, algorithm: str, max_steps: int, blind: Mapping[str, Any] | None = None,
                  blind_after: Mapping[str, Any] | None = None, sampled: Sequence[Any] = (None, None)) -> str:
    """The before/after Markdown table printed at the end (and stored in demo_results.json), under the best
    target-blind rule on the same puzzles (``blind`` and ``blind_after``: the two evaluations' ``blind_rule``);
    ``sampled``: the two models' sampled evaluations (pass@k), or None."""
    from countdown_rl.files import format_percent, render_markdown_table

    name = display_name(algorithm)
    headers = ["model", "accuracy", "correct / partial / failed", beyond_header(blind), *TOKEN_HEADERS,
               *pass_header(sampled[0])]
    rows = blind_row(blind, len(headers)) + [
        [label, format_percent(r.accuracy), f"{r.correct} / {r.partial} / {r.failed}",
         beyond_rule(split, r.max_tokens), *token_cells(r), *pass_cell(sample)]
        for label, r, split, sample in ((f"SFT warm-up (before {name})", before, blind, sampled[0]),
                                        (f"after {name} ({max_steps} steps)", after, blind_after, sampled[1]))
    ]
    return render_markdown_table(headers, rows)


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
            use_cpu=config.device == "cpu",
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
