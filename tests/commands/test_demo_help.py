"""``countdown-rl demo --help``: every option gives its default, and a setting's default is given for each demo (the
tiny one, the real model on Countdown and on another task), read from their configs, so the help cannot drift from
what runs."""

from __future__ import annotations

import re

import pytest

from countdown_rl.commands import demo as demo_cli
from countdown_rl.demo.config import DemoConfig
from countdown_rl.demo.pretrained import TASK_LORA_LEARNING_RATE, TASK_SIZED, pretrained_config

# flag -> how a DemoConfig holds its setting
SETTINGS = {
    "--sft_steps": lambda c: c.sft_steps,
    "--max_steps": lambda c: c.max_steps,
    "--temperature": lambda c: c.temperature,
    "--dynamic_sampling": lambda c: c.dynamic_sampling,
    "--dynamic_sampling_max_rounds": lambda c: c.dynamic_sampling_max_rounds,
    "--num_eval": lambda c: c.puzzles.num_eval,
    "--pass_k": lambda c: c.pass_k,
    "--learning_rate": lambda c: c.grpo_learning_rate,
    "--prompts_per_step": lambda c: c.prompts_per_step,
    "--num_generations": lambda c: c.num_generations,
    "--num_threads": lambda c: c.num_threads,
    "--seed": lambda c: c.seed,
}


def _helps() -> dict[str, str]:
    parser = demo_cli.build_parser()
    formatter = parser._get_formatter()
    return {action.option_strings[0]: formatter._expand_help(action) for action in parser._actions
            if action.option_strings and action.help}


def test_every_option_gives_its_default():
    missing = [flag for flag, text in _helps().items() if flag != "-h" and "Default" not in text]
    assert not missing, missing


@pytest.mark.parametrize("flag", sorted(SETTINGS))
def test_a_settings_help_gives_each_demos_default(flag):
    get, text = SETTINGS[flag], _helps()[flag]
    tiny = get(DemoConfig())
    countdown, task = get(pretrained_config("smollm2")), get(pretrained_config("smollm2", task="reasoning_gym"))
    gpu = r"( \([^)]* on a GPU\))?"  # a GPU's value where it differs
    assert f"Default: {demo_cli.shown(tiny)}" in text, text
    if countdown != task:
        assert re.search(rf"{re.escape(demo_cli.shown(countdown))}{gpu} on Countdown", text), text
        assert re.search(rf"{re.escape(demo_cli.shown(task))}{gpu} on another task", text), text
    elif countdown != tiny:
        assert f"with --model_name_or_path {demo_cli.shown(countdown)}" in text, text


def test_the_real_model_on_another_task_runs_its_own_sizes():
    """The sizes the real-model demo runs on another task (pretrained.TASK_SIZED), as --help gives them."""
    helps = _helps()
    for flag, key in (("--sft_steps", "sft_steps"), ("--max_steps", "max_steps"),
                      ("--prompts_per_step", "prompts_per_step"), ("--pass_k", "pass_k")):
        assert f"{TASK_SIZED[key]} on another task" in helps[flag], helps[flag]
    assert f"{TASK_SIZED['puzzles'].num_eval} on another task" in helps["--num_eval"]
    assert f"{demo_cli.shown(TASK_SIZED['temperature'])} on another task" in helps["--temperature"]
    assert f"{demo_cli.shown(TASK_LORA_LEARNING_RATE)} with --lora" in helps["--learning_rate"]


def test_the_help_quotes_no_memory_figure_and_links_to_the_table():
    helps = _helps()
    for flag in ("--jobs", "--model_name_or_path", "--gradient_checkpointing"):
        assert demo_cli.FIGURES in helps[flag], helps[flag]


def test_the_commands_doctests():
    import doctest

    assert doctest.testmod(demo_cli).failed == 0
