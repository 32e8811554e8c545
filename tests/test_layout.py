"""The package's layout, read from its own imports (a static import graph of ``countdown_rl/``).

1. Every subpackage has a module docstring that says what lives there (every module of it, by name) and what it
   may import.
2. No import cycle between modules, and none from a lower layer to a higher one (:data:`LAYERS`): a library
   module never imports a command, evaluation never imports training, and so on.
3. The task-independent core never imports a task plug-in: only the registry (``countdown_rl.tasks``) and the
   interface (``countdown_rl.tasks.base``). The demo (Countdown's) and the commands may.
4. One seam with TRL: every private TRL / transformers name the package touches (an override, an attribute read or
   written: :mod:`tests.helpers.trl_seam`) is touched under ``countdown_rl/training/`` only.
5. No test module imports another test module (shared code goes to ``tests/helpers/`` or ``conftest.py``), and
   nothing under ``benchmarks/`` imports ``tests``.
6. Tests mirror the package: the tests of ``countdown_rl/<sub>/<module>.py`` are ``tests/<sub>/test_<module>.py``
   (or ``test_<module>_<aspect>.py``); a package's own ``__init__`` and a few cross-module topics have a named file
   (:data:`TOPICS`); only the repository's other parts (recipes, configs, benchmarks, the README) are tested at the
   top of ``tests/`` (:data:`REPOSITORY_TESTS`).
7. No Countdown words in the task-independent core: no identifier outside the task plug-ins
   (``countdown_rl/tasks/<plug-in>/``), the demo (Countdown's by design: ``countdown_rl/demo/`` and its command)
   and ``countdown-rl verify`` (Countdown's checker) says "puzzle"; the core's word is "row".

Imports inside functions and under ``TYPE_CHECKING`` count: they run (or type-check) all the same.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from tests.helpers.env import ROOT

PACKAGE = ROOT / "countdown_rl"

# The first part of a module's name under countdown_rl -> its layer. A module may import its own unit and lower
# layers only. The top-level modules: files (shared helpers), cli and the package itself (the entry points), and
# trainer (a deprecated re-export of training.trainer).
LAYERS = {
    "files": 0,
    "tasks": 1, "algorithms": 1,
    "data": 2,
    "runs": 3, "generation": 3,
    "models": 4,
    "evaluation": 5,
    "training": 6,
    "sweeps": 7, "demo": 7,
    "commands": 8,
    "cli": 9, "__init__": 9, "trainer": 9,
}
SUBPACKAGES = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
MAY_IMPORT_TASK_PLUGINS = ("tasks", "demo", "commands")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The countdown_rl modules ``path`` imports (``from pkg import mod`` resolved to the module when it is one)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in known else target)
    return {m for m in found if m == "countdown_rl" or m.startswith("countdown_rl.")}


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(name, path, known) - {name} for name, path in mods.items()}


def unit(module: str) -> str:
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def test_every_module_is_in_a_layer():
    assert {unit(m) for m in modules()} <= set(LAYERS), "a new top-level module or subpackage needs a layer"


@pytest.mark.parametrize("subpackage", SUBPACKAGES)
def test_every_subpackage_says_what_lives_there_and_what_it_may_import(subpackage):
    doc = ast.get_docstring(ast.parse((PACKAGE / subpackage / "__init__.py").read_text(encoding="utf-8")))
    assert doc and len(doc.splitlines()) >= 3, f"countdown_rl.{subpackage} has no module docstring"
    if subpackage != "tasks":  # the registry's docstring says how plug-ins are added instead
        assert "import" in doc, f"countdown_rl.{subpackage}'s docstring does not say what it may import"


@pytest.mark.parametrize("subpackage", SUBPACKAGES)
def test_every_module_is_named_in_its_subpackages_docstring(subpackage):
    import re

    folder = PACKAGE / subpackage
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
    modules = [p.stem for p in folder.glob("*.py") if p.stem != "__init__"]
    modules += [p.name for p in folder.iterdir() if (p / "__init__.py").is_file()]
    missing = sorted(m for m in modules if not re.search(rf"\b{m}\b", doc))
    assert not missing, f"countdown_rl.{subpackage}'s docstring does not say what {missing} hold"


def test_no_import_cycles():
    edges = graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(edges.get(node, ())):
            if state.get(dep) == 1:
                cycles.append(" -> ".join([*path[path.index(dep):], dep]))
            elif dep in edges and dep not in state:
                visit(dep, [*path, dep])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_import_from_a_lower_layer_to_a_higher_one():
    wrong = [f"{a} ({unit(a)}, layer {LAYERS[unit(a)]}) imports {b} ({unit(b)}, layer {LAYERS[unit(b)]})"
             for a, deps in graph().items() for b in deps
             if unit(a) != unit(b) and LAYERS[unit(b)] >= LAYERS[unit(a)] and unit(b) != "__init__"]
    assert not wrong, "\n".join(sorted(wrong))


def test_no_library_module_imports_a_command():
    wrong = [f"{a} imports {b}" for a, deps in graph().items() for b in deps
             if unit(a) not in ("commands", "cli") and b.startswith("countdown_rl.commands")]
    assert not wrong, "\n".join(sorted(wrong))


def test_the_core_imports_no_task_plugin():
    allowed = {"countdown_rl.tasks", "countdown_rl.tasks.base"}
    wrong = [f"{a} imports {b}" for a, deps in graph().items() for b in deps
             if unit(a) not in MAY_IMPORT_TASK_PLUGINS and b.startswith("countdown_rl.tasks") and b not in allowed]
    assert not wrong, "\n".join(sorted(wrong))


def test_no_private_name_is_imported_across_modules():
    wrong = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("countdown_rl"):
                wrong += [f"{name} imports {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert not wrong, "\n".join(wrong)


def test_the_graph_sees_a_real_edge():
    """The walker itself: a known import is found (else every test above would pass on an empty graph)."""
    edges = graph()
    assert "countdown_rl.training.recipe" in edges["countdown_rl.commands.train"]
    assert "countdown_rl.runs.record" in edges["countdown_rl.runs.guard"]


def test_the_old_trainer_path_still_imports_with_a_deprecation_warning():
    import sys

    sys.modules.pop("countdown_rl.trainer", None)
    with pytest.warns(DeprecationWarning, match="countdown_rl.trainer is deprecated"):
        old = importlib.import_module("countdown_rl.trainer")
    from countdown_rl.training.trainer import CountdownGRPOTrainer

    assert old.CountdownGRPOTrainer is CountdownGRPOTrainer


def test_the_architecture_table_has_one_row_per_subpackage():
    readme = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = readme.split("## What is in the package", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip().strip("`") for line in section.splitlines() if line.startswith("| `countdown_rl.")]
    assert rows == [f"countdown_rl.{name}" for name in
                    ("tasks", "algorithms", "data", "runs", "generation", "models", "evaluation", "training", "sweeps",
                     "demo", "commands")]
    assert sorted(rows) == [f"countdown_rl.{name}" for name in SUBPACKAGES]


def test_private_trl_names_are_touched_only_under_training():
    from tests.helpers.trl_seam import SEAM, private_uses

    wrong = [f"{file} touches {name} (a private TRL / transformers name): move it under {SEAM}"
             for name, files in sorted(private_uses().items()) for file in sorted(files) if not file.startswith(SEAM)]
    assert not wrong, "\n".join(wrong)


def test_the_seam_scanner_sees_a_real_override():
    """The scanner itself: the trainer's known hooks are found (else the test above would pass on nothing)."""
    from tests.helpers.trl_seam import private_uses

    uses = private_uses()
    assert "countdown_rl/training/trainer.py" in uses["_compute_loss"]
    assert "countdown_rl/training/reliability.py" in uses["_save_checkpoint"]


