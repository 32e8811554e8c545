"""One flag style for every ``countdown-rl`` command, and the forms of ``--budget_schedule``.

1. Every multi-word long option of every command's parser takes both spellings, ``--snake_case`` and
   ``--snake-case``, and both parse to the same values (``--x`` / ``--no_x`` switches: each form in both spellings).
2. ``--help`` shows one spelling per option, the snake_case one; extra long aliases are accepted, not shown.
   Renamed options (README, "Renamed options"): every old spelling still parses, to the new option, with one
   warning line, and ``--help`` shows only the new one.
3. ``eval``'s data flags are the recipe parser's own (``HfArgumentParser`` from ``DataArguments``), so ``eval``
   holds out what ``train`` held out.
4. ``--budget_schedule``: ``0:8 2:16``, ``"[[0, 8], [2, 16]]"`` and the recipe's YAML list give one schedule; a
   malformed one is one error line naming the forms.

The parsers are built in process (``build_parser()`` of each command module; ``train``'s imports TRL once).
"""

from __future__ import annotations

import argparse
import re
from functools import cache
from importlib import import_module

import pytest

from countdown_rl.cli import COMMANDS

from tests.helpers.env import ROOT
SMOKE = ROOT / "recipes" / "smoke" / "cpu_tiny.yaml"


@cache
def parser_of(command: str) -> argparse.ArgumentParser:
    module = import_module(COMMANDS[command][0].split(":")[0])
    return module.build_parser()


def snake(option: str) -> str:
    return "--" + option[2:].replace("-", "_")


def spellings(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.Action, set[str]]]:
    """Every multi-word long option as ``{snake spelling: (its action, its spellings)}``."""
    found: dict[str, tuple[argparse.Action, set[str]]] = {}
    for action in parser._actions:
        for option in action.option_strings:
            if option.startswith("--") and re.search(r"\w[_-]\w", option):
                found.setdefault(snake(option), (action, set()))[1].add(option)
    return found


def value_for(action: argparse.Action) -> list[str] | None:
    """A value the option accepts, as typed on a command line (its own type function says which); None for an
    option no text can set (TrainingArguments' ``parallelism_config`` takes an object)."""
    if action.nargs == 0:
        return []
    if action.choices:
        return [str(next(iter(action.choices)))]
    for text in ("3", "0.5", "true", "x", ""):
        try:
            (action.type or str)(text)
        except (TypeError, ValueError, argparse.ArgumentTypeError):
            continue
        return [text]
    return None


def required_argv(parser: argparse.ArgumentParser) -> list[str]:
    """The positionals and required options, each with a value: what every test command line starts with."""
    positionals = [v for a in parser._actions if not a.option_strings for v in value_for(a)]
    required = [v for a in parser._actions if a.option_strings and a.required
                for v in (a.option_strings[0], *value_for(a))]
    return positionals + required


def spelling_problems(parser: argparse.ArgumentParser, option: str) -> str | None:
    """What is wrong with how ``option`` (snake_case) and its hyphenated spelling parse; None: nothing."""
    action, spelled = spellings(parser)[option]
    hyphenated = "--" + option[2:].replace("_", "-")
    if spelled != {option, hyphenated}:
        return f"spelled {sorted(spelled)}"
    if value_for(action) is None:  # nothing can be parsed: both spellings must name the one option
        same = parser._option_string_actions[option] is parser._option_string_actions[hyphenated]
        return None if same else "two options"
    parsed = []
    for spelling in (option, hyphenated):
        namespace, rest = parser.parse_known_args([*required_argv(parser), spelling, *value_for(action)])
        if rest:
            return f"{spelling} not taken: {rest}"
        parsed.append(vars(namespace))
    return None if parsed[0] == parsed[1] else f"different values: {parsed[0]} != {parsed[1]}"


# One case per command, over all its options (train has ~300; a case each would cost more than the parsing).
@pytest.mark.parametrize("command", list(COMMANDS))
def test_both_spellings_parse_to_the_same_value(command):
    parser = parser_of(command)
    problems = {option: problem for option in spellings(parser) if (problem := spelling_problems(parser, option))}
    assert not problems, problems


