"""Command-line errors as one line: an ``argparse.ArgumentParser`` whose ``error`` leaves out the usage block.

1. argparse prints the whole usage (several lines) before ``prog: error: message``; every countdown-rl command
   errs in one line instead, ``prog: error: message (see prog --help)``, exit code 2.
2. Commands build their parsers with :class:`OneLineArgumentParser` (subparsers inherit it); errors found after
   parsing go through :func:`fail`, in the same shape.
"""

from __future__ import annotations

import argparse
import sys


class OneLineArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors are one line (module docstring)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def fail(prog: str, message: object) -> int:
    """Print ``prog: error: message`` as one line on stderr; returns exit code 2 (``return fail(PROG, err)``)."""
    print(f"{prog}: error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2
