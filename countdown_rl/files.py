"""Files every part of the package writes and reads: atomic writes, JSON, and Markdown tables.

1. :func:`write_atomic` writes through a temporary file in the same folder and ``os.replace``: a crash leaves
   either the old file or the new one, never half of one. :func:`write_json_atomic` is its JSON form.
2. :func:`render_markdown_table`, :func:`format_percent` and :func:`format_number` make the tables that
   evaluation files, reports and the demo print.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["format_number", "format_percent", "render_markdown_table", "write_atomic", "write_json_atomic"]


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write text (UTF-8) or bytes to ``path`` through a temporary file in the same folder and ``os.replace``.

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "a" / "x.txt"; write_atomic(p, "hi"); p.read_text()
    'hi'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | Path, data: Any) -> None:
    """Write JSON atomically (see :func:`write_atomic`).

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "x.json"; write_json_atomic(p, {"a": 1}); p.read_text()
    '{\\n  "a": 1\\n}'
    """
    write_atomic(path, json.dumps(data, indent=2))


def format_percent(value: float | None, digits: int = 1) -> str:
    """``0.375 -> '37.5%'``; None -> an em dash.

    >>> format_percent(0.375), format_percent(None)
    ('37.5%', '—')
    """
    return "—" if value is None else f"{100 * value:.{digits}f}%"


def format_number(value: float | None, digits: int = 1) -> str:
    """``12.345 -> '12.3'``, ints as they are; None -> an em dash.

    >>> format_number(12.345), format_number(3), format_number(None)
    ('12.3', '3', '—')
    """
    if value is None:
        return "—"
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


def render_markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub Markdown table (``|`` in cells escaped).

    >>> print(render_markdown_table(["a", "b"], [[1, "x|y"]]))
    | a | b |
    | --- | --- |
    | 1 | x\\|y |
    """
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + " --- |" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
