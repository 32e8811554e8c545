"""The offline CPU demo (``countdown-rl demo``) and the tiny model it and the tests start from.

- :mod:`.tiny`: a tiny byte-level BPE tokenizer and a random Qwen3, built offline and deterministically.
- :mod:`.config`: the demo's settings (``DemoConfig``, its quick and GPU presets) and where they run (device,
  precision).
- :mod:`.run_dir`: its folders: the files' names, the stage records that ``--resume`` reads, a previous run cleared.
- :mod:`.puzzles`: its puzzles (the seeded pool cut into SFT, RL and held-out parts, the expression pool's held-out
  ones) and the SFT traces written from them.
- :mod:`.table`: the before/after table, the McNemar test and the best target-blind rule under it.
- :mod:`.stages`: the demo's stages (warm start, zero-shot, RL, the final evaluation), reused by the benchmarks;
  the RL stage is a ``countdown-rl train`` recipe run by :func:`countdown_rl.training.pipeline.run_recipe`.
- :mod:`.pretrained`: the same stages on a real pretrained model (``countdown-rl demo --model_name_or_path``):
  chat prompts, rollouts through colocated vLLM where installed, the reference puzzles, the paired test.
- :mod:`.task_rows`: the real-model demo on another task than Countdown (``--task``): the task checked, its
  generated rows split into the warm-up's, RL's and the held-out part.
- :mod:`.seeds`: several demo runs at once (``--seeds``, several ``--algorithm``), one process each, and their
  combined table (each run's before/after, McNemar p and best target-blind rule; the mean and spread).

The demo is Countdown's: it may import :mod:`countdown_rl.tasks.countdown` besides everything training,
evaluation and runs offer. Never a command.
"""
