"""The documentation stays true: every relative link resolves (its file exists, its #anchor is a heading there), the
README keeps its order and length, no user-facing text (README, docs, CHANGELOG, RESULTS, recipes, the command
line's help) speaks of the project's history or its workshop instead of the user's task, the sources are cited so a
reader can follow them, RESULTS opens with its summary, and the CHANGELOG lists no release that has not happened."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.helpers.env import ROOT

DOCS = sorted((ROOT / "docs").glob("*.md"))
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
RESULT_PAGES = sorted((ROOT / "benchmarks" / "results").glob("*.md"))
LINKED = [ROOT / "README.md", ROOT / "CHANGELOG.md", RESULTS, *RESULT_PAGES, *DOCS]
README_SECTIONS = [
    "Contents", "Install", "1. The CPU demo", "2. GRPO vs Dr.GRPO on Qwen3-1.7B", "3. Scaling out",
    "4. LoRA and the Hub", "5. Tasks", "6. Adding a task", "7. Our keys vs TRL's", "Results", "Troubleshooting",
    "Development",
]
# Words of the project's history, not of the user's task (case-insensitive).
HISTORY = [
    r"\bissues? ?#\d+",  # "issue #41"
    r"\(issue\b",  # "(issue: verifier ...)"
    r"(?<![\w(/#-])#\d+\b",  # "#41" (an anchor such as (#1-the-cpu-demo) is not one)
    r"\bsessions?\b",
    r"\bseeds?[ /_]?00\d",  # "seed 002", "seeds/000", "seed002_study.py": a source document by its file name
    r"\b(?:the|an?) assignment\b|\bassignment's",
    r"no GPU was lent",
    r"the pools of the figures",
    # the workshop: how the project's own machines were reached, its trial letters, goals, commits as versions
    r"\bdevice tool\b",
    r"\bgpu_transport\b|\bMiB a call\b",
    r"\btrials? [A-Z]\b",
    r"\bgoals?\b",
    r"\bcommit [0-9a-f]{7,40}\b",
    # verdicts against the project's own targets instead of what was measured
    r"\bthe (?:[+\w.-]+ )?bar\b|\breach(?:es)? the bar\b",
    r"\bof the \d+ allowed\b",
    r"\b\d+-minute RL budget\b",
    r"\banother developer",
    r"\bthe crash reported on\b",
    r"(?<![\w/.-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w/.-])",  # a commit hash as a version marker
]


def _prose(text: str) -> str:
    """The text without fenced code blocks (a link or heading inside one is not one)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.

    >>> slug("2. GRPO vs Dr.GRPO on Qwen3-1.7B")
    '2-grpo-vs-drgrpo-on-qwen3-17b'
    """
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())  # a link: its text
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a Markdown file (a repeated heading gets -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", _prose(path.read_text(encoding="utf-8")), flags=re.M):
        base = slug(heading)
        found.add(base if base not in seen else f"{base}-{seen[base]}")
        seen[base] = seen.get(base, 0) + 1
    return found


def test_slug_and_anchors_follow_github():
    assert slug("7. Our keys vs TRL's") == "7-our-keys-vs-trls"
    assert slug("Faster generation without vLLM: `generation_backend: compiled`") == (
        "faster-generation-without-vllm-generation_backend-compiled")
    assert "1-the-cpu-demo" in anchors(ROOT / "README.md")


@pytest.mark.parametrize("path", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(path.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # https:, mailto: ... (not checked offline)
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.relative_to(ROOT)}")
    assert not broken, f"{path.relative_to(ROOT)}: {broken}"


def test_the_readme_is_short_and_in_the_newcomers_order():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    assert re.findall(r"^## (.+)$", _prose(readme), flags=re.M) == README_SECTIONS
    assert readme.count("\n# ") == 0 and readme.startswith("# countdown-rl\n")


def _help_strings() -> list[tuple[str, str]]:
    """What the command line prints in --help: every string in cli.py and the commands (their docstrings are the
    descriptions), and the help of the data keys and of our training config's keys."""
    found = []
    for path in [ROOT / "countdown_rl" / "cli.py", *sorted((ROOT / "countdown_rl" / "commands").glob("*.py"))]:
        found += [(path.name, node.value) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    for path in (ROOT / "countdown_rl" / "data" / "arguments.py", ROOT / "countdown_rl" / "training" / "config.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            helps = []
            if isinstance(node, ast.Dict):
                helps = [v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant) and k.value == "help"]
            elif isinstance(node, ast.Call):
                helps = [kw.value for kw in node.keywords if kw.arg == "help"]
            found += [(path.name, sub.value) for value in helps for sub in ast.walk(value)
                      if isinstance(sub, ast.Constant) and isinstance(sub.value, str)]
    return found


def _user_facing_text() -> list[tuple[str, str]]:
    texts = [(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")) for path in LINKED]
    for recipe in sorted((ROOT / "recipes").rglob("*.yaml")):
        comments = "\n".join(line for line in recipe.read_text(encoding="utf-8").splitlines() if "#" in line)
        texts.append((str(recipe.relative_to(ROOT)), comments))
    return texts + _help_strings()


def test_user_facing_text_has_no_history_words():
    hits = [f"{where}: {match.group(0)!r} in ...{text[max(0, match.start() - 40):match.end() + 40]!r}..."
            for where, text in _user_facing_text() for pattern in HISTORY
            for match in re.finditer(pattern, text, flags=re.I)]
    assert not hits, "\n".join(hits[:30]) + (f"\n... {len(hits)} in all" if len(hits) > 30 else "")


def test_sources_cite_the_papers_and_every_dataset_a_task_reads():
    from countdown_rl.tasks import TASKS, get_task

    sources = (ROOT / "docs" / "sources.md").read_text(encoding="utf-8")
    for arxiv in ("2402.03300", "2503.20783", "2503.14476"):  # GRPO (DeepSeekMath), Dr.GRPO, DAPO
        assert f"(https://arxiv.org/abs/{arxiv})" in sources, arxiv
    datasets = {name for task in TASKS for name in (get_task(task).default_dataset, *get_task(task).known_datasets)}
    datasets -= {"generated"}
    assert {"Jiayi-Pan/Countdown-Tasks-3to4", "openai/gsm8k"} <= datasets
    missing = [name for name in sorted(datasets) if f"(https://huggingface.co/datasets/{name})" not in sources]
    assert not missing, missing


def test_the_readme_states_the_licence_pyproject_declares():
    licence = re.search(r'^license = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), flags=re.M).group(1)
    assert f"Licence: {licence}." in (ROOT / "README.md").read_text(encoding="utf-8")


def _table_rows(text: str) -> list[str]:
    """A Markdown table's body rows (not its header or rule)."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [row for row in rows[1:] if not re.fullmatch(r"\|[-| :]+\|", row)]


def _links_into_results(row: str, base: Path) -> list[str]:
    """The row's links to a section of a results page (``results/<page>.md#<anchor>``), each checked to resolve."""
    found = []
    for target in re.findall(r"\]\(([^)\s]*results/[\w-]+\.md#[^)\s]+)\)", row):
        file, _, anchor = target.partition("#")
        page = (base / file).resolve()
        assert page.exists() and anchor in anchors(page), f"{target}: no such section"
        found.append(target)
    return found


def test_results_opens_with_a_short_summary_whose_figures_link_to_their_sections():
    """RESULTS.md is the front page: short, its summary first (at most 10 rows, each linking to the section of a
    topic page that measured it); each topic page stays readable (at most 800 lines) and the archive is its own."""
    text = RESULTS.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    headings = re.findall(r"^## (.+)$", _prose(text), flags=re.M)
    assert headings[0] == "Results at a glance"
    rows = _table_rows(text.split("\n## ", 2)[1])
    assert 5 <= len(rows) <= 10
    for row in rows:
        assert _links_into_results(row, RESULTS.parent), row
    names = {page.name for page in RESULT_PAGES}
    assert "archive.md" in names and len(names) >= 4
    for page in RESULT_PAGES:
        assert len(page.read_text(encoding="utf-8").splitlines()) <= 800, page.name
        assert f"](results/{page.name})" in text or f"](results/{page.name}#" in text, f"RESULTS.md omits {page.name}"


def test_every_figure_in_the_readme_results_table_links_to_the_section_that_measured_it():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Results\n"):readme.index("\n## Troubleshooting\n")]
    rows = _table_rows(section)
    assert rows
    for row in rows:
        assert _links_into_results(row, ROOT), row


def test_the_demo_time_is_one_figure_in_the_readme_the_docs_and_the_help():
    """The minutes a newcomer is told the demo takes: the README, docs/demo.md, ``countdown-rl --help`` and
    ``countdown-rl demo --help`` say the same."""
    said = {}
    for path in (ROOT / "README.md", ROOT / "docs" / "demo.md", ROOT / "countdown_rl" / "cli.py",
                 ROOT / "countdown_rl" / "commands" / "demo.py"):
        text = path.read_text(encoding="utf-8")
        said[path.name] = set(re.findall(r"about\s+(\d+)\s+minutes\s+on\s+2\s+(?:CPU\s+)?cores", text))
    assert all(said.values()), said
    assert len(set.union(*said.values())) == 1, said


def test_no_file_is_named_for_the_project_history_or_its_machines():
    """Scripts and figures are named for what they study (the GR-REINFORCE study, the normaliser ablation), not for a
    source document's file number or the machine the project was developed on."""
    import subprocess

    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    named = [path for path in tracked if re.search(r"seed00\d|gpu_transport", path) and (ROOT / path).exists()]
    assert not named, named


def test_the_changelog_names_no_release_without_a_date():
    headings = re.findall(r"^## (.+)$", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), flags=re.M)
    assert headings[0] == "Unreleased"
    assert all(re.fullmatch(r"\d+\.\d+\.\d+ \(\d{4}-\d\d-\d\d\)", heading) for heading in headings[1:]), headings
