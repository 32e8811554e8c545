"""GRPO and Dr.GRPO step sizes on the tiny demo's RL stage: how far AdamW moves the weights a step under each loss
at the same learning rate, and the gradient norms behind it, from one SFT model.

1. The demo's puzzles and SFT warm-up for ``--seed`` (``demo.stages.warm_start``; ``--resume`` reuses a finished SFT
   stage in ``--out``).
2. The demo's RL stage (``demo.stages.rl_recipe``) for ``--max_steps`` steps under GRPO, then under Dr.GRPO, at the
   same learning rate and seed; no in-training evaluation, no checkpoint.
3. Every step: the gradient's norm before clipping (TRL's ``grad_norm``) and the update's norm, the distance the
   optimizer step moved the trainable weights (a callback: ``||w_after - w_before||``).
4. Printed: per loss the median and quartiles of both, and the ratios Dr.GRPO / GRPO of the medians. AdamW divides
   each weight's step by a running root-mean-square of its gradients, so a loss scaled by a constant moves the
   weights as far: the ratio of the update norms, not of the gradient norms, is the step-size ratio that a
   learning rate would have to undo.

``--quick`` is the demo's quick settings (a few steps: a smoke test of the script). Run from the repository root::

    python benchmarks/step_size.py --seed 0 --out outputs/step-size --max_steps 100
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.ensure_repo_on_path()

ALGORITHMS = ("grpo", "dr_grpo")


def update_norms():
    """A trainer callback that records, every optimizer step, the norm of the change of the trainable weights
    (``.norms``)."""
    import torch
    from transformers import TrainerCallback

    class UpdateNorms(TrainerCallback):
        def __init__(self):
            self.before, self.norms = None, []

        def on_step_begin(self, args, state, control, model=None, **kwargs):
            self.before = [p.detach().clone() for p in model.parameters() if p.requires_grad]

        def on_step_end(self, args, state, control, model=None, **kwargs):
            after = [p.detach() for p in model.parameters() if p.requires_grad]
            squares = sum(float(torch.sum((a.double() - b.double()) ** 2)) for a, b in zip(after, self.before,
                                                                                        strict=True))
            self.norms.append(squares ** 0.5)

    return UpdateNorms()


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """(first quartile, median, third quartile) of ``values`` (one value: itself three times)."""
    if len(values) == 1:
        return values[0], values[0], values[0]
    low, median, high = statistics.quantiles(values, n=4, method="inclusive")
    return low, median, high


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="the demo's seed (puzzles, SFT, RL)")
    parser.add_argument("--out", default="outputs/step-size", help="folder for the SFT model and both runs")
    parser.add_argument("--max_steps", type=int, default=100, help="RL steps per loss")
    parser.add_argument("--resume", action="store_true", help="reuse a finished SFT stage in --out")
    parser.add_argument("--quick", action="store_true", help="the demo's quick settings: a smoke test")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    _common.quiet_hf()
    from countdown_rl.demo.stages import demo_record, rl_recipe, train_rl

    if args.max_steps <= 0:
        raise SystemExit("--max_steps must be positive")
    out = Path(args.out)
    config, warm = _common.demo_start(args.quick, seed=args.seed, output_dir=str(out), resume=args.resume,
                                      max_steps=args.max_steps)
    puzzles = warm.puzzles

    rows, medians = [], {}
    for algorithm in ALGORITHMS:
        run_dir = out / f"rl-{algorithm}"
        recipe = rl_recipe(replace(config, algorithm=algorithm), warm.sft_dir, run_dir, num_eval=len(puzzles["eval"]))
        recipe.update(eval_strategy="no", save_strategy="no", final_eval_size=0, logging_steps=1)
        callback = update_norms()
        record = demo_record(warm.sft_dir, config.puzzles.describe(), puzzles, {"benchmark": "step_size"})
        train_rl(recipe, puzzles["rl"], puzzles["eval"], record=record, show_progress=False, callbacks=[callback])
        history = json.loads((run_dir / "trainer_state.json").read_text())["log_history"]
        grads = [entry["grad_norm"] for entry in history if "grad_norm" in entry]
        updates = callback.norms
        medians[algorithm] = {"grad": quartiles(grads)[1], "update": quartiles(updates)[1]}
        rows.append([algorithm, str(len(updates)), f"{recipe['learning_rate']:g}",
                     "{:.3g} / {:.3g} / {:.3g}".format(*quartiles(grads)),
                     "{:.3g} / {:.3g} / {:.3g}".format(*quartiles(updates))])
        print(f"{algorithm}: {len(updates)} steps, median gradient norm {medians[algorithm]['grad']:.3g}, median "
              f"update norm {medians[algorithm]['update']:.3g}", flush=True)
    print()
    print(_common.markdown_table(["loss", "steps", "learning rate", "gradient norm (quartiles)",
                                  "update norm (quartiles)"], rows))
    grad_ratio = medians["dr_grpo"]["grad"] / medians["grpo"]["grad"]
    update_ratio = medians["dr_grpo"]["update"] / medians["grpo"]["update"]
    print(f"\nDr.GRPO / GRPO at the same learning rate: median gradient norm {grad_ratio:.2f}x, median update norm "
          f"{update_ratio:.2f}x (the learning-rate factor that would match Dr.GRPO's steps to GRPO's: "
          f"{1 / update_ratio:.2f})")


if __name__ == "__main__":
    from countdown_rl.generation.vllm_import import leave_vllm_out

    leave_vllm_out()  # nothing here generates with vLLM
    main()
