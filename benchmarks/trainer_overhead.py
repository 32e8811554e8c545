"""Per-step overhead of ``CountdownGRPOTrainer`` against stock ``trl.GRPOTrainer``, on CPU.

What is compared: our trainer with ``algorithm=grpo`` / ``dr_grpo`` against stock TRL with the equivalent
``loss_type="grpo", scale_rewards="group"`` / ``loss_type="dr_grpo", scale_rewards="none"``. Everything else is
identical: the same saved tiny Qwen3 (``countdown_rl.demo.tiny.save_tiny_model``, re-loaded for every run), the same
generated puzzles rendered with the ``r1_zero`` prompt, the same rewards (the Countdown reward plus a dense toy
reward, see below), the same seed, batch shapes and optimiser. The two trainers of a round share the process's
random number generator, so their samples differ, but not their shapes: generation runs until every sequence
ends, and a random model's batch is padded to the full budget, so both sides do the same model work and only
the trainer code differs.

How it is measured:

1. Each *round* builds a fresh ours and a fresh stock trainer and trains both for ``--warmup + --steps``
   optimizer steps, in lockstep: each ``train()`` runs in its own thread and a turn-taking callback lets exactly
   one trainer work at a time, so steps alternate ours, stock, ours, stock, ... (which side starts flips every
   round). Alternating single steps (rather than whole runs) keeps the machine's load drift, which on a shared
   machine is large at the scale of seconds, the same for both sides.
2. A ``TrainerCallback`` reads ``time.perf_counter`` (and ``time.process_time``) at ``on_step_begin`` and
   ``on_step_end``: generation, rewards, advantages, forward, backward and the optimizer step are inside. TRL's
   logging runs just after ``on_step_end``; it is timed separately ("log"). The warm-up steps are dropped.
3. Reported per algorithm, for ``--rounds`` rounds: the median step time of each side over all measured steps;
   the median over rounds of the per-round ratio median(ours) / median(stock); the median of
   the step-by-step paired ratios (each ours step against the stock step next to it); and the same ratio for
   process CPU time, which other processes disturb less than wall time.
4. Per-phase medians come from wrappers on the trainer instance (generation, reward scoring with our outcome
   classification, forward+loss, backward, optimizer), so a difference can be located. ``--profile`` adds a
   cProfile of one extra run of ours, listing the time spent in ``countdown_rl`` code.
5. Because the whole-step ratio cannot resolve much below +-2% on a shared 2-core machine, the two code paths
   that differ are also timed in isolation on one fixed batch (``--component-repeats``, alternating): scoring
   (``_generate_and_score_completions`` with generation replayed, so it is deterministic) and loss + backward.
   Their ours - stock difference, as a share of the stock step, is the overhead estimate with the least noise.

Rewards: a random model scores 0 on Countdown for every completion, so all advantages would be 0. TRL 1.16 does
not short-circuit anything on zero advantages (checked: ``_compute_loss`` always runs forward, loss and backward),
but a dense toy reward (share of even token ids) is added by default so the step carries a real gradient; the
Countdown reward still runs, and so does our outcome classification.

Run from the repository root: ``python benchmarks/trainer_overhead.py [--rounds 10] [--steps 10] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.ensure_repo_on_path()


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10,
                        help="rounds per algorithm (each: a fresh ours and a fresh stock trainer, in lockstep)")
    parser.add_argument("--steps", type=int, default=10, help="measured optimizer steps per run")
    parser.add_argument("--warmup", type=int, default=2, help="optimizer steps dropped at the start of each run")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 2 rounds of 3 measured steps after 1 warm-up step (overrides the three)")
    parser.add_argument("--algorithms", nargs="+", default=["grpo", "dr_grpo"],
                        choices=list(_common.STOCK_EQUIVALENT), help="algorithms to compare")
    parser.add_argument("--completions", type=int, default=16, help="completions per optimizer step")
    parser.add_argument("--num-generations", type=int, default=8, help="completions per prompt (group size)")
    parser.add_argument("--max-completion-length", type=int, default=32, help="generation budget in tokens")
    parser.add_argument("--model-size", default="test", help="countdown_rl.demo.tiny size of the random Qwen3")
    parser.add_argument("--rewards", nargs="+", default=["countdown", "dense"],
                        help="reward functions: project names (countdown, ...) and/or 'dense' (toy, dense)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads; 1 keeps OpenMP stragglers out of the timings on a shared machine "
                        "(0: torch's default)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data, the model and the trainers")
    parser.add_argument("--component-repeats", type=int, default=100,
                        help="repeats of the isolated scoring / loss timings on one fixed batch (0: skip them)")
    parser.add_argument("--profile", action="store_true",
                        help="after timing, cProfile one extra run of ours and print where countdown_rl spends time")
    parser.add_argument("--json", dest="json_out", default=None, help="also write all step times to this JSON file")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.steps, args.warmup = 2, 3, 1
        args.component_repeats = min(args.component_repeats, 5)
    if args.warmup < 1:
        parser.error("--warmup must be >= 1: the second trainer's setup overlaps the first trainer's first step")
    if args.completions % args.num_generations:
        parser.error("--completions must be a multiple of --num-generations")
    return args


class Lockstep:
    """Strict step-by-step alternation of trainers that each run ``train()`` in their own thread.

    At every ``on_step_begin`` a trainer hands the turn to the next one (after its first step) and waits for its
    own turn, so exactly one trainer works at any moment and consecutive steps alternate ours, stock, ours, ...
    Everything between two of a trainer's ``on_step_begin`` calls (its step, TRL's logging, the next batch
    fetch) runs while it holds the turn. A finished (or failed) trainer leaves the rotation.
    """

    def __init__(self, names: list[str]):
        self.names = list(names)
        self.turn = self.names[0]
        self.active = set(self.names)
        self.started: set[str] = set()
        self.cond = threading.Condition()

    def _next(self, me: str) -> str:
        i = self.names.index(me)
        for offset in range(1, len(self.names) + 1):
            name = self.names[(i + offset) % len(self.names)]
            if name in self.active:
                return name
        return me

    def step_begin(self, me: str) -> None:
        with self.cond:
            if me in self.started:
                self.turn = self._next(me)
                self.cond.notify_all()
            self.started.add(me)
            self.cond.wait_for(lambda: self.turn == me)

    def leave(self, me: str) -> None:
        with self.cond:
            self.active.discard(me)
            if self.turn == me:
                self.turn = self._next(me)
            self.cond.notify_all()

    def callback(self, me: str):
        from transformers import TrainerCallback

        lockstep = self

        class _Turns(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                lockstep.step_begin(me)

        return _Turns()


def make_trainer(kind: str, algorithm: str, args, model_dir: Path, dataset, out_dir: str, callbacks):
    """A fresh trainer (model re-loaded from disk) with the benchmark's shapes; returns (trainer, timer)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    timer = _common.StepTimer()
    trainer = _common.build_trainer(
        kind, algorithm,
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        tokenizer=AutoTokenizer.from_pretrained(model_dir),
        dataset=dataset,
        rewards=_common.reward_funcs(args.rewards),
        # the turn-taking callback goes first, so the step clock starts once the trainer holds the turn
        callbacks=[*callbacks, timer.callback()],
        output_dir=str(Path(out_dir) / kind), use_cpu=True, bf16=False, gradient_checkpointing=False,
        seed=args.seed, per_device_train_batch_size=args.completions, num_generations=args.num_generations,
        max_completion_length=args.max_completion_length, max_steps=args.warmup + args.steps,
        learning_rate=1e-5, logging_steps=1,
    )
    timer.instrument(trainer)
    return trainer, timer


