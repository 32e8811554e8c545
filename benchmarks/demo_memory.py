"""A command's memory and time by stage: the demo's peak per stage, every process of the run summed.

1. Runs the command given after ``--`` (e.g. the real-model demo) in its own process group, its output passed through
   and kept in ``--log``.
2. Every ``--interval`` seconds, sums the resident memory (RSS) of the command's process and all its descendants
   (vLLM's engine processes included), from /proc: what a laptop must hold at that moment.
3. A stage starts at each of the demo's stage headers (``== ... ==``); the table gives each stage's wall minutes and
   peak, then the whole run's. The same figures go to ``--json``.

    python benchmarks/demo_memory.py --log mem.log --json mem.json -- \\
        countdown-rl demo --model_name_or_path smollm2 --task reasoning_gym --seed 3

Linux only (/proc). RSS counts shared pages once per process: the sum can exceed what the machine holds in use.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")
STAGE_PREFIX = re.compile(r"^\[[^\]]*\] ")


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def tree_rss(root: int) -> int:
    """Bytes resident in ``root`` and all its descendants now."""
    tree, todo, total = _children(), [root], 0
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/statm", encoding="ascii") as f:
                total += int(f.read().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            pass
        todo.extend(tree.get(pid, []))
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between samples (default 2)")
    parser.add_argument("--log", type=Path, default=None, help="the command's output, kept here too")
    parser.add_argument("--json", type=Path, default=None, help="the stages' figures as JSON")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    stages = [{"stage": "start-up", "start": time.time(), "peak_bytes": 0}]
    lock = threading.Lock()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                            start_new_session=True)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            rss = tree_rss(proc.pid)
            with lock:
                stages[-1]["peak_bytes"] = max(stages[-1]["peak_bytes"], rss)
            done.wait(args.interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    log = args.log.open("w", encoding="utf-8") if args.log else None
    try:
        for line in proc.stdout:
            sys.stdout.write(line)
            if log:
                log.write(f"{time.strftime('%H:%M:%S')} {line}")
                log.flush()
            text = STAGE_PREFIX.sub("", line.strip())  # `--seeds` / several `--algorithm`: "[seed 1 grpo] == ... =="
            if text.startswith("== ") and text.endswith(" =="):
                prefix = line.strip()[:len(line.strip()) - len(text)]
                with lock:
                    stages.append({"stage": (prefix + text[3:-3])[:100], "start": time.time(),
                                   "peak_bytes": tree_rss(proc.pid)})
        code = proc.wait()
    except KeyboardInterrupt:
        os.killpg(proc.pid, signal.SIGTERM)
        code = proc.wait()
    finally:
        done.set()
        sampler.join()
        if log:
            log.close()
    end = time.time()
    for i, stage in enumerate(stages):
        stage["minutes"] = round(((stages[i + 1]["start"] if i + 1 < len(stages) else end) - stage["start"]) / 60, 2)
        stage["peak_gb"] = round(stage.pop("peak_bytes") / 1e9, 2)
        del stage["start"]
    whole = {"minutes": round(sum(s["minutes"] for s in stages), 1), "peak_gb": max(s["peak_gb"] for s in stages),
             "exit_code": code, "command": " ".join(command)}
    print("\n| stage | minutes | peak GB (all processes) |\n|---|---|---|")
    for stage in stages:
        print(f"| {stage['stage']} | {stage['minutes']:.1f} | {stage['peak_gb']:.1f} |")
    print(f"| **whole run** | **{whole['minutes']:.1f}** | **{whole['peak_gb']:.1f}** |")
    if args.json:
        args.json.write_text(json.dumps({"stages": stages, "whole": whole}, indent=1), encoding="utf-8")
    return code


if __name__ == "__main__":
    sys.exit(main())
