"""Which private TRL / transformers names the package touches, and where (an ``ast`` walk of ``countdown_rl/``).

A private name is one of the ``_name`` (not dunder) members of the TRL / transformers classes the package extends
or drives (:data:`OWNERS`): what ``dir()`` lists (methods, properties, class attributes) plus every ``self._name``
their class bodies assign or read (instance attributes). A use is one of:

- an attribute ``x._name`` read or written (any receiver: the trainer, its args, TRL's ``VLLMGeneration``);
- a method ``def _name`` in a class body (an override, a mixin's included);
- a string ``"_name"`` given to ``getattr`` / ``setattr`` / ``hasattr`` or as a subscript (``obj.__dict__["_name"]``).

Used by ``tests/test_layout.py`` (every use lives under ``countdown_rl/training/``) and
``tests/training/test_trl_pin.py`` (every used name is pinned).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from pathlib import Path

from tests.helpers.env import ROOT

PACKAGE = ROOT / "countdown_rl"
SEAM = "countdown_rl/training/"

# "module:Class" of every TRL / transformers class whose private members the package may touch
OWNERS = (
    "trl:GRPOTrainer",
    "transformers:Trainer",
    "trl:GRPOConfig",
    "transformers:TrainingArguments",
    "trl.generation.vllm_generation:VLLMGeneration",
)


def owner_class(path: str) -> type:
    """The class a ``"module:Class"`` path names."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@functools.cache
def trl_private_names() -> dict[str, str]:
    """Private name -> the first owner (:data:`OWNERS`) that has it."""
    names: dict[str, str] = {}
    for path in OWNERS:
        cls = owner_class(path)
        found = {n for n in dir(cls) if _is_private(n)}
        for klass in cls.__mro__:
            if klass.__module__.split(".")[0] not in ("trl", "transformers"):
                continue
            try:
                source = inspect.getsource(klass)
            except (OSError, TypeError):
                continue
            found |= {n for n in re.findall(r"\bself\.(_\w+)", source) if _is_private(n)}
        for name in sorted(found):
            names.setdefault(name, path)
    return names


def _uses_in(tree: ast.AST, private: dict[str, str]) -> set[str]:
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in private:
            used.add(node.attr)
        elif isinstance(node, ast.ClassDef):
            used |= {item.name for item in node.body
                     if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in private}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2:
            arg = node.args[1]
            if isinstance(arg, ast.Constant) and arg.value in private:
                used.add(arg.value)
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and node.slice.value in private:
            used.add(node.slice.value)
    return used


def private_uses(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Private TRL / transformers name -> the files (``countdown_rl/...``) that touch it."""
    private = trl_private_names()
    uses: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root.parent).as_posix()
        for name in _uses_in(ast.parse(path.read_text(encoding="utf-8")), private):
            uses.setdefault(name, set()).add(relative)
    return uses
