"""Memory a finished stage freed, given back to the system between a run's stages: :func:`release_memory`.

1. :func:`drop_import_tracebacks`: an exception that a module caught while it was imported and keeps as a global
   (vLLM keeps ``torchcodec``'s ImportError; TRL's GRPO trainer imports vLLM) keeps its traceback, whose frames'
   ``f_back`` chain reaches every frame that was on the stack during that import, with their locals, for the rest
   of the process. When the trainer's first import happens under ``train_grpo`` and ``run_recipe``
   (:mod:`countdown_rl.training.pipeline`), their frames would keep the trained model, the trainer and its optimiser
   alive after the run is dropped; the pipeline drops those tracebacks when it returns, and so does
   :func:`release_memory`.
2. ``gc.collect()`` frees what only reference cycles still hold (a trainer, its model and optimiser).
3. glibc's ``malloc_trim(0)`` returns the free pages inside the heap to the system. glibc serves a large block from
   the heap once its mmap threshold has risen (it does after the first large block is freed) and keeps the block's
   pages when it is freed, so a process would hold its largest stage's peak for the rest of its life (seen on the
   SmolLM2 demo: 5 GB held after the format warm-up and 15 GB after the RL stage, through the evaluations after
   them; tests/runs/test_memory.py measures the trim on a fresh process).
4. Without glibc (macOS, musl): the collection alone.

>>> release_memory() in (True, False)
True
"""

from __future__ import annotations

import ctypes
import functools
import gc
import sys
import types

__all__ = ["drop_import_tracebacks", "release_memory"]


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception it was raised from (``__cause__``) or while handling (``__context__``), once."""
    found, todo = {}, [exc]
    while todo:
        exc = todo.pop()
        if exc is not None and id(exc) not in found:
            found[id(exc)] = exc
            todo += [exc.__cause__, exc.__context__]
    return list(found.values())


def drop_import_tracebacks() -> int:
    """Drop the traceback of every exception a module caught in its own body (at import) and keeps as a global, and
    of the exceptions chained to it; the number of globals changed. The exception (type, message, chain) stays;
    only its stack goes, which otherwise keeps every frame of the importing call stack alive (module docstring, 1).
    """
    dropped = 0
    for module in list(sys.modules.values()):
        if not issubclass(type(module), types.ModuleType):  # None, or a stand-in object: no globals to look at
            continue
        namespace = vars(module)
        for value in list(namespace.values()):
            if not issubclass(type(value), BaseException):
                continue
            tb = value.__traceback__
            # caught by the module's body (its import), not by a function of it at run time
            if tb is None or tb.tb_frame.f_globals is not namespace or tb.tb_frame.f_code.co_name != "<module>":
                continue
            for exc in _chain(value):
                exc.__traceback__ = None
            dropped += 1
    return dropped


@functools.cache
def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim  # the process's own C library: no search for it on disk
    except AttributeError:  # not glibc's
        return None


def release_memory() -> bool:
    """Drop import-time tracebacks, collect garbage, then hand the heap's free pages back to the system where glibc
    can; True where it could."""
    drop_import_tracebacks()
    gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
