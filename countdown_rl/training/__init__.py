"""Training: the recipe, the data it names, the trainer subclass and the one pipeline every caller trains with.

- :mod:`.recipe`: the recipe's script arguments, the strict parser (``--config`` + overrides) and its checks.
- :mod:`.data`: ``DataArguments`` (the recipe's data keys, shared with ``countdown-rl eval``) and loading.
- :mod:`.trainer`: ``CountdownGRPOConfig`` / ``CountdownGRPOTrainer``: TRL's ``GRPOTrainer`` at its advantage
  and loss-reduction hooks (the maths is in :mod:`countdown_rl.algorithms`).
- :mod:`.pipeline`: ``train_grpo``, the one training pipeline (train, the demo, the benchmarks, sweeps).
- :mod:`.warmup`: the SFT warm-up on a task's demonstrations.

May import: everything below it (files, tasks, algorithms, generation, evaluation, runs). Never sweeps, the demo
or a command.
"""
