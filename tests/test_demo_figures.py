"""The real-model demo's time and memory have one place: the table under "Time and memory of the real-model demo" in
docs/demo.md; everywhere else quotes it or links to it.

What this checks:

1. The table: under that heading, with the columns a reader needs (processor and its kernels, precision, vLLM, what
   ran, wall minutes, peak memory in GB, date, command), a unique label for each row (`` `xeon-bf16` ``: what the
   README and the prose name it by) and a number in each row's minutes and GB cells.
2. Every passage that speaks of the real-model demo quotes only the table's figures. The places: README.md,
   docs/demo.md's prose (the table left out), the latest section of CHANGELOG.md, the summary of
   benchmarks/RESULTS.md, and ``countdown-rl demo --help`` as its parser (``countdown_rl.commands.demo.build_parser``)
   prints it: each option's help, the description and each example line. A passage is a paragraph, a list item or a
   table row; it speaks of the real-model demo when it names it (``smollm2``, "real model", "real-model",
   ``--model_name_or_path``) or, in docs/demo.md, when it lies in a section on a real model. In such a passage:

   - a number (or a range "a-b") before "GB" must be one of the table's peak memory figures; a size "GB on disk" is
     not memory and is left alone;
   - a number before "minutes" / "min" must be one of the table's wall minutes, a range the table's range or a
     number one of its ends; "N hours" must be one of them in hours;
   - "GiB" is refused: the figures are GB.

   So "17 GB" where the table says 16.4 fails, as do "about 16 GB", "12-16 GB" and "15.8 GiB".
3. The links to the table from the README and ``--help`` name a heading that docs/demo.md has.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.env import ROOT

DEMO_DOC = ROOT / "docs" / "demo.md"
HEADING = "Time and memory of the real-model demo"
ANCHOR = "time-and-memory-of-the-real-model-demo"
COLUMNS = ("row", "processor", "precision", "vllm", "what ran", "wall minutes", "peak memory, gb", "date", "command")
# A passage about the real-model demo names it so.
ABOUT_IT = re.compile(r"smollm2|real[- ]model|real pretrained model|--model_name_or_path", re.I)
NUMBER = r"(\d+(?:\.\d+)?)(?:\s*-\s*(\d+(?:\.\d+)?))?"
# A figure: a number or range, then its unit (a disk size, "GB on disk", is not memory)
QUOTED = re.compile(rf"(?<![\w.+-]){NUMBER}\s*(GB|GiB|minutes?|min|hours?)\b(?!\s+on\s+disk)")


def _prose(text: str) -> str:
    """The text without fenced code blocks."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def passages(text: str) -> list[tuple[str, str]]:
    """``(section heading, passage)`` of a Markdown text: each paragraph, list item and table row, its lines joined."""
    found: list[tuple[str, str]] = []
    heading, lines = "", []

    def close():
        if lines:
            found.append((heading, " ".join(line.strip() for line in lines)))
        lines.clear()

    for line in _prose(text).splitlines():
        if line.startswith("#"):
            close()
            heading = line.lstrip("#").strip()
        elif not line.strip() or line.startswith(("- ", "* ", "|")):
            close()
            if line.strip():
                lines.append(line)
                if line.startswith("|"):
                    close()
        else:
            lines.append(line)
    close()
    return found


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else len(text)]


def figure_table() -> tuple[list[str], list[dict[str, str]]]:
    """The table's header (lower case) and its rows (column -> cell)."""
    section = _section(DEMO_DOC.read_text(encoding="utf-8"), HEADING)
    lines = [line for line in section.splitlines() if line.startswith("|")]
    cells = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines]
    header = [cell.lower() for cell in cells[0]]
    rows = [dict(zip(header, row)) for row in cells[2:]]
    return header, rows


def _numbers(cell: str) -> list[tuple[float, ...]]:
    """Each number or range "a-b" in a cell, as a tuple of one or two floats."""
    return [tuple(float(part) for part in match.groups() if part is not None) for match in re.finditer(NUMBER, cell)]


def allowed_figures() -> dict[str, set[tuple[float, ...]]]:
    """The table's figures by unit: every number and range in its minutes cells and in its GB cells."""
    header, rows = figure_table()
    minutes = next(column for column in header if "minutes" in column)
    memory = next(column for column in header if "gb" in column)
    return {"minutes": {n for row in rows for n in _numbers(row[minutes])},
            "GB": {n for row in rows for n in _numbers(row[memory])}}


def wrong_figures(passage: str, allowed: dict[str, set[tuple[float, ...]]]) -> list[str]:
    """The figures of time or memory in ``passage`` that are not the table's (:data:`QUOTED`)."""
    ends = {unit: {(end,) for figure in figures for end in figure} for unit, figures in allowed.items()}
    wrong = []
    for match in QUOTED.finditer(passage):
        low, high, unit = match.groups()
        figure = (float(low),) if high is None else (float(low), float(high))
        if unit == "GiB":
            ok = False
        elif unit == "GB":
            ok = figure in allowed["GB"] or (len(figure) == 1 and figure in ends["GB"])
        elif unit.startswith("hour"):
            ok = tuple(value * 60 for value in figure) in allowed["minutes"]
        else:
            ok = figure in allowed["minutes"] or (len(figure) == 1 and figure in ends["minutes"])
        if not ok:
            wrong.append(match.group(0))
    return wrong