def test_switches_take_both_forms_in_both_spellings():
    parser = parser_of("eval")
    base = required_argv(parser)
    for argv, value in [(["--enable_thinking"], True), (["--enable-thinking"], True),
                        (["--no_enable_thinking"], False), (["--no-enable-thinking"], False), ([], None)]:
        assert parser.parse_args([*base, *argv]).enable_thinking is value
    push = parser_of("push")
    assert push.parse_args([*required_argv(push), "--no_private"]).private is False
    assert push.parse_args([*required_argv(push), "--no-private"]).private is False


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_shows_one_spelling_per_option(command):
    parser = parser_of(command)
    text = parser.format_help()
    shown = set(re.findall(r"(?<![\w-])--\w+(?:-\w+)*", text))
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        longs = [option for option in action.option_strings if option.startswith("--")]
        expected = {longs[0]}
        if isinstance(action, argparse.BooleanOptionalAction):  # --x / --no_x: one spelling of each form
            expected.add(f"--no_{longs[0][2:]}")
        assert all(option == snake(option) for option in expected), expected
        assert set(longs) & shown == expected, f"{command}: {action.option_strings}"


def test_eval_hides_its_short_aliases_but_takes_them(capsys):
    parser = parser_of("eval")
    argv = [*required_argv(parser), "--dataset", "rows.jsonl", "--template", "plain"]
    args = parser.parse_args(argv)
    assert (args.dataset_name, args.prompt_template) == ("rows.jsonl", "plain")
    assert not re.search(r"--(dataset|template)\b(?!_)", parser.format_help())
    assert capsys.readouterr().err.splitlines() == [  # deprecated since the recipe's names became the flags
        f"countdown-rl eval: warning: --{old} is deprecated, use --{new} (the old spelling goes in the next release)"
        for old, new in (("dataset", "dataset_name"), ("template", "prompt_template"))]


def test_eval_data_flags_are_the_recipe_parsers():
    from dataclasses import fields

    from countdown_rl.data.arguments import DataArguments

    def data_actions(parser):
        by_dest = {a.dest: a for a in parser._actions}
        return {f.name: by_dest[f.name] for f in fields(DataArguments)}

    train, evaluate = data_actions(parser_of("train")), data_actions(parser_of("eval"))
    for name, action in train.items():
        other = evaluate[name]
        assert other.option_strings[:2] == action.option_strings[:2], name
        assert (other.default, other.nargs, other.choices, other.help) == (
            action.default, action.nargs, action.choices, action.help), name
        assert getattr(other.type, "__name__", None) == getattr(action.type, "__name__", None), name


# ---------------------------------------------------------------------------------------------------------------
# budget_schedule
# ---------------------------------------------------------------------------------------------------------------


def test_the_three_schedule_forms_give_one_schedule(tmp_path):
    from countdown_rl.training.recipe import parse_args

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(SMOKE.read_text() + "budget_schedule: [[0, 8], [2, 16]]\n")
    schedules = [
        parse_args(["--config", str(SMOKE), "--budget_schedule", "0:8", "2:16"])[1].budget_schedule,
        parse_args(["--config", str(SMOKE), "--budget_schedule", "[[0, 8], [2, 16]]"])[1].budget_schedule,
        parse_args(["--config", str(recipe)])[1].budget_schedule,
    ]
    assert schedules == [[[0, 8], [2, 16]]] * 3


