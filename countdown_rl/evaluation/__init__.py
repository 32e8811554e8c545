"""Evaluation: scoring completions with a task, the eval files, reports across runs and the model card.

- :mod:`.inputs`: what ``countdown-rl eval`` settles before loading: the backend, the held-out rows, the compiled
  generator.
- :mod:`.scoring`: generate for evaluation, score by the task, ``BudgetResult``, pass@k.
- :mod:`.sharding`: an evaluation set split over a job's processes (padded to one length under sharded weights).
- :mod:`.eval_files`: ``eval.json`` / ``eval.md`` / ``samples.jsonl``: their metadata, writing and reading.
- :mod:`.report`: tables and plots from run directories (``countdown-rl report``).
- :mod:`.readings`: second readings of saved completions: the answer format's rate, the answer read without the
  tags (so a gain cannot be the format alone), the most common gold answer as a blind baseline.
- :mod:`.paired`: two models on the same rows: the discordant counts and the exact McNemar p-value.
- :mod:`.model_card`: the run's ``README.md`` for the Hub.

May import: :mod:`countdown_rl.files`, the task registry (:mod:`countdown_rl.tasks`), :mod:`countdown_rl.algorithms`,
:mod:`countdown_rl.data`, :mod:`countdown_rl.generation`, :mod:`countdown_rl.runs`, :mod:`countdown_rl.models`.
Never training, sweeps, the demo or a command.
"""
