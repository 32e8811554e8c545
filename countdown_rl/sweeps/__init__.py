"""Sweeps: one spec, many training runs, locally or as a SLURM job array (``countdown-rl sweep``).

- :mod:`.spec`: the spec, its runs (named from their values), the checks, the sweep folder.
- :mod:`.runner`: one ``countdown-rl train`` process per run, resumable; the SLURM job array script.
- :mod:`.report`: the sweep's table, figures and paired tests.

May import: training (the recipe parser), evaluation, runs, files. Never the demo or a command.
"""
