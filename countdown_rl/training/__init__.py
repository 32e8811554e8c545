"""Training: the recipe, the trainer subclass and the one pipeline every caller trains with.

- :mod:`.recipe`: the recipe's script arguments, the strict parser (``--config`` + overrides) and its checks.
- :mod:`.trainer`: ``CountdownGRPOConfig`` / ``CountdownGRPOTrainer``: TRL's ``GRPOTrainer`` at its advantage
  and loss-reduction hooks (the maths is in :mod:`countdown_rl.algorithms`).
- :mod:`.pipeline`: ``train_grpo``, the one training pipeline (train, the demo, the benchmarks, sweeps).
- :mod:`.warmup`: the SFT warm-up on a task's demonstrations.

May import: everything below it (files, tasks, algorithms, data, runs, generation, models, evaluation). Never
sweeps, the demo
or a command.
"""
