"""The README is the front door: its test command is the one CI runs, and every command in it (and in docs/ and the
commands' --help examples) works as written, as far as can be checked offline: the extras it installs exist, the
files and recipes it names exist, and every ``countdown-rl`` flag is accepted by its command's parser."""

import re
import subprocess
import sys
from functools import cache
from importlib import import_module

import pytest

from tests.helpers.env import ROOT

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Top-level folders of the repository: a code token starting with one is a path that must exist.
REPO_FOLDERS = ("recipes", "accelerate_configs", "slurm", "scripts", "benchmarks", "docs", "countdown_rl", "tests")


def _bash_blocks(text):
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def _expand_loops(block: str) -> str:
    """A block's ``for x in a b; do ... $x ...; done`` loops written out once per value (so paths built from the
    loop variable can be checked)."""
    def expand(match):
        var, values, body = match.group(1), match.group(2).split(), match.group(3)
        return "\n".join(re.sub(rf"\${{?{var}}}?", value, body) for value in values)

    return re.sub(r"for (\w+) in ([^;\n]+); do\n(.*?)\ndone", expand, block, flags=re.S)


def _code(text: str) -> list[str]:
    """The text's code, one piece per inline span and per bash line (continuations joined, loops written out)."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    spans = [span.replace("\n", " ") for span in re.findall(r"(?<!`)`([^`]+)`(?!`)", prose)]
    lines = [line for block in _bash_blocks(text) for line in _expand_loops(block.replace("\\\n", " ")).splitlines()]
    return spans + lines


def test_ci_runs_exactly_the_readme_test_command():
    """Both tiers: the default one (pyproject's addopts leave out the slow tier), then ``-m slow``."""
    readme_blocks = _bash_blocks((ROOT / "README.md").read_text())
    test_commands = next(block.strip() for block in readme_blocks if "pytest" in block).splitlines()
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_commands == [line for line in ci_lines if line.startswith("python -m pytest")]
    assert test_commands == ["python -m pytest -q", "python -m pytest -q -m slow"]
    pyproject = (ROOT / "pyproject.toml").read_text()  # (no tomllib on Python 3.10)
    assert "\naddopts = \"-m 'not slow' " in pyproject and '\n    "slow: ' in pyproject


def test_cli_help_lists_the_commands_without_importing_torch_or_trl():
    out = subprocess.run([sys.executable, "-m", "countdown_rl.cli", "--help"], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    for command in ("train", "eval", "report", "demo", "generate", "verify"):
        assert re.search(rf"^\s+{command}\s", out.stdout, flags=re.M), command
    # --help stays fast because nothing heavy is imported (importing trl alone costs ~5 s)
    probe = (
        "import sys\nfrom countdown_rl import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('torch', 'trl', 'transformers', 'datasets') if m in sys.modules))"
    )
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert res.stdout.strip().splitlines()[-1] == "[]"


def test_generate_and_verify_commands(tmp_path):
    out = tmp_path / "p.jsonl"
    subprocess.run([sys.executable, "-m", "countdown_rl.cli", "generate", "5", "--output_file", str(out), "--seed", "3"],
                   check=True, cwd=ROOT, capture_output=True)
    assert len(out.read_text().splitlines()) == 5
    res = subprocess.run(
        [sys.executable, "-m", "countdown_rl.cli", "verify", "--nums", "7", "7", "65", "--target", "51",
         "<think>hm</think><answer>(65 - 7) - 7</answer>"],
        check=True, cwd=ROOT, capture_output=True, text=True,
    )
    assert '"outcome": "correct"' in res.stdout and '"reward": 1.0' in res.stdout
    bad = subprocess.run([sys.executable, "-m", "countdown_rl.cli", "generate", "0", "--output_file", str(out)], cwd=ROOT,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "n must be positive" in bad.stderr


def _command_lines(text):
    """Every ``countdown-rl <command> ...`` (and ``-m countdown_rl.commands.train ...``) in the text's code (inline
    spans and bash blocks) as (command, tokens)."""
    for piece in _code(text):
        for found in re.finditer(r"(?:countdown-rl (\w+)|-m countdown_rl\.commands\.(train))((?:\s+[^\s&|;#]+)*)",
                                 piece):
            yield found.group(1) or found.group(2), found.group(3).split()


def test_the_docs_use_the_new_option_names_and_the_changelog_lists_the_old_ones():
    from importlib import import_module

    from countdown_rl.cli import COMMANDS
    from countdown_rl.commands.one_line import deprecated_spellings

    old = {command: deprecated_spellings(import_module(COMMANDS[command][0].split(":")[0]).build_parser())
           for command in ("eval", "demo", "warmup", "generate")}
    changelog = (ROOT / "CHANGELOG.md").read_text()
    for path in (*DOCUMENTS, ROOT / "benchmarks" / "RESULTS.md"):
        used = [(command, token) for command, tokens in _command_lines(path.read_text()) for token in tokens
                if token.split("=")[0] in old.get(command, {})]
        assert not used, f"{path.name}: {used}"
    renamed = changelog[changelog.index("Renamed options"):]
    for spellings in old.values():
        for spelling, new in spellings.items():
            if "-" not in spelling[2:]:  # the table lists the snake_case spelling
                assert f"`{spelling}`" in renamed and f"`{new}`" in renamed, spelling


def test_the_readme_keeps_one_command_each_to_set_up_run_the_demo_and_test():
    lines = [line.strip() for block in _bash_blocks((ROOT / "README.md").read_text()) for line in block.splitlines()]
    setup = [line for line in lines if line.startswith("python3 -m venv .venv") and 'pip install -e ".[test]"' in line]
    assert len(setup) == 1 and "torch==2.13.0" in setup[0]
    assert "countdown-rl demo" in lines
    assert "python -m pytest -q" in lines


def _extras() -> set[str]:
    """pyproject.toml's extras (no tomllib on Python 3.10: its [project.optional-dependencies] table's keys)."""
    table = (ROOT / "pyproject.toml").read_text().split("[project.optional-dependencies]\n", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([\w-]+) = \[", table, flags=re.M))


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_extra_installed_exists(path):
    named = {extra for piece in _code(path.read_text()) for group in re.findall(r"\.\[([\w,-]+)\]", piece)
             for extra in group.split(",")}
    assert named <= _extras(), sorted(named - _extras())
    if path == ROOT / "README.md":  # the GPU section installs vLLM and the logger its recipes report to
        assert {"test", "vllm", "tensorboard"} <= named


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_and_recipe_named_exists(path):
    tokens = [token.strip("'\",:;()") for piece in _code(path.read_text()) for token in piece.split()]
    paths = [t for t in tokens if t.split("/")[0] in REPO_FOLDERS and "/" in t and not re.search(r"[<>*$]", t)]
    recipes = {p.name for p in (ROOT / "recipes").rglob("*.yaml")}
    missing = [t for t in paths if not (ROOT / t).exists()]
    if path == ROOT / "README.md":  # its recipe table names recipes by file name
        missing += [t for t in tokens if re.fullmatch(r"[\w.-]+\.yaml", t) and t not in recipes | {"spec.yaml"}]
    assert not missing, missing


@cache
def _options(command: str) -> frozenset[str]:
    """Every option string ``countdown-rl COMMAND`` accepts (train: also TRL's --config)."""
    from countdown_rl.cli import COMMANDS

    parser = import_module(COMMANDS[command][0].split(":")[0]).build_parser()
    return frozenset(parser._option_string_actions) | ({"--config"} if command == "train" else set())


def _unknown_flags(text: str) -> list[str]:
    from countdown_rl.cli import COMMANDS

    wrong = []
    for command, tokens in _command_lines(text):
        if command not in COMMANDS:
            wrong.append(f"countdown-rl {command}: no such command")
            continue
        wrong += [f"countdown-rl {command} {token}" for token in tokens
                  if token.startswith("--") and token.split("=")[0] not in _options(command)]
    return wrong


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_countdown_rl_flag_in_the_docs_is_accepted(path):
    assert not _unknown_flags(path.read_text())


def test_every_help_example_is_a_command_with_flags_it_accepts():
    from countdown_rl.cli import COMMANDS, EXAMPLES

    examples = [EXAMPLES]
    for command in COMMANDS:
        epilog = import_module(COMMANDS[command][0].split(":")[0]).build_parser().epilog
        assert epilog and epilog.startswith("examples:\n"), command
        examples.append(epilog)
    # each example: two spaces, the command line, then (after two or more spaces) what it does
    lines = [re.split(r"\s{2,}", line.strip())[0] for epilog in examples for line in epilog.splitlines()[1:]
             if line.startswith("  ")]
    text = "\n".join(f"`{line}`" for line in lines)
    assert not _unknown_flags(text)