def _help_passages() -> list[str]:
    """``countdown-rl demo --help`` as its parser prints it: each option's help, the description, each example."""
    from countdown_rl.commands.demo import build_parser

    parser = build_parser()
    formatter = parser._get_formatter()
    helps = [formatter._expand_help(action) for action in parser._actions if action.help]
    return [parser.description or "", *helps, *(parser.epilog or "").splitlines()]


def quoting_passages() -> list[tuple[str, str]]:
    """``(place, passage)`` for every passage of the places that quote the real-model demo's figures and speaks of
    that demo (module docstring)."""
    found = []
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found += [("README.md", text) for _, text in passages(readme)]
    found += [("docs/demo.md", text) for heading, text in passages(DEMO_DOC.read_text(encoding="utf-8"))
              if not (heading == HEADING and text.startswith("|"))  # the table itself
              and ("real" in heading.lower() or ABOUT_IT.search(text))]
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    latest = changelog[changelog.index("\n## "):]
    latest = latest[:latest.find("\n## ", 1)] if "\n## " in latest[1:] else latest
    found += [("CHANGELOG.md", text) for _, text in passages(latest)]
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    found += [("benchmarks/RESULTS.md", text) for _, text in passages(_section(results, "Results at a glance"))]
    found += [("countdown-rl demo --help", text) for text in _help_passages()]
    return [(place, text) for place, text in found
            if ABOUT_IT.search(text) or (place == "docs/demo.md")]


def test_the_table_has_the_columns_a_row_label_and_figures_in_each_row():
    header, rows = figure_table()
    for column, wanted in zip(header, COLUMNS):
        assert column.startswith(wanted), (column, wanted)
    assert len(header) == len(COLUMNS) and len(rows) >= 3
    labels = [row["row"] for row in rows]
    assert all(re.fullmatch(r"`[a-z0-9-]+`", label) for label in labels), labels
    assert len(set(labels)) == len(labels), labels
    for row in rows:
        assert _numbers(row[header[5]]) and _numbers(row[header[6]]), row
        assert re.search(r"\d{4}-\d\d-\d\d", row["date"]), row
        assert "countdown-rl demo --model_name_or_path" in row["command"], row
        assert re.search(r"AVX", row[header[1]]), row  # the kernels, which set the figures


def test_every_place_quotes_only_the_tables_figures():
    allowed = allowed_figures()
    places = quoting_passages()
    assert {place for place, _ in places} >= {"README.md", "docs/demo.md", "CHANGELOG.md", "countdown-rl demo --help"}
    wrong = [f"{place}: {figure!r} in ...{text[:160]}..." for place, text in places
             for figure in wrong_figures(text, allowed)]
    assert not wrong, "not in docs/demo.md's table (quote it, or link to it):\n" + "\n".join(wrong)


def test_the_readme_quotes_the_table_where_it_gives_the_command():
    """The README's real-model line gives the measured machine's figures and links to the table."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(text for _, text in passages(readme) if "countdown-rl demo --model_name_or_path smollm2" in text)
    assert f"docs/demo.md#{ANCHOR}" in line
    assert "Intel Xeon" in line and "AVX-512 BF16" in line and "bf16" in line and "vLLM" in line
    assert re.search(r"\d+(\.\d+)? GB", line) and re.search(r"\d+(-\d+)? minutes", line)


def test_the_links_to_the_table_name_its_heading():
    from countdown_rl.commands.demo import FIGURES

    slug = re.sub(r"[^\w\- ]", "", HEADING.lower()).replace(" ", "-")
    assert slug == ANCHOR and f"\n## {HEADING}\n" in DEMO_DOC.read_text(encoding="utf-8")
    assert FIGURES == f"docs/demo.md#{ANCHOR}"
    assert any(FIGURES in text for text in _help_passages())


@pytest.mark.parametrize(("passage", "wrong"), [
    ("SmolLM2 takes 17 GB and 23-28 minutes", ["17 GB", "23-28 minutes"]),
    ("the real-model demo peaks at about 16 GB (12-16 GB; 15.8 GiB)", ["16 GB", "12-16 GB", "15.8 GiB"]),
    ("smollm2: 16.4 GB, 12.1 GB, 22-28 minutes, 28.0 min, 32.6 minutes, about 2 hours", []),
    ("smollm2: 3.2 GB on disk for two checkpoints", []),
    ("smollm2: all six took 3 hours", ["3 hours"]),
])
def test_the_check_refuses_a_figure_the_table_does_not_give(passage, wrong):
    assert wrong_figures(passage, allowed_figures()) == wrong
