"""The demo's settings: what it runs (:class:`DemoConfig`, :class:`PuzzleSpec`), its presets, and where it runs.

- :class:`DemoConfig`'s defaults are the full CPU demo; :func:`quick_config` is the ~1-minute smoke version,
  :func:`gpu_config` the full demo sized for one GPU.
- :func:`placed`: a config as this machine runs it (the device resolved, bf16 kept only where the device computes
  it), with the placement :func:`placement_line` prints; :func:`device_of`: the device a recipe names.
- :func:`with_current_field_names`: a config recorded before a field was renamed or added (:data:`RENAMED_FIELDS`,
  :data:`ADDED_FIELDS`) under today's names, so a benchmark's old folder still resumes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from countdown_rl.runs.device import resolve_device


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
    # Completions one training forward and backward holds (TRL's per_device_train_batch_size): the step's
    # prompts_per_step x num_generations completions go through in micro-batches of this many, their gradients
    # accumulated (the same update up to float rounding; a multiple of num_generations, so groups stay whole). Its
    # activations and logits are most of RL's memory on a real model. None: the whole step at once.
    per_device_train_batch_size: int | None = None
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
    # The warm-up's and RL's backward passes recompute each layer's activations instead of keeping them (transformers'
    # gradient checkpointing), for a second forward's time. The warm-up's gradients stay the same bit for bit, RL's
    # differ in the last digits (so off by default: the measured figures were made without it); the SmolLM2 demo on
    # reasoning_gym peaks at 12.1 GB with it, 16.4 without (benchmarks/results/real-model.md, "... memory, and a
    # repeat of seed 12")
    gradient_checkpointing: bool = False
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
