"""A work bound that holds in every thread and process: :func:`run_with_deadline` (CPython).

Signal alarms (``signal.setitimer``) run only on the main thread, and a reward is also called from worker threads
(a reward server, an async reward, a dataloader worker). So the bound is kept by one watchdog thread per process:

1. :func:`run_with_deadline` registers the calling thread with its deadline (a heap ordered by time) and runs the
   work in that thread: no process start, no pickling, the caller's caches stay warm.
2. When a deadline passes, the watchdog raises :class:`DeadlineExceeded` in that thread
   (``PyThreadState_SetAsyncExc``), the way a signal handler would on the main thread: at the next bytecode
   boundary, a ``BaseException``, so an ``except Exception`` in a library cannot swallow it. It raises again every
   ``REFIRE_SECONDS`` until the work is over (an exception lost in a garbage-collector callback is raised again).
3. On the way out the registration is closed under the watchdog's lock and a raise that was not yet delivered is
   cleared, so nothing reaches the caller after :func:`run_with_deadline` returns. A forked child gets a fresh
   watchdog.

What it cannot do: stop one long call inside C code (a huge integer power, a regular expression); the callers
screen such inputs out before the work starts (``countdown_rl.tasks.math.screening.screen_problem``).
"""

from __future__ import annotations

import ctypes
import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["DeadlineExceeded", "REFIRE_SECONDS", "run_with_deadline"]

REFIRE_SECONDS = 0.05
"""After a deadline, the watchdog raises again this often until the work returns."""


class DeadlineExceeded(BaseException):
    """Raised inside work that ran past its deadline (a BaseException: ``except Exception`` does not catch it)."""


# Prototypes of our own (not argtypes set on ctypes.pythonapi's shared function object, which others may use).
_set_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)
_clear_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)


class _Entry:
    __slots__ = ("thread_id", "done", "fired")

    def __init__(self, thread_id: int):
        self.thread_id, self.done, self.fired = thread_id, False, False


class _Watchdog:
    """The per-process state: a lock, a heap of (when, sequence, entry) and the thread that fires them."""

    def __init__(self) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.heap: list[tuple[float, int, _Entry]] = []
        self.counter = itertools.count()
        self.thread: threading.Thread | None = None

    def add(self, entry: _Entry, seconds: float) -> None:
        with self.cond:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._watch, name="countdown-rl-deadline", daemon=True)
                self.thread.start()
            heapq.heappush(self.heap, (time.monotonic() + seconds, next(self.counter), entry))
            if self.heap[0][2] is entry:  # the earliest deadline now: wake the watchdog to wait for it instead
                self.cond.notify()

    def finish(self, entry: _Entry) -> None:
        with self.cond:
            entry.done = True  # from here on the watchdog leaves this entry alone
            if entry.fired:
                _clear_async_exc(entry.thread_id, None)  # a raise not yet delivered must not escape the caller

    def _watch(self) -> None:
        with self.cond:
            while True:
                while self.heap and self.heap[0][2].done:
                    heapq.heappop(self.heap)
                if not self.heap:
                    self.cond.wait()
                    continue
                when, _, entry = self.heap[0]
                now = time.monotonic()
                if when > now:
                    self.cond.wait(when - now)
                    continue
                heapq.heappop(self.heap)
                entry.fired = True
                _set_async_exc(entry.thread_id, DeadlineExceeded)
                heapq.heappush(self.heap, (now + REFIRE_SECONDS, next(self.counter), entry))


_watchdog = _Watchdog()


def _after_fork_in_child() -> None:
    global _watchdog
    _watchdog = _Watchdog()  # the parent's lock may have been held at the fork, and its thread is gone


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def run_with_deadline(func: Callable[..., Any], seconds: float, *args: Any) -> tuple[bool, Any]:
    """``(True, func(*args))``, or ``(False, None)`` when the call ran past ``seconds`` (<= 0: no limit).

    Works in any thread; the work runs in the calling thread. An exception of ``func`` propagates.

    >>> run_with_deadline(sum, 1.0, [1, 2, 3])
    (True, 6)
    >>> run_with_deadline(lambda: [0 for _ in iter(int, 1)], 0.05)  # an endless loop, stopped
    (False, None)
    """
    if seconds <= 0:
        return True, func(*args)
    entry = _Entry(threading.get_ident())
    watchdog = _watchdog
    ok, result = False, None
    try:
        watchdog.add(entry, seconds)
        result, ok = func(*args), True
    except DeadlineExceeded:
        pass
    finally:
        while True:  # a raise delivered while closing is caught here and the closing repeated
            try:
                watchdog.finish(entry)
                break
            except DeadlineExceeded:
                continue
    if entry.fired:
        return False, None  # it ran past its deadline, whether or not the raise landed in time
    return ok, result
