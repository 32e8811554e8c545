"""The real-model demo's rollouts on the CPU: plain ``generate`` against ``generation_backend: compiled``.

The demo's RL stage runs on the CPU under bf16 autocast (fp32 weights) where the CPU has bf16 kernels, in fp32
elsewhere (``--precision``: the same choice by default); without vLLM its rollouts go through one of these two
(:func:`countdown_rl.demo.pretrained.choose_backends`). This times both on the same batches:

1. ``--model`` (a saved model folder, a packaged name such as ``smollm2``, converted once; or ``tiny``); the demo's
   RL puzzles in its chat template, ``--prompts`` prompts each repeated ``--generations`` times (one rollout batch,
   as TRL lays it out), sampled at the demo's temperature up to ``--budget`` new tokens.
2. The compiled backend is warmed up once (its first compile timed apart); then ``--repeats`` rounds, the order
   alternating (plain first, then compiled first), each call seeded alike: plain is transformers' ``generate`` on
   the batch left-padded to its longest prompt (TRL's plain path), compiled is
   :class:`countdown_rl.generation.compiled.CompiledGeneration` (prompts padded to a bucket, static cache).
3. Printed: a Markdown row (median seconds a batch each way, their ratio, the first compile), then the JSON.

Run from the repository root: ``python benchmarks/rollout_backends.py --model smollm2`` (``--model tiny``: seconds).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.ensure_repo_on_path()


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model", required=True, help="a saved model folder, a packaged name (smollm2), or 'tiny'")
    parser.add_argument("--prompts", type=int, default=4, help="prompts a batch (the demo's prompts_per_step)")
    parser.add_argument("--generations", type=int, default=8, help="samples a prompt (the demo's num_generations)")
    parser.add_argument("--budget", type=int, default=64, help="new tokens at most (the demo's budget)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of one plain and one compiled batch")
    _common.add_precision_flag(parser)
    parser.add_argument("--no-bf16", dest="precision", action="store_const", const="fp32", help="--precision fp32")
    parser.add_argument("--seed", type=int, default=0, help="seed of the puzzles and the sampling")
    return parser.parse_args(argv)


def _batch(tokenizer, args: argparse.Namespace) -> list[list[int]]:
    """The demo's RL prompts in its chat template, token ids, each repeated ``--generations`` times."""
    from countdown_rl.demo.pretrained import pretrained_config
    from countdown_rl.demo.puzzles import demo_puzzles
    from countdown_rl.generation.sampling import prompt_texts
    from countdown_rl.tasks.countdown.prompts import build_prompt

    config = pretrained_config("smollm2")
    rows = demo_puzzles(config.puzzles, seed=args.seed)["rl"][:args.prompts]
    prompts = [build_prompt(row["nums"], row["target"], template=config.prompt_template) for row in rows]
    ids = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in prompt_texts(tokenizer, prompts, None)]
    return [p for p in ids for _ in range(args.generations)]


def main(argv=None) -> None:
    args = parse_args(argv)
    if min(args.prompts, args.generations, args.budget, args.repeats) < 1:
        raise SystemExit("rollout_backends.py: --prompts, --generations, --budget and --repeats must be positive")
    _common.quiet_hf()
    import contextlib

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    from countdown_rl.demo.pretrained import pretrained_config
    from countdown_rl.demo.tiny import save_tiny_model
    from countdown_rl.generation.compiled import CompiledGeneration, automatic_buckets
    from countdown_rl.generation.sampling import left_pad
    from countdown_rl.models.source import resolve_model_source

    with tempfile.TemporaryDirectory() as workdir:
        model_dir = (save_tiny_model(Path(workdir) / "tiny") if args.model == "tiny"
                     else Path(resolve_model_source(args.model, "--model").path))
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    batch = _batch(tokenizer, args)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    config = GenerationConfig(max_new_tokens=args.budget, do_sample=True,
                              temperature=pretrained_config("smollm2").temperature, pad_token_id=pad,
                              eos_token_id=tokenizer.eos_token_id)
    compiled = CompiledGeneration(max_new_tokens=args.budget, prompt_buckets=automatic_buckets([len(p) for p in batch]),
                                  rows=len(batch))
    bf16 = _common.choose_bf16(args.precision)
    precision = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()

    def plain_call():
        ids, mask = left_pad(batch, pad)
        with torch.no_grad():
            return model.generate(input_ids=ids, attention_mask=mask, generation_config=config)[:, ids.shape[1]:]

    calls = {"plain": plain_call, "compiled": lambda: compiled.generate(model, batch, config)}
    seconds = {"plain": [], "compiled": []}
    tokens = {"plain": [], "compiled": []}
    with precision:
        start = time.perf_counter()
        if not compiled.warm_up(model, config, len(batch)):
            raise SystemExit(f"rollout_backends.py: the compiled backend fell back: {compiled.fallback_reason}")
        compile_s = time.perf_counter() - start
        for round_ in range(args.repeats):
            for name in (("plain", "compiled") if round_ % 2 == 0 else ("compiled", "plain")):
                torch.manual_seed(args.seed + round_)
                start = time.perf_counter()
                out = calls[name]()
                seconds[name].append(time.perf_counter() - start)
                tokens[name].append(int((out != pad).sum()))
    plain, fast = _common.median(seconds["plain"]), _common.median(seconds["compiled"])
    row = [args.model, f"{args.prompts} x {args.generations}, {args.budget} tokens",
           "bf16 autocast" if bf16 else "fp32", f"{plain:.2f} s", f"{fast:.2f} s", f"{fast / plain:.2f}x",
           f"{compile_s:.1f} s"]
    print(_common.markdown_table(["model", "batch", "precision", "plain", "compiled", "compiled / plain",
                                  "first compile"], [row]))
    print(json.dumps({"model": args.model, "rows": len(batch), "budget": args.budget, "bf16": bf16,
                      "compile_s": compile_s, "seconds": seconds, "tokens": tokens}, indent=1))


if __name__ == "__main__":
    from countdown_rl.generation.vllm_import import leave_vllm_out

    leave_vllm_out()  # nothing here generates with vLLM: its engine stays out of this process
    main()
