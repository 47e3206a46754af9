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
