"""``countdown-rl train --help`` is the reference docs/configuration.md points to: it lists every recipe key and
``--config``, each key's default once (``(default: X)`` or the help's own words, never both), no ``None`` among the
choices, and where our help names a default in words, that is the value the config settles to."""

from __future__ import annotations

import re

import pytest
import yaml

from countdown_rl.commands.train import build_parser
from countdown_rl.training.recipe import ScriptArguments, recipe_keys
from tests.helpers.env import ROOT

# A default said in words ("Default: group_mean.", "defaults to `True`", "If `None` (default), ..."), written here
# independently of the formatter's own rule.
SAYS_DEFAULT = re.compile(r"Default:|defaults to|defaults based|\(default\)|\(the default\)|\(default \d|"
                          r"\(default: the|by default|the default of", re.IGNORECASE)


def _value(word: str):
    """A default as written in help: a number (``1e-4``, which YAML reads as a string) or a YAML scalar."""
    try:
        return float(word) if re.fullmatch(r"[\d.]+e[+-]?\d+", word) else yaml.safe_load(word)
    except ValueError:
        return word


@pytest.fixture(scope="module")
def parser():
    return build_parser()


def _blocks(help_text: str) -> dict[str, str]:
    """Each option's entry in --help: its first flag -> the entry's text (joined lines)."""
    options = help_text.split("\noptions:\n", 1)[1].split("\nexamples:\n", 1)[0]
    blocks: dict[str, str] = {}
    for entry in re.split(r"\n(?=  -)", options):
        flag = entry.split()[0]
        blocks.setdefault(flag, " ".join(entry.split()))
    return blocks


def test_help_lists_config_and_every_recipe_key(parser):
    text = parser.format_help()
    blocks = _blocks(text)
    assert list(blocks)[:2] == ["-h,", "--config"]
    assert "[--config RECIPE.yaml]" in text.split("\n\n", 1)[0]  # in the usage line too
    assert {f"--{key}" for key in recipe_keys()} <= set(blocks)
    claim = (ROOT / "docs" / "configuration.md").read_text()
    assert "`countdown-rl train --help` lists every key with its default" in " ".join(claim.split())


def test_each_key_shows_its_default_once_and_no_none_choice(parser):
    blocks = _blocks(parser.format_help())
    twice, none_choice, without = [], [], []
    for flag, text in blocks.items():
        if flag.startswith("-h"):
            continue
        shown = text.count("(default: ") - text.count("(default: the")
        if shown and SAYS_DEFAULT.search(text.rsplit("(default: ", 1)[0]):
            twice.append(text)
        if not shown and not SAYS_DEFAULT.search(text):
            without.append(text)
        if re.search(r"[{,]None[,}]", text):
            none_choice.append(flag)
    assert not twice, twice[:5]
    assert not without, without[:5]
    assert not none_choice
    assert not [a.dest for a in parser._actions if a.choices and None in a.choices]


def test_a_default_said_in_words_is_the_one_the_config_settles_to(parser, tmp_path):
    """Our keys whose help says ``Default: <value>.``: that value is what an empty recipe ends up with."""
    from countdown_rl.training.config import CountdownGRPOConfig

    config = CountdownGRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none")
    script = ScriptArguments()
    ours = {a.dest: a for a in parser._actions if a.dest in ScriptArguments.__dataclass_fields__
            or a.dest in CountdownGRPOConfig.__dataclass_fields__}
    checked = {}
    for dest, action in ours.items():
        said = re.search(r"Default: ([\w.+-]+)(?:\.| \()", action.help or "")
        if said is None or said.group(1) in ("none", "the"):
            continue
        settled = getattr(config if hasattr(config, dest) else script, dest)
        checked[dest] = (_value(said.group(1)), settled)
    assert {"advantage_eps", "baseline"} <= set(checked)
    assert all(said == settled for said, settled in checked.values()), checked
