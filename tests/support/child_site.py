"""Code a test runs at the start of a child Python process: a ``sitecustomize`` module in a
folder put first on ``PYTHONPATH``, which then runs the ``sitecustomize`` it shadows (the
tests' lm-eval index cache, ``tests/support/lm_eval_index``), once per process."""

from __future__ import annotations

from pathlib import Path

_CHAIN = '''

def _run_shadowed_sitecustomize():
    import os
    import sys
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec

    here = os.path.dirname(os.path.abspath(__file__))
    others = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = PathFinder.find_spec("sitecustomize", others)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(module_from_spec(spec))


# once per process: the chained sitecustomize may run this file again (it chains too)
import sys as _sys

if not getattr(_sys, "_condambig_test_site", False):
    _sys._condambig_test_site = True
    _start()
    _run_shadowed_sitecustomize()
'''


def with_sitecustomize(folder: Path, env: dict[str, str], start: str) -> dict[str, str]:
    """``env`` for a child whose start runs ``start``: source defining ``_start()``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(start + _CHAIN)
    path = env.get("PYTHONPATH")
    return {**env, "PYTHONPATH": str(folder) + (f":{path}" if path else "")}
