"""SFT steps in fp32 and under bf16 autocast, on the same solver traces (CPU): the real-model demo's SFT stage.

1. ``--model`` (a saved model folder, a packaged name such as ``smollm2``, converted once; or ``tiny`` for a random
   tiny Qwen3); the demo's chat-template solver traces (:func:`countdown_rl.demo.puzzles.trace_examples`) of its SFT
   puzzles, 3 numbers in 1..``--max-number``, targets 1..``--max-target``.
2. ``--repeats`` rounds, the order alternating (fp32 first, then bf16 first): :func:`sft_trainer` from the same
   model, ``--steps`` steps of ``--batch-size`` traces, ``bf16`` off or on (``DemoConfig.sft_bf16``); each step's wall
   time (the first of each run left out: allocation) and the last step's training loss.
3. Printed: a Markdown row (median seconds a step each way, their ratio, the losses), then the JSON.

Run from the repository root: ``python benchmarks/sft_precision.py --model smollm2`` (``--model tiny``: seconds).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.ensure_repo_on_path()


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model", required=True, help="a saved model folder, a packaged name (smollm2), or 'tiny'")
    parser.add_argument("--steps", type=int, default=6, help="SFT steps a run (the first one is not timed)")
    parser.add_argument("--batch-size", type=int, default=8, help="traces a step (the real-model demo's)")
    parser.add_argument("--repeats", type=int, default=2, help="rounds of one fp32 and one bf16 run")
    parser.add_argument("--max-number", type=int, default=12, help="largest number of the puzzles")
    parser.add_argument("--max-target", type=int, default=36, help="largest target of the puzzles")
    parser.add_argument("--seed", type=int, default=0, help="seed of the puzzles and the SFT runs")
    return parser.parse_args(argv)


def _timed_run(model_dir: Path, out_dir: Path, examples, args: argparse.Namespace, bf16: bool) -> dict:
    from countdown_rl.training.warmup import sft_trainer

    timer = _common.StepTimer()
    trainer = sft_trainer(model_dir, out_dir, examples, steps=args.steps, batch_size=args.batch_size,
                          learning_rate=5e-5, seed=args.seed, callbacks=[timer.callback()], bf16=bf16)
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return {"step_s": _common.median(s["step"] for s in timer.measured(1)), "last_loss": losses[-1]}


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.steps < 2 or args.repeats < 1:
        raise SystemExit("sft_precision.py: --steps must be at least 2 (the first is not timed), --repeats at least 1")
    _common.quiet_hf()
    from dataclasses import replace

    from countdown_rl.demo.pretrained import pretrained_config
    from countdown_rl.demo.puzzles import demo_puzzles, trace_examples
    from countdown_rl.demo.tiny import save_tiny_model
    from countdown_rl.models.source import resolve_model_source

    spec = pretrained_config("smollm2").puzzles
    spec = replace(spec, max_number=args.max_number, max_target=args.max_target, num_sft=args.steps * args.batch_size,
                   num_rl=8, num_eval=8)
    examples = trace_examples(demo_puzzles(spec, seed=args.seed)["sft"], template="chat", seed=args.seed)
    from countdown_rl.runs.device import choose_precision

    chosen = choose_precision("cpu", True)  # both ways are timed, as asked; say whether bf16 is native here
    print("this CPU has bf16 kernels" if chosen.bf16 else f"bf16 is emulated here: {chosen.why}", flush=True)
    with tempfile.TemporaryDirectory() as workdir:
        model_dir = (save_tiny_model(Path(workdir) / "tiny") if args.model == "tiny"
                     else Path(resolve_model_source(args.model, "--model").path))
        runs = {False: [], True: []}
        for round_ in range(args.repeats):
            for bf16 in ((False, True) if round_ % 2 == 0 else (True, False)):
                out = Path(workdir) / f"sft-{round_}-{'bf16' if bf16 else 'fp32'}"
                runs[bf16].append(_timed_run(model_dir, out, examples, args, bf16))
    fp32 = _common.median(r["step_s"] for r in runs[False])
    bf16 = _common.median(r["step_s"] for r in runs[True])
    row = [args.model, f"{args.batch_size}: numbers 1..{args.max_number}, targets 1..{args.max_target}",
           f"{fp32:.2f} s", f"{bf16:.2f} s", f"{bf16 / fp32:.2f}x", f"{runs[False][-1]['last_loss']:.3f} / {runs[True][-1]['last_loss']:.3f}"]
    print(_common.markdown_table(["model", "traces a step", "SFT step, fp32", "bf16 autocast", "bf16 / fp32",
                                  f"loss at step {args.steps}, fp32 / bf16"], [row]))
    print(json.dumps({"model": args.model, "steps": args.steps, "batch_size": args.batch_size,
                      "fp32": runs[False], "bf16": runs[True]}, indent=1))


if __name__ == "__main__":
    from countdown_rl.generation.vllm_import import leave_vllm_out

    leave_vllm_out()  # nothing here generates with vLLM: its engine stays out of this process
    main()
