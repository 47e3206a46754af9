"""Layering: ``condambig_metrics`` (metrics/) is the bottom layer and imports no front end.

Every module under metrics/ is parsed (not imported) and each import statement, plus every
``importlib.import_module("...")`` / ``__import__("...")`` call with a literal name, is
checked against the packages above it: the tasks package, the Inspect package and the two
evaluation frameworks.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

METRICS_DIRECTORY = REPO_ROOT / "metrics"
FORBIDDEN_TOP_LEVEL = frozenset({"condambig_tasks", "condambig", "inspect_ai", "lm_eval"})
_DYNAMIC_IMPORTERS = frozenset({"import_module", "__import__"})


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``tree``; relative imports are skipped
    (they stay inside the package)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and node.args:
            function = node.func
            name = getattr(function, "id", None) or getattr(function, "attr", None)
            first = node.args[0]
            if (name in _DYNAMIC_IMPORTERS and isinstance(first, ast.Constant)
                    and isinstance(first.value, str)):
                found.append((node.lineno, first.value))
    return found


def forbidden_imports(source: str, file_name: str) -> list[str]:
    tree = ast.parse(source, filename=file_name)
    return [f"{file_name}:{line}: {module}" for line, module in imported_modules(tree)
            if module.split(".")[0] in FORBIDDEN_TOP_LEVEL]


METRICS_MODULES = sorted(METRICS_DIRECTORY.rglob("*.py"))


def test_metrics_modules_are_found():
    names = {path.relative_to(METRICS_DIRECTORY).as_posix() for path in METRICS_MODULES}
    assert {"__init__.py", "text.py", "judge/openai_backend.py"} <= names


@pytest.mark.parametrize("path", METRICS_MODULES,
                         ids=lambda path: path.relative_to(METRICS_DIRECTORY).as_posix())
def test_metrics_import_nothing_from_the_layers_above(path: Path):
    relative = path.relative_to(REPO_ROOT).as_posix()
    assert forbidden_imports(path.read_text(encoding="utf-8"), relative) == []


@pytest.mark.parametrize("source", [
    "import condambig_tasks",
    "from condambig_tasks import settings",
    "from condambig.judge_backend import grader_judge_engine",
    "import inspect_ai.model",
    "from lm_eval.api.registry import register_metric",
    "def f():\n    from condambig_tasks.settings import cache_dir\n",
    "import importlib\nimportlib.import_module('condambig_tasks.settings')",
    "__import__('lm_eval')",
])
def test_the_check_catches_an_upward_import(source: str):
    assert forbidden_imports(source, "example.py")


@pytest.mark.parametrize("source", [
    "from condambig_metrics.text import normalize_answer",
    "from . import text",
    "import condambig_metricsx",
    "import inspect",
])
def test_the_check_allows_the_metrics_layer_and_the_standard_library(source: str):
    assert forbidden_imports(source, "example.py") == []


# The project's packages and their folders: an import cycle among their modules, at module
# level or inside a function (one that only works because the import is deferred), is a
# layering fault; imports under ``if TYPE_CHECKING:`` are not run and do not count.
PACKAGES = {"condambig_tasks": REPO_ROOT / "condambig_tasks", "condambig": REPO_ROOT / "inspect_tasks",
            "condambig_metrics": METRICS_DIRECTORY}


def _module_files() -> dict[str, Path]:
    modules = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _without_type_checking_blocks(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    return tree


def import_graph(modules: dict[str, str]) -> dict[str, set[str]]:
    """module -> the project's modules it imports when run, from each module's source
    (``from package import name`` counts as the submodule when there is one)."""
    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, source in modules.items():
        tree = _without_type_checking_blocks(ast.parse(source))
        names = [name for _, name in imported_modules(tree)]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.level:  # relative: resolved against the module's package
                    package = any(other.startswith(module + ".") for other in modules)
                    base = module.split(".")[: len(module.split(".")) - node.level + package]
                    node_module = ".".join([*base, node.module])
                    names.append(node_module)
                else:
                    node_module = node.module
                names += [f"{node_module}.{alias.name}" for alias in node.names]
        graph[module] = {target for target in map(owner, names)
                         if target is not None and target != module}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


def test_no_import_cycles_between_the_project_modules():
    modules = {name: path.read_text(encoding="utf-8") for name, path in _module_files().items()}
    assert {"condambig_tasks.benchmark", "condambig._factory", "condambig_metrics.text"} <= set(modules)
    graph = import_graph(modules)
    assert "condambig_tasks.data" in graph["condambig_tasks.provenance"]  # the graph is read
    assert import_cycles(graph) == []


@pytest.mark.parametrize("sources, expected", [
    ({"p.a": "from p.b import f", "p.b": "def g():\n    from p.a import h\n"}, [["p.a", "p.b"]]),
    ({"p.a": "from p import b", "p.b": "import p.c", "p.c": "from .a import x"},
     [["p.a", "p.b", "p.c"]]),
    ({"p": "from .a import x", "p.a": "from p import y"}, [["p", "p.a"]]),
    ({"p.a": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.b import f\n",
      "p.b": "from p.a import g"}, []),
    ({"p.a": "from p.b import f", "p.b": "import os"}, []),
])
def test_the_cycle_check_finds_deferred_and_relative_cycles_not_type_only_ones(sources, expected):
    assert import_cycles(import_graph(sources)) == expected
