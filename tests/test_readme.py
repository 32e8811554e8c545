"""The README is the front door: its test command is the one CI runs, and its commands exist."""

import re
import subprocess
import sys

from tests.helpers.env import ROOT


def _bash_blocks(text):
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def test_ci_runs_exactly_the_readme_test_command():
    """Both tiers: the default one (pyproject's addopts leave out the slow tier), then ``-m slow``."""
    readme_blocks = _bash_blocks((ROOT / "README.md").read_text())
    test_commands = next(block.strip() for block in readme_blocks if "pytest" in block).splitlines()
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_commands == [line for line in ci_lines if line.startswith("python -m pytest")]
    assert test_commands == ["python -m pytest -q", "python -m pytest -q -m slow"]
    pyproject = (ROOT / "pyproject.toml").read_text()  # (no tomllib on Python 3.10)
    assert "\naddopts = \"-m 'not slow'\"\n" in pyproject and '\n    "slow: ' in pyproject


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
    """Every ``countdown-rl <command> ...`` in the text's code (inline spans and bash blocks) as (command, tokens)."""
    code = [span.replace("\n", " ") for span in re.findall(r"(?<!`)`([^`]+)`(?!`)", text)]
    code += [line for block in _bash_blocks(text) for line in block.replace("\\\n", " ").splitlines()]
    for piece in code:
        for found in re.finditer(r"countdown-rl (\w+)((?:\s+[^\s&|;#]+)*)", piece):
            yield found.group(1), found.group(2).split()


def test_the_docs_use_the_new_option_names_and_the_readme_lists_the_old_ones():
    from importlib import import_module

    from countdown_rl.cli import COMMANDS
    from countdown_rl.commands.one_line import deprecated_spellings

    old = {command: deprecated_spellings(import_module(COMMANDS[command][0].split(":")[0]).build_parser())
           for command in ("eval", "demo", "warmup", "generate")}
    readme = (ROOT / "README.md").read_text()
    for path in (ROOT / "README.md", ROOT / "benchmarks" / "RESULTS.md"):
        used = [(command, token) for command, tokens in _command_lines(path.read_text()) for token in tokens
                if token.split("=")[0] in old.get(command, {})]
        assert not used, f"{path.name}: {used}"
    renamed = readme[readme.index("Renamed options"):]
    for spellings in old.values():
        for spelling, new in spellings.items():
            if "-" not in spelling[2:]:  # the table lists the snake_case spelling
                assert f"`{spelling}`" in renamed and f"`{new}`" in renamed, spelling