def one_round(algorithm: str, order: tuple[str, ...], args, model_dir: Path, dataset, out_dir: str):
    """Train one fresh ours and one fresh stock trainer in lockstep; per kind, the step timings after warm-up."""
    lockstep = Lockstep(list(order))
    built = {kind: make_trainer(kind, algorithm, args, model_dir, dataset, out_dir, [lockstep.callback(kind)])
             for kind in order}
    errors: list[BaseException] = []

    def train(kind: str) -> None:
        try:
            built[kind][0].train()
        except BaseException as error:  # surfaced in the main thread below
            errors.append(error)
        finally:
            lockstep.leave(kind)

    threads = [threading.Thread(target=train, args=(kind,), name=f"train-{kind}") for kind in order]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return {kind: built[kind][1].measured(args.warmup) for kind in order}


def component_costs(algorithm: str, args, model_dir: Path, dataset, out_dir: str, repeats: int) -> dict:
    """Milliseconds of the two code paths that differ, timed in isolation on one fixed batch, ours vs stock.

    1. scoring: ``_generate_and_score_completions`` with generation replayed from a recording (so both sides
       score byte-identical completions and the sampling noise is gone): rewards, our outcome classification,
       advantages, metrics.
    2. loss: ``compute_loss`` + ``backward()`` on the same scored batch (our ``_compute_loss`` against TRL's).
    Calls alternate ours / stock (order flipped every repeat), ``repeats`` times each; medians are reported, and
    minima too (load from other processes only ever adds time, so the minimum is the least disturbed figure).
    """
    trainers = {kind: make_trainer(kind, algorithm, args, model_dir, dataset, out_dir, [])[0]
                for kind in _common.TRAINER_KINDS}
    groups = args.completions // args.num_generations
    inputs = [dict(row) for row in dataset.select(range(groups)) for _ in range(args.num_generations)]
    recorded = {}
    for kind, trainer in trainers.items():
        trainer.model.train()
        trainer.current_gradient_accumulation_steps = 1  # set by Trainer's loop, which is not running here
        generate = trainer._generate_single_turn

        def replay(*a, _generate=generate, **k):
            if "ids" not in recorded:
                recorded["ids"] = _generate(*a, **k)
            return recorded["ids"]

        trainer._generate_single_turn = replay
    batch = trainers["stock"]._generate_and_score_completions([dict(x) for x in inputs])
    timings = {(kind, part): [] for kind in trainers for part in ("scoring", "loss")}
    for repeat in range(repeats):
        for kind in _common.TRAINER_KINDS if repeat % 2 == 0 else _common.TRAINER_KINDS[::-1]:
            trainer = trainers[kind]
            start = time.perf_counter()
            trainer._generate_and_score_completions([dict(x) for x in inputs])
            timings[kind, "scoring"].append(time.perf_counter() - start)
            start = time.perf_counter()
            loss = trainer.compute_loss(trainer.model, batch)
            loss.backward()
            timings[kind, "loss"].append(time.perf_counter() - start)
            trainer.model.zero_grad(set_to_none=True)
            for store in trainer._metrics.values():  # keep the metric lists from growing across repeats
                store.clear()
            trainer._logs["advantages"].clear()
    result = {f"{kind}/{part}": _common.median(values) * 1e3 for (kind, part), values in timings.items()}
    result.update({f"{kind}/{part}/min": min(values) * 1e3 for (kind, part), values in timings.items()})
    return result


