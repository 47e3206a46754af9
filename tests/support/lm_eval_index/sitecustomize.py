"""Test subprocesses only: lm-eval's index of its built-in task folder, built once per test run.

lm-eval 0.4.13 keeps no task index on disk: every ``TaskManager`` parses each YAML file under
``lm_eval/tasks`` (~14,000 files, ~7 s of CPU), so every ``lm_eval`` command of the end-to-end
tests paid it. The tests put this folder on ``PYTHONPATH`` with ``CONDAMBIG_TEST_LM_EVAL_INDEX``
naming a folder of the run (``tests/support/run_folder.py``); then the first process stores
the built-in folder's index there and the others load it (``_lm_eval_index_cache``). Every
other folder -- this project's tasks, a ``--include_path`` -- is indexed as usual.

This module only registers an import finder for ``lm_eval.tasks._index``; a process that
never imports lm-eval pays nothing else. Any ``sitecustomize`` this one shadows is run after it.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _install() -> None:
    if os.environ.get("CONDAMBIG_TEST_LM_EVAL_INDEX"):
        import _lm_eval_index_cache

        _lm_eval_index_cache.install()


def _run_shadowed_sitecustomize() -> None:
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec

    others = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = PathFinder.find_spec("sitecustomize", others)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(module_from_spec(spec))


_install()
_run_shadowed_sitecustomize()
