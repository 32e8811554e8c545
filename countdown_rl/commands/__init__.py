"""The command layer: one module per ``countdown-rl`` command, the only code that parses argv.

Each module has ``main(argv) -> int`` (the exit code) and reports bad input as one line through
:mod:`.one_line`. Every flag is ``--snake_case`` with the hyphenated spelling as an alias. A library module never
imports a command; a command may import anything in the library.

The commands: :mod:`.train`, :mod:`.evaluate` (``eval``), :mod:`.report`, :mod:`.sweep`, :mod:`.demo`,
:mod:`.warmup`, :mod:`.generate`, :mod:`.verify`, :mod:`.push`, :mod:`.serve`; each is a linear ``main`` over the
library (``train``'s is :func:`countdown_rl.training.pipeline.run_recipe`).
"""
