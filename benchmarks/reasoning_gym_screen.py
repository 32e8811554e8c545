"""The reasoning-gym screen: where a small pretrained model has RL signal after the demo's format warm-up.

1. Settings (:data:`SETTINGS`): easy configs of many reasoning-gym datasets (a label, a dataset, its config keys);
   each setting's rows come from the demo's own split (``countdown_rl.demo.task_rows.task_parts``, seeded), so no
   held-out row is warmed up on.
2. One format warm-up (the demo's SFT stage: the reference answer in ``<answer>`` tags, in the model's chat template,
   loss on the assistant's turn) on every setting's warm-up rows, mixed.
3. The warm-up model on each setting's held-out rows: greedy (accuracy, the answer-format rate, the content reading:
   the answer read without the tags), then ``--samples`` samples a row at temperature 1.0 (pass@1, pass@k). Beside
   them, the best constant answer (the most common reference answer of those rows).
4. The table: a setting has RL signal where greedy is roughly 10-60% and pass@k lies well above greedy (15 points or
   more): some samples are right where the greedy answer is not, so a group of samples has rewards to compare.

Evaluations go through one vLLM engine where vLLM is installed, else transformers ``generate``. Written: ``OUT/sft``
(the warm-up model), ``OUT/<label>/{greedy,sampled}`` (eval files), ``OUT/screen.json``, ``OUT/screen.md``. From the
repository root::

    python benchmarks/reasoning_gym_screen.py --model smollm2 --out outputs/rg-screen

``--quick`` warms up 2 steps and scores 4 rows of 3 settings (a smoke test of the script, not a measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.ensure_repo_on_path()

# (label, dataset, config): easy settings, each small enough that a 135M model answers some rows directly.
SETTINGS = (
    ("chain_sum 2x1", "chain_sum", {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}),
    ("chain_sum 3x1", "chain_sum", {"min_terms": 3, "max_terms": 3, "min_digits": 1, "max_digits": 1}),
    ("chain_sum 2x2", "chain_sum", {"min_terms": 2, "max_terms": 2, "min_digits": 2, "max_digits": 2}),
    ("basic_arithmetic 2x1", "basic_arithmetic", {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1,
                                                  "operators": ["+", "-", "*"], "allow_parentheses": False,
                                                  "allow_negation": False}),
    ("products 1-2 digits", "products", {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 2}),
    ("leg_counting 2", "leg_counting", {"min_animals": 1, "max_animals": 2, "min_instances": 1, "max_instances": 3}),
    ("number_sorting 3", "number_sorting", {"min_numbers": 3, "max_numbers": 3, "min_decimals": 0, "max_decimals": 0,
                                            "min_value": 0, "max_value": 50}),
    ("spell_backward 3-4", "spell_backward", {"min_word_len": 3, "max_word_len": 4}),
    ("letter_counting 3-5", "letter_counting", {"min_words": 3, "max_words": 5}),
    ("count_bits 255", "count_bits", {"min_n": 1, "max_n": 255}),
    ("gcd 20", "gcd", {"min_value": 1, "max_value": 20}),
    ("lcm 20", "lcm", {"min_value": 1, "max_value": 20}),
    ("number_filtering 4", "number_filtering", {"min_numbers": 3, "max_numbers": 4, "min_decimals": 0,
                                                "max_decimals": 0, "min_value": 0, "max_value": 50}),
    ("word_sorting 3", "word_sorting", {"min_words": 3, "max_words": 3, "min_word_length": 3, "max_word_length": 5}),
    ("word_sequence_reversal 3", "word_sequence_reversal", {"min_words": 3, "max_words": 3}),
    ("simple_equations 2", "simple_equations", {"min_terms": 2, "max_terms": 2, "min_value": 1, "max_value": 10}),
    ("prime_factorization 200", "prime_factorization", {"min_value": 2, "max_value": 200}),
    ("base_conversion 2-10", "base_conversion", {"min_base": 2, "max_base": 10, "min_value": 0, "max_value": 31}),
)
QUICK_SETTINGS = 3
SIGNAL = {"min_greedy": 0.10, "max_greedy": 0.60, "min_headroom": 0.15}
"""RL signal: greedy accuracy in [min_greedy, max_greedy] and pass@k at least ``min_headroom`` above it."""


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2", help="a model folder, .gguf file or packaged name (smollm2)")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--sft_steps", type=int, default=60, help="format warm-up steps (default 60)")
    parser.add_argument("--sft_batch_size", type=int, default=8, help="rows a warm-up step (default 8)")
    parser.add_argument("--sft_learning_rate", type=float, default=5e-5, help="warm-up learning rate (default 5e-5)")
    parser.add_argument("--warmup_rows", type=int, default=64, help="warm-up rows a setting (default 64)")
    parser.add_argument("--rows", type=int, default=64, help="held-out rows a setting (default 64)")
    parser.add_argument("--samples", type=int, default=8, help="samples a row for pass@k (default 8)")
    parser.add_argument("--max_tokens", type=int, default=48, help="completion budget (default 48)")
    parser.add_argument("--seed", type=int, default=0, help="rows, warm-up and sampling seed (default 0)")
    parser.add_argument("--sft", type=Path, default=None,
                        help="a warm-up model an earlier run made (OUT/sft) with the same settings, --seed, "
                        "--warmup_rows and --rows (the same rows: none held out was warmed up on): evaluate it")
    parser.add_argument("--num_threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--quick", action="store_true", help="2 warm-up steps, 4 rows of 3 settings: a smoke test")
    args = parser.parse_args(argv)
    for name in ("sft_steps", "sft_batch_size", "warmup_rows", "rows", "samples", "max_tokens"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name} must be positive, got {getattr(args, name)}")
    if args.quick:
        args.sft_steps, args.sft_batch_size, args.warmup_rows, args.rows, args.samples = 2, 2, 4, 4, 2
    return args


def setting_task(dataset: str, config: dict):
    """The reasoning-gym task of one setting (its options checked as ``--task_options`` are)."""
    from countdown_rl.tasks import get_task

    return get_task("reasoning_gym", [f"datasets={dataset}", f"config={json.dumps({dataset: config})}"])


def has_signal(greedy: float, pass_k: float) -> bool:
    """Whether a setting has RL signal (:data:`SIGNAL`).

    >>> has_signal(0.3, 0.7), has_signal(0.05, 0.5), has_signal(0.4, 0.45)
    (True, False, False)
    """
    return SIGNAL["min_greedy"] <= greedy <= SIGNAL["max_greedy"] and pass_k - greedy >= SIGNAL["min_headroom"]


def main(argv=None) -> dict:
    args = parse_args(argv)
    from countdown_rl.demo.run_dir import setup_environment
    from countdown_rl.demo.stages import evaluate_stage
    from countdown_rl.demo.task_rows import task_parts
    from countdown_rl.evaluation.eval_files import read_samples
    from countdown_rl.evaluation.readings import constant_answer, content_reading, format_rate
    from countdown_rl.files import format_percent
    from countdown_rl.runs.memory import release_memory
    from countdown_rl.training.warmup import task_examples

    setup_environment(args.num_threads)
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB, as the demo's engines: short prompts, 2 cores
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    settings = SETTINGS[:QUICK_SETTINGS] if args.quick else SETTINGS
    tasks = {label: setting_task(dataset, config) for label, dataset, config in settings}  # bad config: before loading
    parts = {label: task_parts(task, args.warmup_rows, 1, args.rows, args.seed) for label, task in tasks.items()}
    examples = [e for label, task in tasks.items() for e in task_examples(task, parts[label]["sft"], "chat")]
    sft_dir, sft_s, bf16 = _common.screen_warmup(
        args, examples, f"{len(settings)} settings, {args.warmup_rows} warm-up and {args.rows} held-out rows each")

    t = time.time()
    model, backend = _common.screen_engine(sft_dir, args.seed)
    try:
        results = []
        for label, dataset, config in settings:
            task, rows, out = tasks[label], parts[label]["eval"], args.out / label.replace(" ", "_")
            common = {"budgets": [args.max_tokens], "template": "chat", "backend": backend, "task": task,
                      "show_progress": False, "batch_size": 256, "meta": {"model": str(sft_dir), "setting": label},
                      "task_options": [f"datasets={dataset}", f"config={json.dumps({dataset: config})}"]}
            greedy = evaluate_stage(model, None, rows, out_dir=out / "greedy", **common)[0]
            sampled = evaluate_stage(model, None, rows, out_dir=out / "sampled", temperature=1.0,
                                     num_samples=args.samples, seed=args.seed, **common)[0]
            samples = read_samples(out / "greedy")
            k = max(sampled.pass_at_k)
            row = {"setting": label, "dataset": dataset, "config": config, "rows": len(rows),
                   "greedy": greedy.accuracy, "format_rate": format_rate(samples),
                   "content": content_reading(task, samples)["accuracy"], "pass_at_1": sampled.pass_at_k.get(1),
                   "k": k, "pass_at_k": sampled.pass_at_k[k],
                   "constant": constant_answer(task, rows, "chat")["accuracy"],
                   "mean_tokens": greedy.mean_tokens}
            row["signal"] = has_signal(row["greedy"], row["pass_at_k"])
            results.append(row)
            print(f"{label}: greedy {format_percent(row['greedy'])}, format {format_percent(row['format_rate'])}, "
                  f"pass@{k} {format_percent(row['pass_at_k'])}", flush=True)
    finally:
        # shut the engine down here, as the demo's evaluator does: left to the interpreter's exit, a vllm-cpu 0.31
        # engine never stops (its worker waits) and the process hangs after the table is printed
        del model
        release_memory()
    eval_s = time.time() - t

    headers = ["setting", "greedy", "format", "content", "pass@1", f"pass@{args.samples}", "constant answer",
               "mean tokens", "RL signal"]
    table = _common.markdown_table(headers, [
        [r["setting"], format_percent(r["greedy"]), format_percent(r["format_rate"]), format_percent(r["content"]),
         format_percent(r["pass_at_1"]), format_percent(r["pass_at_k"]), format_percent(r["constant"]),
         f"{r['mean_tokens']:.1f}", "yes" if r["signal"] else "no"] for r in results])
    summary = {"model": args.model, "settings": results, "seed": args.seed, "sft_steps": args.sft_steps,
               "sft_batch_size": args.sft_batch_size, "sft_learning_rate": args.sft_learning_rate,
               "warmup_rows": args.warmup_rows, "max_tokens": args.max_tokens, "samples": args.samples,
               "backend": backend, "bf16": bf16, "sft_s": sft_s, "eval_s": eval_s, "quick": args.quick}
    return _common.write_screen(args.out, table, summary)


if __name__ == "__main__":
    main()
