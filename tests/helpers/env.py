"""The environment of a test's subprocess: offline (no Hub, no telemetry), one thread, this checkout importable, and
Python's fault handler on (a process that dies of a signal prints its threads' Python stacks); a failed process's
output for an assertion message, its crash dumps first; a process that hangs made to print its stacks too."""

import contextlib
import os
import re
import signal
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository


def write_cpu_accelerate_config(path: Path) -> Path:
    """An ``accelerate launch --config_file`` for one process on the CPU, at ``path``."""
    path.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\nnum_processes: 1\nnum_machines: 1\n"
                    "use_cpu: true\nmixed_precision: 'no'\ndynamo_backend: 'no'\n")
    return path


def offline_env(**extra: str) -> dict[str, str]:
    """``os.environ`` plus no Hub, no telemetry, one OpenMP thread, quiet tokenizers, the fault handler and
    ``PYTHONPATH`` on this checkout; ``extra`` on top."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false",
            "PYTHONFAULTHANDLER": "1", **extra}


# What a process that died leaves in its output: Python's fault handler's dump (its first line, then each thread's
# stack, up to the list of extension modules), the launchers' own words for a rank killed by a signal, and C++'s
# words for an exception no thread caught (a native library's thread that aborts the process: what it threw).
DUMP_START = "Fatal Python error: "
DUMP_END = "Extension modules: "
SIGNAL_LINE = re.compile(r"Signal \d+ \(SIG\w+\) received|exitcode\s*:\s*-\d+|died with <Signals\.SIG\w+|"
                         r"terminated by signal|Segmentation fault|terminate called|^\s*what\(\): ")


def crash_report(output: str, limit: int = 3000) -> str:
    """``output`` for an assertion message: every fault-handler dump whole and each line that names a signal death,
    then the last ``limit`` characters. A crashed rank's stack is then in the message however long the other
    ranks' output after it (a gloo error, the launcher's summary); an uncaught C++ exception's two lines too.

    >>> report = crash_report("a\\nFatal Python error: Segmentation fault\\n\\n  File \\"x.py\\", line 3\\n"
    ...                       "Extension modules: numpy (total: 1)\\n" + "later\\n" * 2000, limit=12)
    >>> report.splitlines()[:3]
    ['crash: Fatal Python error: Segmentation fault', 'crash: ', 'crash:   File "x.py", line 3']
    >>> crash_report("terminate called after throwing an instance of 'E'\\n  what():  closed\\nb", limit=1).split("\\n")
    ["crash: terminate called after throwing an instance of 'E'", 'crash:   what():  closed', '...', 'b']
    """
    found, inside = [], False
    for line in output.splitlines():
        if DUMP_START in line:  # from where it starts: a progress bar may hold the line's start
            inside, line = True, line[line.index(DUMP_START):]
        if inside or SIGNAL_LINE.search(line):
            found.append(f"crash: {line}")
        if inside and line.startswith(DUMP_END):
            inside = False
    head = "\n".join(found[:400])
    return f"{head}\n...\n{output[-limit:]}" if head else output[-limit:]


def hang_guard(seconds: float) -> float:
    """A subprocess's timeout: ``seconds`` (what the run takes alone on 2 cores, with room) times 3. A test's timeout
    guards against a hang, it is no speed check, and the tests run in two worker processes (pytest-xdist): a run may
    share its core with the other worker's multi-process test (a budget-curriculum study that takes 200 s alone took
    over 400 s beside the SLURM tests' six training processes)."""
    return 3 * seconds


def stat_fields(stat: Path) -> list[str]:
    """A ``/proc/<pid>/stat`` file's fields after "pid (name)": the state, then the parent's pid, ..."""
    return stat.read_text().rsplit(")", 1)[1].split()


def descendants(pid: int) -> list[int]:
    """Every process ``pid`` started, and theirs (from ``/proc``), parents before children."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat_fields(stat)[1])
        except (OSError, IndexError, ValueError):  # ended meanwhile
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(0), []):
            found.append(child)
            todo.append(child)
    return found


def ended(pid: int) -> bool:
    """Whether process ``pid`` has ended (gone, or a zombie its parent has not reaped): what it wrote is written."""
    try:
        return stat_fields(Path(f"/proc/{pid}/stat"))[0] == "Z"
    except (OSError, IndexError):
        return True


def abort_one_by_one(tree: list[int], wait: float = 10.0) -> None:
    """SIGABRT to each process of ``tree``, the last first, each once the one before has ended (or ``wait`` seconds
    passed): the processes share the pipes, and fault handlers dumping at once interleave their stacks
    character by character, which leaves none readable."""
    for pid in reversed(tree):  # the ranks before their launcher, which might otherwise kill them first
        with contextlib.suppress(ProcessLookupError):  # ended meanwhile
            os.kill(pid, signal.SIGABRT)
        deadline = time.monotonic() + wait
        while not ended(pid) and time.monotonic() < deadline:
            time.sleep(0.02)


def run_or_dump(command: list[str], timeout: float, **popen) -> subprocess.CompletedProcess:
    """``subprocess.run(command, capture_output=True, text=True, timeout=timeout, **popen)``, except for a process that
    is still running at ``timeout``: it and every process it started get SIGABRT one after the other
    (:func:`abort_one_by_one`), on which Python's fault handler (``PYTHONFAULTHANDLER``, :func:`offline_env`) prints
    each thread's stack, then SIGKILL; an AssertionError then carries those stacks (:func:`crash_report`). A hung rank
    thus says where it waits, as a crashed one does."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            tree = [process.pid, *descendants(process.pid)]
            abort_one_by_one(tree)
            try:
                out, err = process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                for pid in tree:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                out, err = process.communicate()
            raise AssertionError(f"still running after {timeout:.0f} s, so each of its {len(tree)} processes was sent "
                                 f"SIGABRT (its threads' stacks follow): {' '.join(command[:6])} ...\n"
                                 f"{crash_report(err + out, 6000)}") from None
    return subprocess.CompletedProcess(command, process.returncode, out, err)

