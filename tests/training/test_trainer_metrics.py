"""The README's Python quick start runs as written (on the tiny model, one step), and every metric the trainer logs
beside stock TRL's is explained on docs/metrics.md: the keys one real step logs that a stock ``GRPOTrainer`` step
does not, and every key the package's code names (the task rewards' keys, such as ``countdown/malformed_rows``, are
logged by stock TRL too when it is given our rewards, so only the second test sees them)."""

from __future__ import annotations

import os
import re

import pytest

from tests.helpers.env import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
METRICS_PAGE = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
# One tiny CPU step, whatever the quick start's own settings (its model and budget are a real run's).
TINY = dict(max_steps=1, per_device_train_batch_size=8, num_generations=4, use_cpu=True, bf16=False, report_to="none",
            logging_steps=1, save_strategy="no", seed=0)


def quick_start() -> str:
    """The README's one Python block."""
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert len(blocks) == 1
    return blocks[0]


def _documented(key: str) -> bool:
    return f"`{key}`" in METRICS_PAGE


@pytest.fixture(scope="module")
def quick_start_run(tiny_model_dir, tmp_path_factory, one_torch_thread):
    """The quick start, run in a fresh folder with the tiny model, 8-token completions and one step (plus
    ``skip_zero_advantage``, so that its metric is logged too)."""
    code = quick_start()
    assert code.count('"Qwen/Qwen3-0.6B"') == 1 and code.count("max_completion_length=256") == 1
    code = code.replace('"Qwen/Qwen3-0.6B"', repr(str(tiny_model_dir)))
    code = code.replace("max_completion_length=256", "max_completion_length=8, skip_zero_advantage=True, **TINY")
    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("quickstart"))
    try:
        scope = {"TINY": TINY}
        exec(compile(code, "README.md (quick start)", "exec"), scope)
    finally:
        os.chdir(here)
    return scope


@pytest.fixture(scope="module")
def stock_keys(quick_start_run, tiny_model_dir, tmp_path_factory):
    """What stock TRL logs for the same step (Dr.GRPO's loss and scaling under TRL's names)."""
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(output_dir=str(tmp_path_factory.mktemp("stock")), loss_type="dr_grpo", scale_rewards="none",
                      max_completion_length=8, **TINY)
    trainer = GRPOTrainer(model=str(tiny_model_dir), args=args, train_dataset=quick_start_run["dataset"],
                          reward_funcs=quick_start_run["task"].get_reward_funcs(["countdown"]))
    trainer.train()
    return {key for entry in trainer.state.log_history for key in entry}


def test_the_readme_quick_start_trains_with_our_trainer(quick_start_run):
    from countdown_rl import CountdownGRPOTrainer

    trainer = quick_start_run["trainer"]
    assert isinstance(trainer, CountdownGRPOTrainer) and trainer.args.algorithm == "dr_grpo"
    assert trainer.state.global_step == 1
    assert len(quick_start().strip().splitlines()) <= 12


def test_every_metric_a_step_logs_beside_trl_is_on_the_metrics_page(quick_start_run, stock_keys):
    ours = {key for entry in quick_start_run["trainer"].state.log_history for key in entry} - stock_keys
    assert {"outcomes/correct", "advantages/frac_zero_std_groups", "completion_budget", "skipped_completions"} <= ours
    assert [key for key in sorted(ours) if not _documented(key)] == []


def _named_in_the_code() -> set[str]:
    """Every metric key the package's source names: trainer metrics, reward-logged metrics, added log entries."""
    names = set()
    for path in (ROOT / "countdown_rl").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        names |= set(re.findall(r"_metrics\[[^\]]+\]\[f?\"([^\"{]+)\"\]", text))
        names |= set(re.findall(r"_METRIC = \"([^\"]+)\"", text))
        names |= set(re.findall(r"log_metric\(\"([^\"]+)\"", text))
        names |= set(re.findall(r"\blogs\[\"([^\"]+)\"\] =", text))
    return names


def test_every_metric_the_code_names_is_on_the_metrics_page():
    import torch

    from countdown_rl.algorithms.grpo import advantage_stats
    from countdown_rl.evaluation.scoring import outcome_metrics, summarise

    named = _named_in_the_code()
    assert {"generation/compile_seconds", "math/timeouts", "non_finite_skipped", "skipped_completions"} <= named
    named |= {f"advantages/{key}" for key in advantage_stats(torch.zeros(2), torch.zeros(2), 2)}
    row = {"outcome": "correct", "num_tokens": 3, "truncated": False, "sample_index": 0}
    named |= {f"eval_{key}" for key in outcome_metrics(summarise([row], 8))}
    assert [key for key in sorted(named) if not _documented(key)] == []
