"""Command-line errors as one line: an ``argparse.ArgumentParser`` whose ``error`` leaves out the usage block.

1. argparse prints the whole usage (several lines) before ``prog: error: message``; every countdown-rl command
   errs in one line instead, ``prog: error: message (see prog --help)``, exit code 2.
2. Commands build their parsers with :class:`OneLineArgumentParser` (subparsers inherit it).
"""

from __future__ import annotations

import argparse


class OneLineArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors are one line (module docstring)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")
