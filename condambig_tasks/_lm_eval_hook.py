"""Make a stock lm-eval (0.4.13 reads no task entry points) find this project's tasks.

A ``.pth`` file installed beside the package imports this module at interpreter start-up.
It registers a meta-path finder that does nothing until ``lm_eval.tasks.manager`` is
imported; then it wraps ``TaskManager.__init__`` so this package's task folder is appended
to the include paths. It never raises, costs one finder lookup per import otherwise, and
is switched off by ``CONDAMBIG_DISABLE_LM_EVAL_HOOK=1`` (the fallback is then
``lm_eval --include_path $(python -c 'import condambig_tasks.lm_eval_tasks as t; print(t.task_folder())')``).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys

_TARGET = "lm_eval.tasks.manager"
OPT_OUT_VARIABLE = "CONDAMBIG_DISABLE_LM_EVAL_HOOK"


def _task_folder() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "lm_eval_tasks")


def _with_task_folder(include_path):
    folder = _task_folder()
    if include_path is None:
        return [folder]
    paths = list(include_path) if isinstance(include_path, (list, tuple)) else [include_path]
    if any(os.path.abspath(str(p)) == folder for p in paths):
        return paths
    # defaults first, then ours, then the user's (later paths override earlier ones)
    return [folder, *paths]


def _patch_task_manager(module) -> None:
    manager_class = getattr(module, "TaskManager", None)
    if manager_class is None or getattr(manager_class, "_condambig_patched", False):
        return
    original_init = manager_class.__init__

    def __init__(self, verbosity=None, include_path=None, *args, **kwargs):
        try:
            include_path = _with_task_folder(include_path)
        except Exception:  # never break lm-eval because of this plugin
            pass
        original_init(self, verbosity, include_path, *args, **kwargs)

    __init__.__doc__ = original_init.__doc__
    __init__.__wrapped__ = original_init
    manager_class.__init__ = __init__
    manager_class._condambig_patched = True
    from condambig_tasks.errors import install_one_line_errors

    install_one_line_errors()


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, wrapped: importlib.abc.Loader) -> None:
        self._wrapped = wrapped

    def create_module(self, spec):
        return self._wrapped.create_module(spec)

    def exec_module(self, module) -> None:
        self._wrapped.exec_module(module)
        try:
            _patch_task_manager(module)
        except Exception:
            pass


class _TaskManagerFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != _TARGET:
            return None
        try:
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is None or spec.loader is None:
                return None
            spec.loader = _PatchingLoader(spec.loader)
            return spec
        except Exception:
            return None


def install() -> None:
    """Register the finder once (idempotent); patch at once if lm-eval is already imported."""
    try:
        if os.environ.get(OPT_OUT_VARIABLE, "").strip().lower() in {"1", "true", "yes"}:
            return
        if any(isinstance(f, _TaskManagerFinder) for f in sys.meta_path):
            return
        if _TARGET in sys.modules:
            _patch_task_manager(sys.modules[_TARGET])
            return
        sys.meta_path.insert(0, _TaskManagerFinder())
    except Exception:
        pass
