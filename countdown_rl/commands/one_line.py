"""Command-line parsing for every countdown-rl command: one flag style, one-line errors.

1. One flag style: every ``--long_option`` is ``--snake_case`` (TRL's and the recipes' spelling) and also accepts
   its hyphenated spelling (``--long-option``), as transformers' ``HfArgumentParser`` does.
   :class:`OneLineArgumentParser` adds the other spelling of each multi-word long option it is given (in its
   argument groups, mutually exclusive groups and subparsers too), whichever spelling a command declares.
2. ``--help`` and the usage line show one spelling per option, the snake_case one (:class:`SnakeCaseHelpFormatter`);
   further long aliases (e.g. ``--num-eval``'s ``--evals`` in the example below) are accepted but not shown.
3. ``action=argparse.BooleanOptionalAction`` switches take ``--x`` / ``--no_x`` in both spellings each (argparse's
   own adds only ``--no-x``, and would read ``--no_x`` as ``--x``).
4. Renamed options: ``add_argument("--new_name", deprecated=["--old_name"])`` keeps the old spelling working for
   one release, hidden from ``--help``; using it prints one line on stderr,
   ``prog: warning: --old_name is deprecated, use --new_name``, and parsing goes on (CHANGELOG.md lists them). A
   dataclass field's flag made by ``HfArgumentParser`` gets one from its metadata (``metadata={"deprecated": [...]}``),
   which that parser passes on to ``add_argument``.
5. ``--help`` ends with examples: an epilog made by :func:`examples` keeps its lines as written.
6. Errors: argparse prints the whole usage (several lines) before ``prog: error: message``; every countdown-rl
   command errs in one line instead, ``prog: error: message (see prog --help)``, exit code 2. Errors found after
   parsing go through :func:`fail`, in the same shape.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Iterable


def both_spellings(option_strings: Iterable[str]) -> list[str]:
    """The option strings with each multi-word ``--long`` option in both spellings, snake_case first.

    The snake_case spelling first makes it the one argparse derives ``dest`` from and the one help shows.

    >>> both_spellings(["--batch-size", "-b", "--dataset"])
    ['--batch_size', '--batch-size', '-b', '--dataset']
    """
    spelled: list[str] = []
    for option in option_strings:
        if option.startswith("--"):
            name = option[2:]
            spelled += [f"--{name.replace('-', '_')}", f"--{name.replace('_', '-')}"]
        else:
            spelled.append(option)
    return list(dict.fromkeys(spelled))  # drop repeats, keep the order


def shown_option_strings(action: argparse.Action) -> list[str]:
    """The spellings ``--help`` shows: short options and the first long one (a switch: also its ``--no_`` form).

    >>> parser = OneLineArgumentParser(prog="demo")
    >>> shown_option_strings(parser.add_argument("--num-eval", "--evals", type=int))
    ['--num_eval']
    """
    if isinstance(action, _Switch):
        return action.shown_option_strings
    longs = [option for option in action.option_strings if option.startswith("--")]
    return [option for option in action.option_strings if not option.startswith("--")] + longs[:1]


class _Switch(argparse.BooleanOptionalAction):
    """``--x`` / ``--no_x``, each in both spellings (module docstring, 3)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        longs = [option for option in option_strings if option.startswith("--")]
        self.negative = both_spellings(f"--no_{option[2:]}" for option in longs)
        self.option_strings = list(dict.fromkeys([*option_strings, *self.negative]))
        shorts = [option for option in option_strings if not option.startswith("--")]
        self.shown_option_strings = shorts + longs[:1] + self.negative[:1]

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, option_string not in self.negative)

    def format_usage(self) -> str:
        return " | ".join(self.shown_option_strings)


