"""The size of the code around the benchmarks, by area: logical lines, the benchmark
contract's members, and the import cycles between the project's modules.

A *logical line* is a statement as Python's tokenizer ends it (a NEWLINE token): blank
lines, comments and docstrings do not count, and a statement over several physical lines
counts once. Areas:

- benchmarks: each benchmark's own code (``condambig_tasks/<benchmark>/``, its metrics
  module ``metrics/<benchmark>.py`` and its Inspect task file ``inspect_tasks/<benchmark>.py``);
- shared: everything else under ``condambig_tasks/``, ``inspect_tasks/`` and ``metrics/``,
  with three parts of it shown on their own: the lm-eval adapter (``condambig_tasks/lm_eval_*``
  and ``condambig_tasks/lm_eval_tasks/*.py``), the Inspect adapter (the rest of
  ``inspect_tasks/``) and the judge (``metrics/judge/``);
- contract: the members (methods, properties and class attributes) of
  ``condambig_tasks.benchmark.Benchmark``.

    python benchmarks/code_size.py [--json]

Run it on two commits (``git worktree add``) to compare them.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import sys
import tokenize
from pathlib import Path

from condambig_tasks import registry

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = tuple(registry.BENCHMARKS)  # the built-in benchmarks, by their folder names
SOURCES = ("condambig_tasks", "inspect_tasks", "metrics")


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                lines.add(body[0].lineno)
    return lines


def logical_lines(source: str) -> int:
    docstrings = _docstring_lines(ast.parse(source))
    count, start = 0, None
    skipped = {tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT,
               tokenize.ENCODING, tokenize.ENDMARKER}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in skipped:
            continue
        if start is None:
            start = token.start[0]
        if token.type == tokenize.NEWLINE:
            count += start not in docstrings
            start = None
    return count


def area(path: Path) -> str:
    relative = path.relative_to(REPO)
    parts = relative.parts
    if (parts[0] == "condambig_tasks" and len(parts) > 2 and parts[1] in BENCHMARKS) or (
            parts[0] in ("metrics", "inspect_tasks") and relative.stem in BENCHMARKS
            and len(parts) == 2):
        return "benchmarks"
    if parts[0] == "condambig_tasks" and (relative.name.startswith("lm_eval")
                                          or parts[1] == "lm_eval_tasks"):
        return "shared: lm-eval adapter"
    if parts[0] == "inspect_tasks":
        return "shared: Inspect adapter"
    if parts[:2] == ("metrics", "judge"):
        return "shared: judge"
    return "shared: other"


def contract_members() -> int:
    tree = ast.parse((REPO / "condambig_tasks" / "benchmark.py").read_text())
    [cls] = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Benchmark"]
    members = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            members.add(node.target.id)
        elif isinstance(node, ast.Assign):
            members.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return len(members - {"__init_subclass__"})


def import_cycles() -> list[list[str]]:
    sys.path.insert(0, str(REPO))
    from tests.test_layering import _module_files, import_cycles, import_graph

    modules = {name: path.read_text(encoding="utf-8") for name, path in _module_files().items()}
    return import_cycles(import_graph(modules))


def measure() -> dict:
    lines: dict[str, int] = {}
    for source in SOURCES:
        for path in sorted((REPO / source).rglob("*.py")):
            name = area(path)
            lines[name] = lines.get(name, 0) + logical_lines(path.read_text(encoding="utf-8"))
    shared = sum(count for name, count in lines.items() if name.startswith("shared"))
    total = shared + lines.get("benchmarks", 0)
    return {"logical_lines": {"total": total, "benchmarks": lines.get("benchmarks", 0),
                              "shared": shared, **dict(sorted(lines.items()))},
            "shared_share": round(shared / total, 3) if total else None,
            "contract_members": contract_members(), "import_cycles": import_cycles()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    result = measure()
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for name, count in result["logical_lines"].items():
        print(f"{name:28} {count:6,}")
    print(f"{'shared share':28} {result['shared_share']:6.1%}")
    print(f"{'contract members':28} {result['contract_members']:6}")
    print(f"{'import cycles':28} {len(result['import_cycles']):6}  {result['import_cycles']}")


if __name__ == "__main__":
    main()