@pytest.mark.parametrize("bad", [["[[0, 8], [2, 16]"], ["[[0, 8], [2, x]]"], ["0-8", "2-16"]])
def test_a_malformed_schedule_is_one_line_naming_the_forms(bad, capsys):
    from countdown_rl.commands.train import main

    assert main(["--config", str(SMOKE), "--budget_schedule", *bad]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("countdown-rl train: error: ")
    assert "budget_schedule" in err and "0:8 2:16" in err and "[[0, 8], [2, 16]]" in err


def test_a_deprecated_spelling_still_parses_and_says_so_in_one_line(capsys):
    from countdown_rl.commands.one_line import OneLineArgumentParser

    parser = OneLineArgumentParser(prog="countdown-rl x")
    parser.add_argument("--max_steps", type=int, deprecated=["--grpo_steps"])
    assert parser.parse_args(["--grpo-steps=3"]).max_steps == 3
    assert capsys.readouterr().err == ("countdown-rl x: warning: --grpo-steps is deprecated, use --max_steps (the old "
                                       "spelling goes in the next release)\n")
    assert parser.parse_args(["--max_steps", "4"]).max_steps == 4
    assert capsys.readouterr().err == ""
    assert "grpo" not in parser.format_help()


# (command, old spelling, new option, a value): every renamed option of every command (README, "Renamed options").
RENAMED = [
    ("eval", "--model", "--model_name_or_path", ["m"]),
    ("eval", "--max_tokens", "--max_completion_length", ["8", "16"]),
    ("eval", "--num_puzzles", "--num_rows", ["5"]),
    ("eval", "--dataset", "--dataset_name", ["rows.jsonl"]),
    ("eval", "--template", "--prompt_template", ["plain"]),
    ("demo", "--model", "--model_name_or_path", ["smollm2"]),
    ("demo", "--grpo_steps", "--max_steps", ["7"]),
    ("warmup", "--model", "--model_name_or_path", ["m"]),
    ("warmup", "--out", "--output_dir", ["w"]),
    ("warmup", "--steps", "--max_steps", ["3"]),
    ("warmup", "--rows", "--num_rows", ["9"]),
    ("warmup", "--template", "--prompt_template", ["chat"]),
    ("generate", "--out", "--output_file", ["rows.jsonl"]),
    ("report", "--out", "--output_dir", ["r"]),
]


def test_the_renamed_table_is_every_deprecated_spelling():
    from countdown_rl.commands.one_line import deprecated_spellings

    declared = {(command, old, new) for command in COMMANDS
                for old, new in deprecated_spellings(parser_of(command)).items()}
    listed = {(command, spelling, new) for command, old, new, _ in RENAMED
              for spelling in {old, "--" + old[2:].replace("_", "-")}}
    assert declared == listed


@pytest.mark.parametrize("hyphenated", [False, True], ids=["snake", "hyphen"])
@pytest.mark.parametrize(("command", "old", "new", "value"), RENAMED, ids=[f"{c}{o}" for c, o, _, _ in RENAMED])
def test_an_old_spelling_parses_to_the_new_option_with_one_warning(command, old, new, value, hyphenated, capsys):
    parser = parser_of(command)
    spelled = "--" + old[2:].replace("_", "-") if hyphenated else old
    base = list(required_argv(parser))
    required = {o for a in parser._actions if a.required for o in a.option_strings}
    if new in required:  # the renamed option is the required one: given once, in its old spelling
        at = base.index(new)
        del base[at:at + 2]
    args = parser.parse_args([*base, spelled, *value])
    dest = parser._option_string_actions[new].dest
    expected = parser.parse_args([*base, new, *value])
    assert getattr(args, dest) == getattr(expected, dest) and vars(args) == vars(expected)
    assert dest == new[2:]  # the value lands in the new name's attribute
    assert capsys.readouterr().err == (f"{parser.prog}: warning: {spelled} is deprecated, use {new} "
                                       "(the old spelling goes in the next release)\n")


@pytest.mark.parametrize("command", sorted({c for c, _, _, _ in RENAMED}))
def test_help_shows_only_the_new_spellings(command):
    text = parser_of(command).format_help() + parser_of(command).format_usage()
    for c, old, new, _ in RENAMED:
        if c == command:
            assert new in text, new
            assert not re.search(rf"(?<![\w-]){re.escape(old)}(?![\w-])", text), old
            assert not re.search(rf"(?<![\w-]){re.escape('--' + old[2:].replace('_', '-'))}(?![\w-])", text), old
