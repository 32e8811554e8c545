"""Dynamic sampling on the tiny demo's RL stage: the share of groups that carry a gradient, and the held-out accuracy
after the same wall time, without and with it, from one SFT model, in one run.

1. The demo's puzzles and SFT warm-up for ``--seed`` (``demo.stages.warm_start``; ``--resume`` reuses a finished SFT
   stage in ``--out``), and the SFT model's greedy evaluation on the held-out puzzles.
2. Without: the demo's RL stage (``demo.stages.rl_recipe``) for ``--max_steps`` steps, one generation round a step.
   It runs with ``dynamic_sampling: true`` and ``dynamic_sampling_max_rounds: 1``, which trains on TRL's own batch
   (every group kept, in another order: the same update) and logs how many of its groups hold some correct and some
   wrong completions, the groups that carry the outcome's gradient.
3. With: ``dynamic_sampling_max_rounds: --max_rounds``, stopped after the same wall time as 2 (training time, from
   the first step to the last; the model load and the evaluations are outside it).
4. Both trained models greedy on the same held-out puzzles. Printed: per run the steps, the training time, the mean
   share of a step's groups with differing outcomes, the prompts drawn and generation rounds a step, the held-out
   accuracy and its McNemar test against the SFT model; then the two ratios: the share of groups with a gradient
   with / without, and the accuracy with - without (McNemar between the two trained models).

``--quick`` is the demo's quick settings (a few steps: a smoke test of the script). Run from the repository root::

    python benchmarks/dynamic_sampling.py --seed 0 --out outputs/dynamic-sampling
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.ensure_repo_on_path()


def wall_clock(budget_s: float | None = None):
    """A trainer callback that times training from its first step to its last (``.seconds``); with ``budget_s``, it
    stops training once that much time has run."""
    from transformers import TrainerCallback

    class WallClock(TrainerCallback):
        def __init__(self):
            self.start, self.seconds = None, 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            if self.start is None:
                self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.seconds = time.perf_counter() - self.start
            if budget_s is not None and self.seconds >= budget_s:
                control.should_training_stop = True

    return WallClock()


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="the demo's seed (puzzles, SFT, RL)")
    parser.add_argument("--out", default="outputs/dynamic-sampling", help="folder for the SFT model and both runs")
    parser.add_argument("--max_steps", type=int, default=None, help="steps of the run without (default: the demo's)")
    parser.add_argument("--max_rounds", type=int, default=4, help="dynamic_sampling_max_rounds of the run with")
    parser.add_argument("--resume", action="store_true", help="reuse a finished SFT stage in --out")
    parser.add_argument("--quick", action="store_true", help="the demo's quick settings: a smoke test")
    return parser.parse_args(argv)


def _per_step(run_dir: Path) -> dict[str, float]:
    """Means over the run's logged steps of its dynamic-sampling counts, from its trainer_state.json."""
    history = json.loads((run_dir / "trainer_state.json").read_text())["log_history"]
    steps = [entry for entry in history if "dynamic_sampling/groups_kept" in entry]
    return {key: statistics.fmean(entry[f"dynamic_sampling/{key}"] for entry in steps)
            for key in ("groups_kept", "prompts_drawn", "rounds", "short")}


def main(argv=None) -> None:
    args = parse_args(argv)
    _common.quiet_hf()
    from countdown_rl.demo.stages import demo_record, evaluate_stage, rl_recipe, train_rl
    from countdown_rl.demo.table import paired_test
    from countdown_rl.files import format_percent

    if (args.max_steps is not None and args.max_steps <= 0) or args.max_rounds < 2:
        raise SystemExit("--max_steps must be positive and --max_rounds at least 2 (1 is the run without)")
    out = Path(args.out)
    given = {} if args.max_steps is None else {"max_steps": args.max_steps}  # else the demo's
    config, warm = _common.demo_start(args.quick, seed=args.seed, output_dir=str(out), resume=args.resume,
                                      dynamic_sampling=True, **given)
    puzzles, budget = warm.puzzles, config.max_completion_length
    sft_eval = out / "zero_shot"
    [sft] = evaluate_stage(str(warm.sft_dir), None, puzzles["eval"], budgets=[budget], out_dir=sft_eval,
                           meta={"model": str(warm.sft_dir), "stage": "zero_shot"},
                           batch_size=config.eval_batch_size, show_progress=False)
    print(f"SFT model: {format_percent(sft.accuracy)} on {len(puzzles['eval'])} held-out puzzles", flush=True)

    rows, runs = [], {}
    for name, rounds in (("without", 1), ("with", args.max_rounds)):
        run_dir = out / f"rl-{name}"
        budget_s = None if name == "without" else runs["without"]["seconds"]
        steps = config.max_steps if budget_s is None else 100 * config.max_steps  # "with" stops on the clock
        recipe = rl_recipe(replace(config, dynamic_sampling_max_rounds=rounds, max_steps=steps), warm.sft_dir, run_dir,
                           num_eval=len(puzzles["eval"]))
        recipe.update(eval_strategy="no", save_strategy="no")  # the same work besides the rollouts in both runs
        clock = wall_clock(budget_s)
        record = demo_record(warm.sft_dir, config.puzzles.describe(), puzzles, {"benchmark": "dynamic_sampling"})
        run = train_rl(recipe, puzzles["rl"], puzzles["eval"], record=record, show_progress=False, callbacks=[clock])
        counts = _per_step(run_dir)
        paired = paired_test(sft_eval, run_dir / "eval", budget)
        accuracy = json.loads((run_dir / "eval" / "eval.json").read_text())["results"][0]["accuracy"]
        runs[name] = {"seconds": clock.seconds, "steps": run.trained.global_step, "accuracy": accuracy, **counts,
                      "share": counts["groups_kept"] / config.prompts_per_step, "paired": paired}
        del run
        print(f"{name} dynamic sampling: {runs[name]['steps']} steps in {clock.seconds:.0f} s, "
              f"{format_percent(accuracy)} held out", flush=True)
        rows.append([name, f"dynamic_sampling_max_rounds {rounds}", str(runs[name]["steps"]),
                     f"{clock.seconds:.0f} s", format_percent(runs[name]["share"]),
                     f"{counts['prompts_drawn']:.1f}", f"{counts['rounds']:.2f}", format_percent(accuracy),
                     f"{100 * (accuracy - sft.accuracy):+.1f} (p {paired['p_value']:.3g})"])
    print()
    print(_common.markdown_table(
        ["dynamic sampling", "setting", "RL steps", "training time", "groups with a gradient (differing outcomes)",
         "prompts drawn a step", "generation rounds a step", "held-out accuracy", "vs SFT, points (McNemar p)"], rows))
    between = paired_test(out / "rl-without" / "eval", out / "rl-with" / "eval", budget)
    share = (f"{runs['with']['share'] / runs['without']['share']:.2f}x" if runs["without"]["share"]
             else "— (none without)")
    print(f"\nafter the same training time ({runs['without']['seconds']:.0f} s): groups with a gradient with / without "
          f"{share}; held-out accuracy with - without "
          f"{100 * (runs['with']['accuracy'] - runs['without']['accuracy']):+.1f} points (McNemar p "
          f"{between['p_value']:.3g}: {between['only_a']} puzzles only the run with solved, {between['only_b']} only "
          f"the run without); SFT {format_percent(sft.accuracy)}")


if __name__ == "__main__":
    from countdown_rl.generation.vllm_import import leave_vllm_out

    leave_vllm_out()  # nothing here generates with vLLM
    main()