def profile_ours(algorithm: str, args, model_dir: Path, dataset, out_dir: str) -> str:
    """cProfile of one run of ours: cumulative time of the countdown_rl functions and of the TRL hooks we wrap."""
    import cProfile
    import io
    import pstats

    trainer, _ = make_trainer("ours", algorithm, args, model_dir, dataset, out_dir, [])
    profiler = cProfile.Profile()
    profiler.enable()
    trainer.train()
    profiler.disable()
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream).sort_stats("cumulative")
    stats.print_stats(r"countdown_rl|grpo_trainer.py.*(_calculate_rewards|_generate_and_score|_compute_loss)", 25)
    return stream.getvalue()


def print_report(results: dict, args) -> None:
    """The per-phase table, the ratios and the component costs (also stored into ``results``)."""
    print()
    headers = ["algorithm", "trainer", "step ms", "step cpu ms", "log", "generate", "rewards", "(outcomes)",
               "other scoring", "fwd+loss", "backward", "optimizer"]
    rows = []
    for algorithm, result in results.items():
        for kind, p in result["phases"].items():
            def ms(key, p=p):
                return f"{p[key] * 1e3:.1f}" if key in p else "-"
            other = p.get("gen_and_score", 0.0) - p.get("generate", 0.0) - p.get("rewards", 0.0)
            backward = p.get("train", 0.0) - p.get("loss", 0.0)
            rows.append([algorithm, kind, ms("step"), ms("step_cpu"), ms("log"), ms("generate"), ms("rewards"),
                         ms("outcomes"), f"{other * 1e3:.1f}", ms("loss"), f"{backward * 1e3:.1f}", ms("optim")])
    print(_common.markdown_table(headers, rows))
    print("\nPhase columns are medians over steps (ms); 'rewards' includes '(outcomes)', our Countdown outcome "
          "classification; 'other scoring' is the rest of _generate_and_score_completions (padding, advantages, "
          "metrics); 'backward' = training_step - scoring - fwd+loss; 'log' is TRL's logging right after the step "
          "(not in 'step').\n")
    for algorithm, result in results.items():
        lo, hi = min(result["round_ratios"]), max(result["round_ratios"])
        clo, chi = min(result["round_cpu_ratios"]), max(result["round_cpu_ratios"])
        print(f"ratio ours/stock {algorithm}: {result['ratio']:.3f} (wall; median of {len(result['round_ratios'])} "
              f"rounds, range {lo:.3f}-{hi:.3f})")
        print(f"paired-step ratio ours/stock {algorithm}: {result['paired_ratio']:.3f} (median over "
              f"{args.rounds * args.steps} adjacent step pairs)")
        print(f"cpu-time ratio ours/stock {algorithm}: {result['cpu_ratio']:.3f} (process CPU time; range "
              f"{clo:.3f}-{chi:.3f})")
    for algorithm, result in results.items():
        c = result["components_ms"]
        if not c:
            continue
        extra = (c["ours/scoring"] - c["stock/scoring"]) + (c["ours/loss"] - c["stock/loss"])
        extra_min = (c["ours/scoring/min"] - c["stock/scoring/min"]) + (c["ours/loss/min"] - c["stock/loss/min"])
        stock_step = result["phases"]["stock"]["step"] * 1e3
        result["component_overhead"] = extra / stock_step
        print(f"components {algorithm} (fixed batch, median of {args.component_repeats}, ms): scoring ours "
              f"{c['ours/scoring']:.2f} stock {c['stock/scoring']:.2f}; loss+backward ours {c['ours/loss']:.2f} "
              f"stock {c['stock/loss']:.2f}; extra {extra:+.2f} ms per step = {100 * extra / stock_step:+.2f}% "
              f"of the stock step (from minima: {extra_min:+.2f} ms = {100 * extra_min / stock_step:+.2f}%)")


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    from countdown_rl.demo.tiny import save_tiny_model

    _common.quiet_hf()
    if args.threads:
        torch.set_num_threads(args.threads)
    workdir = tempfile.mkdtemp(prefix="trainer_overhead_")
    model_dir = save_tiny_model(Path(workdir) / "model", size=args.model_size, seed=args.seed)
    n_prompts = args.completions // args.num_generations * (args.warmup + args.steps)
    dataset = _common.countdown_dataset(max(n_prompts, 8), seed=args.seed)
    print(f"# trainer overhead: {args.completions} completions/step ({args.completions // args.num_generations} "
          f"prompts x {args.num_generations}), max_completion_length {args.max_completion_length}, "
          f"tiny Qwen3 '{args.model_size}', rewards {args.rewards}, torch threads {torch.get_num_threads()}, "
          f"{args.rounds} rounds x {args.steps} steps (+{args.warmup} warm-up)", flush=True)

    results: dict[str, dict] = {}
    started = time.perf_counter()
    for algorithm in args.algorithms:
        runs = {kind: [] for kind in _common.TRAINER_KINDS}
        ratios, cpu_ratios = [], []
        for round_index in range(args.rounds):
            order = _common.TRAINER_KINDS if round_index % 2 == 0 else _common.TRAINER_KINDS[::-1]
            for kind, steps in one_round(algorithm, order, args, model_dir, dataset, workdir).items():
                runs[kind].append(steps)
            ours = _common.median(s["step"] for s in runs["ours"][-1])
            stock = _common.median(s["step"] for s in runs["stock"][-1])
            ours_cpu = _common.median(s["step_cpu"] for s in runs["ours"][-1])
            stock_cpu = _common.median(s["step_cpu"] for s in runs["stock"][-1])
            ratios.append(ours / stock)
            cpu_ratios.append(ours_cpu / stock_cpu)
            print(f"  {algorithm} round {round_index + 1}/{args.rounds}: wall ours {ours * 1e3:.1f} ms, "
                  f"stock {stock * 1e3:.1f} ms, ratio {ours / stock:.3f}; cpu ratio {ours_cpu / stock_cpu:.3f}",
                  flush=True)
        paired = [o["step"] / t["step"] for ours_run, stock_run in zip(runs["ours"], runs["stock"])
                  for o, t in zip(ours_run, stock_run)]
        components = (component_costs(algorithm, args, model_dir, dataset, workdir, args.component_repeats)
                      if args.component_repeats else {})
        results[algorithm] = {
            "components_ms": components,
            "ratio": _common.median(ratios),
            "paired_ratio": _common.median(paired),
            "round_ratios": ratios,
            "cpu_ratio": _common.median(cpu_ratios),
            "round_cpu_ratios": cpu_ratios,
            "phases": {kind: _common.phase_medians([s for run in runs[kind] for s in run]) for kind in runs},
            "steps": runs,
        }

    print_report(results, args)
    print(f"# total {time.perf_counter() - started:.0f} s")

    if args.profile:
        for algorithm in args.algorithms:
            print(f"\n# cProfile of one run of ours ({algorithm}), countdown_rl and wrapped TRL hooks:")
            print(profile_ours(algorithm, args, model_dir, dataset, workdir))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"args": vars(args), "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    from countdown_rl.generation.vllm_import import leave_vllm_out

    leave_vllm_out()  # nothing here generates with vLLM: its engine stays out of this process
    sys.exit(main())
