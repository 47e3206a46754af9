"""lm-eval's index of its built-in task folder, stored once per test run (see sitecustomize).

``TaskIndex.build(paths)`` indexes each folder on its own and merges them in order, later
folders overriding earlier ones with a warning (lm_eval/tasks/_index.py, 0.4.13). The
wrapper keeps that: the built-in folder's part comes from the stored pickle, every other
folder is indexed by lm-eval's own code, and the parts are merged the same way.
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import sys

_TARGET = "lm_eval.tasks._index"


def _stored_index_path(builtin_folder: str, index_module_file: str) -> str:
    """One file per lm-eval installation and interpreter, inside the run's folder."""
    key = "\0".join([builtin_folder, str(os.stat(index_module_file).st_mtime_ns),
                     sys.version]).encode()
    folder = os.environ["CONDAMBIG_TEST_LM_EVAL_INDEX"]
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f"builtin-{hashlib.sha256(key).hexdigest()[:16]}.pickle")


def _load(path: str):
    was_enabled = gc.isenabled()
    gc.disable()  # ~15 MB of small dicts: the collector would walk them again and again
    try:
        with open(path, "rb") as handle:
            return pickle.load(handle)
    finally:
        if was_enabled:
            gc.enable()


def _store(path: str, index) -> None:
    staging = f"{path}.{os.getpid()}.tmp"
    with open(staging, "wb") as handle:
        pickle.dump(index, handle, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(staging, path)  # atomic: a reader sees no file or a whole one


def _stored(path: str):
    try:
        return _load(path)
    except Exception:  # none yet, or a damaged file: index as lm-eval does, store it again
        return None


def _builtin_index(root, build, path: str):
    index = _stored(path)
    if index is not None:
        return index
    # one command builds it while the others of the run wait (each would spend ~17
    # CPU-seconds building the same index on a machine the suite already keeps busy)
    import fcntl

    with open(f"{path}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        index = _stored(path)
        if index is None:
            index = build([root], resolve_includes=True)
            try:
                _store(path, index)
            except Exception:
                pass
    return index


def _patch(module) -> None:
    task_index = module.TaskIndex
    original = task_index.build
    builtin = os.path.realpath(os.path.dirname(module.__file__))
    stored = _stored_index_path(builtin, module.__file__)

    def build(paths, *, resolve_includes=True):
        index = {}
        for root in paths:
            if resolve_includes and os.path.realpath(str(root)) == builtin:
                part = _builtin_index(root, original, stored)
            else:
                part = original([root], resolve_includes=resolve_includes)
            for name, entry in part.items():
                if name in index:
                    module.log.warning(
                        "Task '%s' from %s overrides existing task from %s",
                        name, entry.yaml_path, index[name].yaml_path)
                index[name] = entry
        return index

    build.__wrapped__ = original
    task_index.build = staticmethod(build)


class _PatchingLoader:
    def __init__(self, wrapped) -> None:
        self._wrapped = wrapped

    def create_module(self, spec):
        return self._wrapped.create_module(spec)

    def exec_module(self, module) -> None:
        self._wrapped.exec_module(module)
        try:
            _patch(module)
        except Exception:  # another lm-eval layout: index as it does, only slower
            pass


class _IndexFinder:
    @staticmethod
    def find_spec(fullname, path, target=None):
        if fullname != _TARGET:
            return None
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _PatchingLoader(spec.loader)
        return spec


def install() -> None:
    if _TARGET in sys.modules:
        _patch(sys.modules[_TARGET])
    elif not any(isinstance(finder, _IndexFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _IndexFinder())