def deprecated_spellings(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Every spelling of a deprecated option of ``parser`` -> the option that replaces it (module docstring, 4).

    >>> parser = OneLineArgumentParser(prog="demo")
    >>> _ = parser.add_argument("--max_steps", deprecated=["--grpo_steps"])
    >>> deprecated_spellings(parser)
    {'--grpo_steps': '--max_steps', '--grpo-steps': '--max_steps'}
    """
    return {old: new for action in parser._actions for old, new in getattr(action, "deprecated", {}).items()}


def warn_deprecated(prog: str, spellings: dict[str, str], args: Iterable[str]) -> None:
    """One line on stderr for each deprecated option spelled in ``args`` (``--old value`` or ``--old=value``)."""
    for arg in args:
        if arg == "--":
            break
        old = arg.split("=", 1)[0]
        if old in spellings:
            print(f"{prog}: warning: {old} is deprecated, use {spellings[old]} (the old spelling goes in the next "
                  "release)", file=sys.stderr)


class _BothSpellings:
    """``add_argument`` that declares every multi-word long option in both spellings, plus its deprecated
    spellings (module docstring, 4); shared by the parser and its groups, which argparse builds from its own
    classes unless told otherwise."""

    def add_argument(self, *names, deprecated: Iterable[str] = (), **kwargs):
        if kwargs.get("action") is argparse.BooleanOptionalAction:
            kwargs["action"] = _Switch
        old = [spelling for spelling in both_spellings(deprecated) if spelling not in names]
        action = super().add_argument(*both_spellings(names), *old, **kwargs)
        current = next((option for option in action.option_strings if option.startswith("--")), names[0])
        action.deprecated = {spelling: current for spelling in old}
        return action

    def add_mutually_exclusive_group(self, **kwargs):
        group = _ExclusiveGroup(self, **kwargs)
        self._mutually_exclusive_groups.append(group)
        return group


class _Group(_BothSpellings, argparse._ArgumentGroup):
    pass


class _ExclusiveGroup(_BothSpellings, argparse._MutuallyExclusiveGroup):
    pass


EXAMPLES_HEADING = "examples:\n"
"""An epilog that starts with this line is printed as written (:func:`examples`)."""


def examples(*lines: str) -> str:
    """A command's ``--help`` epilog: example command lines, printed as written (not re-wrapped).

    >>> print(examples("countdown-rl demo --quick    a one-minute smoke run"))
    examples:
      countdown-rl demo --quick    a one-minute smoke run
    """
    return EXAMPLES_HEADING + "\n".join(f"  {line}" for line in lines)


class SnakeCaseHelpFormatter(argparse.HelpFormatter):
    """Help that shows one spelling per option, the snake_case one (:func:`shown_option_strings`).

    Mix it in before another formatter to keep that one's additions, e.g. TRL's
    ``class F(SnakeCaseHelpFormatter, argparse.ArgumentDefaultsHelpFormatter)``.
    """

    def _fill_text(self, text, width, indent):
        # An epilog of examples keeps its lines (command lines must not be re-wrapped); other text is filled.
        if text.startswith(EXAMPLES_HEADING):
            return "\n".join(indent + line for line in text.splitlines())
        return super()._fill_text(text, width, indent)

    def _format_action_invocation(self, action):
        if action.option_strings:
            action = copy.copy(action)  # the parser keeps every spelling; only the text leaves some out
            action.option_strings = shown_option_strings(action)
        return super()._format_action_invocation(action)


class OneLineArgumentParser(_BothSpellings, argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with one flag style and one-line errors (module docstring)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", SnakeCaseHelpFormatter)
        super().__init__(*args, **kwargs)

    def add_argument_group(self, *args, **kwargs):
        group = _Group(self, *args, **kwargs)
        self._action_groups.append(group)
        return group

    def _get_option_tuples(self, option_string):
        # An abbreviation (`--grpo`) matches both spellings of one option: that is one match, not an ambiguity.
        matches = {}
        for match in super()._get_option_tuples(option_string):
            matches.setdefault(id(match[0]), match)
        return list(matches.values())

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        warn_deprecated(self.prog, deprecated_spellings(self), args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def fail(prog: str, message: object) -> int:
    """Print ``prog: error: message`` as one line on stderr; returns exit code 2 (``return fail(PROG, err)``).

    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     code = fail("countdown-rl eval", "--num_rows: must be positive,\\n got 0")
    >>> code, err.getvalue()
    (2, 'countdown-rl eval: error: --num_rows: must be positive, got 0\\n')
    """
    print(f"{prog}: error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2
