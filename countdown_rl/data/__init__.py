"""Data: a task's rows from a source to prompted, deduped, split datasets (training, evaluation, the demo).

- :mod:`.arguments`: ``DataArguments`` (the recipe's data keys, shared by ``countdown-rl train`` and ``eval``) and
  ``DataInfo`` (the row counts of one preparation).
- :mod:`.loading`: source rows from a Hub id, a file, a folder or the task's generator, validated row by row.
- :mod:`.splits`: dedupe and the held-out split (seeded random, or a task's positional split).
- :mod:`.prepare`: the one call from a source to ``(train, test, info)`` with a ``prompt`` column.
- :mod:`.jsonl`: JSON Lines files.

May import: :mod:`countdown_rl.files`, the task registry (:mod:`countdown_rl.tasks`) and its interface,
:mod:`countdown_rl.algorithms` (the training rows' order), the standard library and ``datasets``. Never models,
runs, generation, evaluation, training, the demo or a command.
"""
