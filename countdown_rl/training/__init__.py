"""Training: the recipe, the trainer subclass and the one pipeline every caller trains with.

- :mod:`.recipe`: the recipe's script arguments, the strict parser (``--config`` + overrides) and its checks.
- :mod:`.config`: ``CountdownGRPOConfig``: TRL's ``GRPOConfig`` plus the algorithm, backend and budget keys.
- :mod:`.trainer`: ``CountdownGRPOTrainer``: TRL's ``GRPOTrainer`` at its advantage and loss-reduction hooks (the
  maths is in :mod:`countdown_rl.algorithms`).
- :mod:`.sampling`: the training rows' order, each epoch's the same whether the run resumed or not.
- :mod:`.shared_prompt`: prompt-once log-probs (each distinct prompt of a micro-batch through the model once).
- :mod:`.dynamic_sampling`: DAPO's group filter (extra generation rounds until a step's groups differ in outcome).
- :mod:`.rollouts`: the generation backends adapted to the trainer (a rollout generator, vLLM's CPU weight sync).
- :mod:`.evaluation`: the trainer's held-out evaluation (``CountdownGRPOTrainer.evaluate_task``).
- :mod:`.reliability`: atomic checkpoints and the non-finite guard on the trainer class; training under signals.
- :mod:`.pipeline`: ``plan_recipe`` / ``run_recipe`` (a recipe end to end: data, model, trainer, final evaluation,
  card, push, merge) over ``train_grpo``, the one training pipeline (train, the demos, the benchmarks, sweeps).
- :mod:`.warmup`: the SFT warm-up on a task's demonstrations.

The one seam with TRL: every override of private TRL or transformers code and every read or write of a private
attribute of their objects lives in this subpackage (``tests/training/test_trl_pin.py`` pins each name).

May import: everything below it (files, tasks, algorithms, data, runs, generation, models, evaluation). Never
sweeps, the demo
or a command.
"""
