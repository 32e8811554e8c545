"""The run directory and what keeps a long run safe.

- :mod:`.record`: ``run_info.json`` (:class:`~.record.RunRecord`, its one writer and one reader, the status), the
  run directory's fixed file names and the exit codes.
- :mod:`.guard`: the output-directory guard (``resume``, ``overwrite_output_dir``: never reuse a folder silently;
  one job per folder, by an exclusive lock).
- :mod:`.engine`: the distributed engine a launch asked for, what runs (the record's ``engine``), and the
  refusal when they would differ.
- :mod:`.checkpoints`: atomic checkpoints and the newest complete one to resume from.
- :mod:`.preemption`: SIGTERM / SIGINT / SIGUSR1 save a checkpoint and stop.
- :mod:`.non_finite`: a NaN or infinite loss or gradient norm never reaches the weights.
- :mod:`.reliability`: the calls ``countdown-rl train`` and the demo make around ``trainer.train()``.
- :mod:`.hub`: the Hub around a run: settings before pushing, the push itself.

May import: :mod:`countdown_rl.files`, the standard library, torch, accelerate, transformers, huggingface_hub.
Nothing else of ``countdown_rl``: a trainer is handled as the object it is given.
"""
