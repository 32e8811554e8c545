"""The run directory and what keeps a long run safe.

- :mod:`.record`: ``run_info.json`` (:class:`~.record.RunRecord`, its one writer and one reader, the status), the
  run directory's fixed file names and the exit codes.
- :mod:`.guard`: the output-directory guard (``resume``, ``overwrite_output_dir``: never reuse a folder silently;
  one job per folder, by an exclusive lock).
- :mod:`.engine`: the distributed engine a launch asked for, what runs (the record's ``engine``), and the
  refusal when they would differ.
- :mod:`.device`: the device a run asked for (``auto``, ``cuda``, ``cpu``), whether this CPU has bf16 kernels, the
  precision that pays there, and what ran (the record's ``extra.precision``).
- :mod:`.checkpoints`: atomic checkpoint folders (staged, then published whole) and the newest complete one to
  resume from.
- :mod:`.preemption`: SIGTERM / SIGINT / SIGUSR1 save a checkpoint and stop.
- :mod:`.non_finite`: the check that keeps a NaN or infinite loss or gradient norm from the weights.
- :mod:`.memory`: the heap a finished stage freed, given back to the system before the next.
- :mod:`.reliability`: the checks and the plan ``countdown-rl train`` and the demo make before training.
- :mod:`.hub`: the Hub around a run: settings before pushing, the push itself.

May import: :mod:`countdown_rl.files`, the standard library, torch, accelerate, transformers, huggingface_hub.
Nothing else of ``countdown_rl``. No trainer subclass or override of TRL / transformers code lives here: the
trainer's side of checkpoints, the non-finite guard and signals is :mod:`countdown_rl.training.reliability`.
"""
