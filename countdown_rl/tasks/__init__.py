"""Tasks behind one interface (:class:`countdown_rl.tasks.base.Task`), chosen by name (the recipe key ``task``).

The registry maps a name to ``package:Class``; a task package is imported only when asked for, so the core and the
CLI's ``--help`` stay cheap. Adding a task is three steps:

1. A package ``countdown_rl/tasks/<name>/`` shaped like the others: ``__init__`` (the :class:`Task` subclass and
   its options), ``verifier`` (extract and judge one completion), ``rewards`` (TRL reward functions by recipe
   name), ``prompts`` (templates) and ``problems`` (offline rows; Countdown's is ``puzzles``, with its solver).
   What several tasks need lives here once: :mod:`.base` (the interface, answer tags, the batch loop of a reward,
   option binding, row messages), :mod:`.extraction` (boxes, numbers, plain arithmetic), :mod:`.deadline`.
2. One line in :data:`TASKS`.
3. A recipe under ``recipes/<name>/``.

Tasks are the lowest layer with ``algorithms``: a task package imports the standard library and the shared modules
here, nothing else of the package (MATH imports math-verify, lazily, on its first comparison; reasoning_gym imports
reasoning-gym, an optional extra, when the task is made).

>>> sorted(TASKS)
['countdown', 'format_copy', 'gsm8k', 'math', 'reasoning_gym']
>>> get_task("countdown").name
'countdown'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import import_module
from typing import Any

from countdown_rl.tasks.base import Outcome, Task, Verdict

__all__ = ["DEFAULT_TASK", "TASKS", "Outcome", "Task", "Verdict", "get_task", "task_class"]

DEFAULT_TASK = "countdown"
TASKS: dict[str, str] = {
    "countdown": "countdown_rl.tasks.countdown:CountdownTask",
    "gsm8k": "countdown_rl.tasks.gsm8k:GSM8KTask",
    "math": "countdown_rl.tasks.math:MathTask",
    "format_copy": "countdown_rl.tasks.format_copy:FormatCopyTask",
    "reasoning_gym": "countdown_rl.tasks.reasoning_gym:ReasoningGymTask",
}
"""Task name -> ``module:Class`` of its :class:`Task` subclass."""


def task_class(name: str) -> type[Task]:
    """The :class:`Task` subclass registered as ``name``; an unknown name is a one-line error."""
    if not isinstance(name, str) or name not in TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of {sorted(TASKS)}")
    module, _, cls = TASKS[name].partition(":")
    return getattr(import_module(module), cls)


def get_task(name: str = DEFAULT_TASK, options: Sequence[str] | Mapping[str, Any] | None = None) -> Task:
    """The task ``name`` with its options (``["key=value", ...]`` or a mapping) parsed and checked."""
    return task_class(name)(options)
