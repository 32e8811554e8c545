"""Reliability of long runs, measured with real processes and real signals: prints the table for
benchmarks/results/reliability.md.

Usage: python benchmarks/reliability.py [--out reliability.json] [--skip-invocations]

1. Baseline: the CPU smoke recipe (tiny Qwen3, 4 GRPO steps, a checkpoint every 2) runs uninterrupted in a
   subprocess (``tests/helpers/fault_run.py``, the dense toy reward).
2. Interruptions: the same run gets a signal during generation, backward or a checkpoint save (sent by the process
   to itself from a hook at that phase, once or twice), or SIGTERM from this script once checkpoint-2 exists
   (external, whatever phase it falls in). Each is resumed with ``--resume true``. Steps lost = steps the
   interrupted process finished minus the step of the checkpoint it resumed from; the resumed weights are
   compared bit for bit with the baseline's.
3. Corrupted checkpoints: SIGKILL while checkpoint-4 is written (``save_total_limit: 1``), and a finished run whose
   newest checkpoint lost a file or had one truncated. Recovered = the resume skipped the damage, used the
   previous complete checkpoint and ended bit-identical to the baseline.
4. Bad invocations: the 33 cases of ``tests/commands/test_bad_invocations.py`` (one error line, the last on stderr, no
   traceback, nothing written).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SMOKE = ROOT / "recipes" / "smoke" / "cpu_tiny.yaml"
FAULT_RUN = ROOT / "tests" / "helpers" / "fault_run.py"
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
       "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false"}

SIGNALS = [
    # (label, phase, fault)
    ("SIGTERM", "generation", "signal:generation:3:TERM"),
    ("SIGINT", "generation", "signal:generation:1:INT"),
    ("SIGTERM x2", "generation", "signal:generation:3:TERM:2"),
    ("SIGTERM", "backward", "signal:backward:3:TERM"),
    ("SIGUSR1", "backward", "signal:backward:1:USR1"),
    ("SIGINT", "backward", "signal:backward:4:INT"),
    ("SIGUSR1 x2", "save (checkpoint-2)", "signal:save:2:USR1:2"),
    ("SIGTERM x2", "save (checkpoint-4)", "signal:save:4:TERM:2"),
]


def command(fault: str, model: Path, puzzles: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, str(FAULT_RUN), fault, "--", "--config", str(SMOKE), "--model_name_or_path", str(model),
            "--dataset_name", str(puzzles), "--output_dir", str(out), "--final_eval_size", "4", *extra]


def finish(done_code: int, stderr: str) -> dict:
    steps = re.search(r"fault_run: (\d+) steps generated", stderr)
    return {"code": done_code, "steps": int(steps.group(1)) if steps else None,
            "traceback": "Traceback" in stderr,
            "lines": [line for line in stderr.splitlines() if line.startswith("countdown-rl train:")]}


def fault_run(fault: str, model: Path, puzzles: Path, out: Path, *extra: str) -> dict:
    done = subprocess.run(command(fault, model, puzzles, out, *extra), cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=600)
    return finish(done.returncode, done.stderr)


def external_sigterm(model: Path, puzzles: Path, out: Path) -> dict:
    """SIGTERM from outside once checkpoint-2 exists (the phase is wherever the run happens to be)."""
    with tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(command("none", model, puzzles, out, "--resume", "true"), cwd=ROOT, env=ENV,
                                   stdout=subprocess.DEVNULL, stderr=err, text=True)
        while process.poll() is None and not (out / "checkpoint-2").is_dir():
            time.sleep(0.02)
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=600)
        err.seek(0)
        return finish(code, err.read())


def weights_equal(a: Path, b: Path) -> bool:
    import torch
    from safetensors.torch import load_file

    if not (a / "model.safetensors").is_file() or not (b / "model.safetensors").is_file():
        return False
    ta, tb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    return ta.keys() == tb.keys() and all(torch.equal(ta[k], tb[k]) for k in ta)


def status(out: Path) -> dict:
    from countdown_rl.runs.record import read_run_record

    try:
        record = read_run_record(out)
    except ValueError:
        return {}
    return record.status if record is not None else {}


def interruption_row(label: str, phase: str, stopped: dict, out: Path, baseline: Path, model, puzzles) -> dict:
    state = status(out)
    checkpoint_step = state.get("step") if state.get("state") == "interrupted" else None
    resumed = fault_run("none", model, puzzles, out, "--resume", "true")
    lost = None if stopped["steps"] is None or checkpoint_step is None else stopped["steps"] - checkpoint_step
    one_line = [line for line in stopped["lines"] if "stopped:" in line]
    return {"signal": label, "phase": phase, "exit": stopped["code"], "stopped_at": checkpoint_step,
            "steps_lost": lost, "one_line": len(one_line) == 1 and not stopped["traceback"],
            "resume_exit": resumed["code"], "bit_exact": weights_equal(baseline, out)}


def corruption_rows(base: Path, baseline: Path, model, puzzles) -> list[dict]:
    rows = []
    out = base / "kill"
    killed = fault_run("kill-in-save:4", model, puzzles, out, "--save_total_limit", "1")
    kept = sorted(p.name for p in out.glob("checkpoint-*"))
    resumed = fault_run("none", model, puzzles, out, "--resume", "true", "--save_total_limit", "1")
    rows.append({"damage": "SIGKILL while checkpoint-4 was written (save_total_limit 1)", "kill_exit": killed["code"],
                 "kept": kept, "warning": False, "resume_exit": resumed["code"], "resumed_steps": resumed["steps"],
                 "recovered": resumed["code"] == 0 and weights_equal(baseline, out)})
    for damage in ("truncated model.safetensors", "deleted optimizer.pt", "deleted trainer_state.json"):
        out = base / damage.replace(" ", "-")
        shutil.copytree(baseline, out)
        victim = out / "checkpoint-4" / damage.split()[1]
        if damage.startswith("truncated"):
            os.truncate(victim, victim.stat().st_size // 2)
        else:
            victim.unlink()
        resumed = fault_run("none", model, puzzles, out, "--resume", "true")
        warned = any("skipping incomplete checkpoint" in line and "checkpoint-4" in line for line in resumed["lines"])
        rows.append({"damage": f"checkpoint-4: {damage}", "kill_exit": None, "kept": None, "warning": warned,
                     "resume_exit": resumed["code"], "resumed_steps": resumed["steps"],
                     "recovered": resumed["code"] == 0 and warned and weights_equal(baseline, out)})
    return rows


def invocation_rows(base: Path, model: Path) -> dict:
    import concurrent.futures

    from _common import CASES, build_scratch, problems, run, snapshot

    scratch = build_scratch(base / "scratch", model)
    before = snapshot(scratch)
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(CASES, pool.map(lambda case: run(CASES[case][0], scratch), CASES)))
    failing = {case: problems(case, done) for case, done in results.items() if problems(case, done)}
    per_command: dict[str, list[int]] = {}
    for case, (argv, _) in CASES.items():
        counts = per_command.setdefault(argv[0], [0, 0])
        counts[0] += 1
        counts[1] += case not in failing
    return {"tried": len(CASES), "one_line": len(CASES) - len(failing), "failing": failing,
            "per_command": per_command, "tree_unchanged": snapshot(scratch) == before}


def table(rows, columns) -> str:
    from countdown_rl.files import render_markdown_table

    return render_markdown_table([c for c, _ in columns], [[fn(r) for _, fn in columns] for r in rows])


def yes(value) -> str:
    return "yes" if value else "NO"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="also write the measurements as JSON here")
    parser.add_argument("--skip-invocations", action="store_true", help="leave out the bad-invocation table")
    args = parser.parse_args(argv)

    from countdown_rl.demo.tiny import save_tiny_model
    from countdown_rl.tasks.countdown.puzzles import generate_countdown
    from countdown_rl.data.jsonl import write_jsonl

    started = time.time()
    base = Path(tempfile.mkdtemp(prefix="countdown-rl-reliability-"))
    try:
        model = save_tiny_model(base / "model", size="test", seed=0)
        puzzles = base / "puzzles.jsonl"
        write_jsonl(generate_countdown(64, seed=0), puzzles)
        baseline = base / "baseline"
        assert fault_run("none", model, puzzles, baseline)["code"] == 0, "the baseline run failed"

        interruptions = []
        for i, (label, phase, fault) in enumerate(SIGNALS):
            out = base / f"signal-{i}"
            stopped = fault_run(fault, model, puzzles, out, "--resume", "true")
            interruptions.append(interruption_row(label, phase, stopped, out, baseline, model, puzzles))
        out = base / "external"
        stopped = external_sigterm(model, puzzles, out)
        interruptions.append(interruption_row("SIGTERM (external, after checkpoint-2)", "wherever it lands", stopped,
                                              out, baseline, model, puzzles))
        corruptions = corruption_rows(base, baseline, model, puzzles)
        invocations = None if args.skip_invocations else invocation_rows(base, model)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    print("### Signals (CPU smoke recipe: tiny Qwen3, 4 steps, checkpoint every 2; resumed with --resume true)\n")
    print(table(interruptions, [
        ("signal", lambda r: r["signal"]), ("phase", lambda r: r["phase"]), ("exit", lambda r: r["exit"]),
        ("checkpoint at step", lambda r: r["stopped_at"] if r["stopped_at"] is not None else "—"),
        ("steps lost", lambda r: r["steps_lost"] if r["steps_lost"] is not None else "—"),
        ("one line, no traceback", lambda r: yes(r["one_line"])), ("resume exit", lambda r: r["resume_exit"]),
        ("bit-exact after resume", lambda r: yes(r["bit_exact"])),
    ]))
    print("\n### Corrupted checkpoints\n")
    print(table(corruptions, [
        ("damage", lambda r: r["damage"]),
        ("left after the kill", lambda r: ", ".join(r["kept"]) if r["kept"] is not None else "—"),
        ("one-line warning", lambda r: yes(r["warning"]) if r["kill_exit"] is None else "— (staging folder)"),
        ("steps re-run", lambda r: r["resumed_steps"]), ("recovered bit-exact", lambda r: yes(r["recovered"])),
    ]))
    if invocations:
        print("\n### Bad invocations (real subprocesses)\n")
        print(table(sorted(invocations["per_command"].items()), [
            ("command", lambda r: r[0]), ("tried", lambda r: r[1][0]),
            ("one error line, no traceback, nothing written", lambda r: r[1][1]),
        ]))
        print(f"\nall: {invocations['one_line']} of {invocations['tried']}; tree unchanged: "
              f"{yes(invocations['tree_unchanged'])}")
        for case, found in invocations["failing"].items():
            print(f"- {case}: {found}")
    print(f"\n({time.time() - started:.0f} s)")
    if args.out:
        Path(args.out).write_text(json.dumps({"interruptions": interruptions, "corruptions": corruptions,
                                              "invocations": invocations}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
