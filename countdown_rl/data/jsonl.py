"""JSON Lines files: one JSON object per line (a task generator's rows, samples, the demo's RL rows)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["write_jsonl"]


def write_jsonl(rows: Iterable[Mapping[str, Any]], path: str | os.PathLike) -> int:
    """Write one JSON object per line (creating parent folders); return the number of rows written.

    >>> import tempfile, os
    >>> write_jsonl([{"a": 1}, {"a": 2}], os.path.join(tempfile.mkdtemp(), "sub", "p.jsonl"))
    2
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(dict(row), ensure_ascii=False) + "\n")
            count += 1
    return count
