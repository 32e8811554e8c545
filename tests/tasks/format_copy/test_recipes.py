"""The format-copy recipe is a CPU run on generated rows and passes the strict parser and checks."""

from __future__ import annotations

from tests.helpers.env import ROOT
from tests.helpers.recipes import parse

FORMAT_COPY = ROOT / "recipes" / "format_copy" / "cpu_tiny.yaml"


def test_format_copy_recipe_is_a_cpu_run_on_generated_rows():
    s, t, m = parse(FORMAT_COPY, cpu=False)
    assert (s.task, s.dataset_name, s.reward_funcs) == ("format_copy", "generated", ["format_copy"])
    assert t.use_cpu is True and t.bf16 is False and t.use_vllm is False
    assert m.model_name_or_path == "outputs/format-copy-warm"  # made by `countdown-rl warmup` (README)