def python_imports(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names; ``from a import b`` gives ``a`` and ``a.b``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def is_test_module(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "tests" and parts[-1].startswith("test_")


def test_no_test_module_imports_another():
    tests = PACKAGE.parent / "tests"
    wrong = [f"{path.relative_to(tests.parent)} imports {name}"
             for path in sorted(tests.rglob("*.py")) for name in sorted(python_imports(path)) if is_test_module(name)]
    assert not wrong, "move shared test code to tests/helpers/ or tests/conftest.py:\n" + "\n".join(wrong)


def test_no_benchmark_imports_the_tests():
    benchmarks = PACKAGE.parent / "benchmarks"
    wrong = [f"{path.relative_to(benchmarks.parent)} imports {name}"
             for path in sorted(benchmarks.rglob("*.py")) for name in sorted(python_imports(path))
             if name == "tests" or name.startswith("tests.")]
    assert not wrong, "a benchmark needs only the package and benchmarks/_common.py:\n" + "\n".join(wrong)


# tests/<sub>/test_<topic>.py files that test no single module, and what they test instead
TOPICS = {
    "task": "a task package's own __init__ (its Task class and options)",
    "registry": "countdown_rl/tasks/__init__ (the task registry)",
    "recipes": "a task's recipes under recipes/<task>/ against their seeds",
    "trl_pin": "every private TRL / transformers name that training/ touches",
    "bad_invocations": "every command's bad input, as real subprocesses",
}
# tests/test_<name>.py: the repository's parts outside the package
REPOSITORY_TESTS = {"layout", "readme", "docs", "packaging", "recipes", "accelerate_configs", "slurm", "studies",
                    "benchmarks", "demo_figures"}


def test_tests_mirror_the_package():
    tests = ROOT / "tests"
    wrong = []
    for path in sorted(tests.rglob("test_*.py")):
        rel = path.relative_to(tests)
        name = path.stem.removeprefix("test_")
        if len(rel.parts) == 1:
            if name not in REPOSITORY_TESTS:
                wrong.append(f"tests/{rel}: a top-level test file is for the repository's parts "
                             f"({sorted(REPOSITORY_TESTS)}); move it to tests/<subpackage>/test_<module>.py")
            continue
        folder = PACKAGE.joinpath(*rel.parts[:-1])
        modules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"} | {
            p.name for p in folder.iterdir() if (p / "__init__.py").is_file()} if folder.is_dir() else set()
        if not folder.is_dir():
            wrong.append(f"tests/{rel}: countdown_rl/{'/'.join(rel.parts[:-1])} does not exist")
        elif name not in TOPICS and not any(name == m or name.startswith(f"{m}_") for m in modules):
            wrong.append(f"tests/{rel}: no module {name.split('_')[0]!r}... in countdown_rl/{'/'.join(rel.parts[:-1])} "
                         f"({sorted(modules)}); name it test_<module>[_<aspect>].py")
    assert not wrong, "\n".join(wrong)


# Countdown's own corners of the package: its plug-in is under tasks/, the demo and verify are Countdown's by design.
COUNTDOWN_CORNERS = ("demo/", "commands/demo.py", "commands/verify.py")



def identifiers(tree: ast.AST):
    """(name, line) of every name the code gives or uses: functions, classes, arguments, variables, attributes,
    keyword arguments and imported names (strings and comments are text, not identifiers)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name, node.lineno
        elif isinstance(node, ast.arg):
            yield node.arg, node.lineno
        elif isinstance(node, ast.Name):
            yield node.id, node.lineno
        elif isinstance(node, ast.Attribute):
            yield node.attr, node.lineno
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.arg, node.lineno
        elif isinstance(node, ast.alias):
            yield node.asname or node.name, node.lineno


def in_the_core(path: Path) -> bool:
    relative = path.relative_to(PACKAGE).as_posix()
    plugin = relative.startswith("tasks/") and len(Path(relative).parts) > 2  # tasks/<plug-in>/...
    return not plugin and not relative.startswith(COUNTDOWN_CORNERS)


def test_the_core_has_no_countdown_words_in_its_names():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if not in_the_core(path):
            continue
        relative = path.relative_to(PACKAGE).as_posix()
        for name, line in identifiers(ast.parse(path.read_text(encoding="utf-8"))):
            if "puzzle" in name.lower():
                wrong.append(f"countdown_rl/{relative}:{line}: {name} (the core says row, rows, num_rows)")
    assert not wrong, "\n".join(dict.fromkeys(wrong))  # a name used twice on one line: said once


def test_the_countdown_word_scanner_sees_real_names():
    """The scanner itself: the plug-in's and the demo's own names are found, and they are outside the core."""
    plugin = PACKAGE / "tasks" / "countdown" / "puzzles.py"
    assert any("puzzle" in name for name, _ in identifiers(ast.parse(plugin.read_text(encoding="utf-8"))))
    assert not in_the_core(plugin) and not in_the_core(PACKAGE / "demo" / "stages.py")
    assert in_the_core(PACKAGE / "tasks" / "base.py") and in_the_core(PACKAGE / "evaluation" / "scoring.py")
