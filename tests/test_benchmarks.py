"""The benchmark scripts run end to end on CPU and report what they promise (as subprocesses, like a user would).

* ``benchmarks/gpu_profile.py --device cpu --model-size tiny``: every table column, a row per configuration,
  and sane values (phases adding up to the step, MFU in (0, 1), tokens within the budget, memory n/a on CPU).
* ``benchmarks/trainer_overhead.py --quick``: prints the ours/stock step-time ratio of grpo and dr_grpo.
"""

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The gpu_profile.py table contract (readers of RESULTS and of --out JSON rely on these names).
GPU_PROFILE_COLUMNS = [
    "mode", "trainer", "G", "budget", "completions", "status", "step s", "gen s", "reward s", "other scoring s",
    "train s", "gen tok/s", "trained tok", "train TFLOP", "MFU %", "peak mem GiB", "ours/stock",
]


def _run(script: str, *args: str, timeout: int = 150) -> str:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{script} failed (rc {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


def _table(stdout: str) -> tuple[list[str], list[list[str]]]:
    lines = [line for line in stdout.splitlines() if line.startswith("|")]
    assert len(lines) >= 3, f"no Markdown table in the output:\n{stdout}"
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    return cells[0], cells[2:]


@pytest.mark.slow
def test_gpu_profile_cpu_smoke(tmp_path):
    out = tmp_path / "results.json"
    stdout = _run("gpu_profile.py", "--device", "cpu", "--model-size", "tiny", "--budgets", "8", "16",
                  "--steps", "1", "--warmup", "1", "--prompts", "4", "--out", str(out))
    assert "generation: transformers (" in stdout  # no vllm on CPU

    header, rows = _table(stdout)
    assert header == GPU_PROFILE_COLUMNS
    # full (G=8) + LoRA (G=8, 4) over two budgets, ours and stock each
    assert len(rows) == (1 + 2) * 2 * 2
    for row in rows:
        cell = dict(zip(header, row, strict=True))
        assert cell["status"] == "ok", row
        assert cell["peak mem GiB"] == "n/a"
        assert float(cell["step s"]) > 0 and 0 < float(cell["MFU %"]) < 100
        if cell["trainer"] == "ours":
            assert 0.1 < float(cell["ours/stock"]) < 10
        else:
            assert cell["ours/stock"] == "-"

    result = json.loads(out.read_text())
    assert result["meta"]["generation"] == "transformers" and result["meta"]["peak_flops"] > 0
    configs = {(r["mode"], r["kind"], r["group"], r["budget"]) for r in result["rows"]}
    assert configs == {(mode, kind, group, budget) for mode, group in [("full", 8), ("lora", 8), ("lora", 4)]
                       for kind in ("ours", "stock") for budget in (8, 16)}
    for r in result["rows"]:
        assert r["status"] == "ok" and len(r["steps"]) == 1
        assert r["completions"] == 4 * r["group"]
        phases = r["gen_s"] + r["reward_s"] + r["other_scoring_s"] + r["train_s"]
        assert math.isclose(phases, r["step_s"], rel_tol=1e-6), r
        assert min(r["gen_s"], r["reward_s"], r["other_scoring_s"], r["train_s"]) > 0
        assert 0 < r["completion_tokens"] <= r["completions"] * r["budget"]
        assert r["trained_tokens"] > r["completion_tokens"]  # prompts count too
        assert r["gen_tok_per_s"] > 0 and r["train_flops"] > 0 and 0 < r["mfu"] < 1
        assert r.get("peak_mem_gib") is None  # CPU: no CUDA memory figure


@pytest.mark.slow
def test_trainer_overhead_quick_prints_both_ratios():
    stdout = _run("trainer_overhead.py", "--quick")
    for algorithm in ("grpo", "dr_grpo"):
        match = re.search(rf"^ratio ours/stock {algorithm}: (\d+\.\d+)", stdout, re.MULTILINE)
        assert match, f"no {algorithm} ratio in:\n{stdout}"
        # a smoke test on a shared machine: only the order of magnitude is meaningful here
        assert 0.2 < float(match.group(1)) < 5
    header, rows = _table(stdout)
    assert header[:3] == ["algorithm", "trainer", "step ms"]
    assert {(row[0], row[1]) for row in rows} == {(a, k) for a in ("grpo", "dr_grpo") for k in ("ours", "stock")}
