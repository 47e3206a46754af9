"""Make a stock lm-eval (0.4.13 reads no task entry points) find this project's tasks.

A ``.pth`` file installed beside the package imports this module at interpreter start-up,
unless ``CONDAMBIG_DISABLE_LM_EVAL_HOOK`` is set (the line checks it before importing
anything; the fallback is then
``lm_eval --include_path $(python -c 'import condambig_tasks.lm_eval_tasks as t; print(t.task_folder())')``).
Every Python process of the environment pays for this import, lm-eval or not, so the
module loads nothing ``site`` has not already loaded. It registers a meta-path finder that
does nothing until lm-eval is imported; then it wraps ``TaskManager.__init__`` (when
``lm_eval.tasks.manager`` is imported) so this package's task folder is appended to the
include paths. It never raises and costs one finder call per import otherwise.
It also registers one :mod:`atexit` handler as ``lm_eval`` starts importing, before any of
lm-eval's code runs, so that it runs after all of lm-eval's: it does nothing unless a run's
judged numbers were withheld, and then gives the non-zero exit status after lm-eval has
written its output (:mod:`condambig_tasks.exit_status`).

The package also declares an ``lm_eval.tasks`` entry point (pyproject.toml), the plugin
group of lm-eval's task-plugin work in review (EleutherAI/lm-evaluation-harness PR #4015:
built-in tasks, then plugin tasks, then ``--include_path``). When the installed lm-eval
reads that group itself, the hook stands down rather than index the folder a second time:
a feature check on lm-eval's own code (:func:`lm_eval_reads_task_entry_points`), not a
version check, confirmed each time a TaskManager is built (if our tasks are then
missing from its index, the folder is added after all).
"""

import os
import sys

# Imported at every interpreter start-up (the .pth file): only modules ``site`` has already
# loaded (os, sys) at module level, everything else inside the functions that need it.

_LM_EVAL = "lm_eval"
_TARGET = "lm_eval.tasks.manager"
OPT_OUT_VARIABLE = "CONDAMBIG_DISABLE_LM_EVAL_HOOK"
OPT_OUT_VALUES = ("1", "true", "yes")
ENTRY_POINT_GROUP = "lm_eval.tasks"
# pyproject.toml: [project.entry-points."lm_eval.tasks"] condambig = <this value>
ENTRY_POINT_VALUE = "condambig_tasks.lm_eval_tasks:task_folder"


def _task_folder() -> str:
    """The same folder as ``lm_eval_tasks.task_folder()`` (symlinks resolved), without
    importing it (it imports pathlib)."""
    return os.path.join(os.path.dirname(os.path.realpath(__file__)), "lm_eval_tasks")


def _with_task_folder(include_path):
    folder = _task_folder()
    if include_path is None:
        return [folder]
    paths = list(include_path) if isinstance(include_path, (list, tuple)) else [include_path]
    if any(os.path.realpath(str(p)) == folder for p in paths):
        return paths
    # defaults first, then ours, then the user's (later paths override earlier ones)
    return [folder, *paths]


# ---------------------------------------------------------------- entry-point feature check

_READS_ENTRY_POINTS: dict[str, bool] = {}


def _candidate_sources(module_file: str) -> list[str]:
    """lm-eval's code that may build the task index: the package defining TaskManager
    (``lm_eval/tasks/*.py``, not the task folders below it), the package root's modules
    and ``lm_eval/api/*.py`` (where plugin registries live)."""
    tasks_dir = os.path.dirname(os.path.abspath(module_file))
    root = os.path.dirname(tasks_dir)
    found = []
    for folder in (tasks_dir, root, os.path.join(root, "api")):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        found += [os.path.join(folder, name) for name in names if name.endswith(".py")]
    return found


def _code_reads_group(source: str) -> bool:
    """The module names the group as a string in code (not in a comment or docstring) and
    refers to ``entry_points`` (importlib.metadata's reader)."""
    import ast

    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            docstrings.add(id(body[0].value))
    names_group = any(isinstance(node, ast.Constant) and node.value == ENTRY_POINT_GROUP
                      and id(node) not in docstrings for node in ast.walk(tree))
    reads = any((isinstance(node, ast.Name) and node.id == "entry_points")
                or (isinstance(node, ast.Attribute) and node.attr == "entry_points")
                or (isinstance(node, ast.alias) and node.name == "entry_points")
                for node in ast.walk(tree))
    return names_group and reads


def lm_eval_reads_task_entry_points(module) -> bool:
    """True when the lm-eval that defines ``module.TaskManager`` reads the ``lm_eval.tasks``
    entry-point group itself (so it finds this package's tasks without the hook)."""
    module_file = getattr(module, "__file__", None)
    if not module_file:
        return False
    if module_file not in _READS_ENTRY_POINTS:
        result = False
        for path in _candidate_sources(module_file):
            try:
                with open(path, encoding="utf-8") as handle:
                    source = handle.read()
                # cheap filter first: most files name neither
                if ENTRY_POINT_GROUP in source and "entry_points" in source \
                        and _code_reads_group(source):
                    result = True
                    break
            except (OSError, SyntaxError, ValueError):
                continue
        _READS_ENTRY_POINTS[module_file] = result
    return _READS_ENTRY_POINTS[module_file]


def _declares_entry_point() -> bool:
    """This installation declares our ``lm_eval.tasks`` entry point (an install from the
    package metadata; a bare checkout on ``sys.path`` declares none)."""
    from importlib.metadata import entry_points

    return any(point.value.replace(" ", "") == ENTRY_POINT_VALUE
               for point in entry_points(group=ENTRY_POINT_GROUP))


def _indexes_task_folder(manager) -> bool | None:
    """Whether the built manager's index holds tasks from our folder (None: cannot tell)."""
    index = getattr(manager, "task_index", None)
    if not isinstance(index, dict):
        return None
    folder = os.path.realpath(_task_folder()) + os.sep
    return any(os.path.realpath(str(getattr(entry, "yaml_path", "") or "")).startswith(folder)
               for entry in index.values())


def _stands_down(module) -> bool:
    try:
        return lm_eval_reads_task_entry_points(module) and _declares_entry_point()
    except Exception:
        return False


def _patch_task_manager(module) -> None:
    manager_class = getattr(module, "TaskManager", None)
    if manager_class is None or getattr(manager_class, "_condambig_patched", False):
        return
    original_init = manager_class.__init__

    def __init__(self, verbosity=None, include_path=None, *args, **kwargs):
        if _stands_down(module):
            original_init(self, verbosity, include_path, *args, **kwargs)
            # lm-eval read the entry point; if our tasks are not indexed after all (the
            # check misread lm-eval's code), index the folder the usual way
            if _indexes_task_folder(self) is not False:
                return
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


class _PatchingLoader:
    """Runs the module's own loader, then patches ``TaskManager`` (PEP 451 loader: only
    ``create_module`` and ``exec_module`` are required; everything else is the wrapped
    loader's, e.g. ``get_source`` for tracebacks)."""

    def __init__(self, wrapped) -> None:
        self._wrapped = wrapped

    def __getattr__(self, name):
        return getattr(self._wrapped, name)

    def create_module(self, spec):
        return self._wrapped.create_module(spec)

    def exec_module(self, module) -> None:
        self._wrapped.exec_module(module)
        try:
            _patch_task_manager(module)
        except Exception:
            pass


class _LmEvalFinder:
    """A meta-path finder (PEP 451: ``find_spec`` is all ``sys.meta_path`` asks for, so no
    ``importlib.abc`` base class, whose import pulls in ``typing`` and ``tempfile``).

    It finds nothing itself: the first import of ``lm_eval`` registers the final exit
    handler, before any of lm-eval's code runs; the import of ``lm_eval.tasks.manager``
    gets a loader that patches ``TaskManager`` once the module has run."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == _LM_EVAL:
            _register_final_handler()
            return None
        if fullname != _TARGET:
            return None
        try:
            from importlib.machinery import PathFinder

            spec = PathFinder.find_spec(fullname, path)
            if spec is None or spec.loader is None:
                return None
            spec.loader = _PatchingLoader(spec.loader)
            return spec
        except Exception:
            return None


final_handler_registered = False


def _final_exit_status() -> None:
    """The last atexit handler (registered before lm-eval's code runs): the exit status of
    a run whose judged numbers were withheld (``condambig_tasks.exit_status``), given after
    every other handler has run. Does nothing in a process that never loaded our tasks."""
    module = sys.modules.get("condambig_tasks.exit_status")
    if module is not None:
        module.final()


def _register_final_handler() -> None:
    """Register :func:`_final_exit_status` once. :mod:`atexit` runs handlers last in,
    first out, so registered as ``lm_eval`` starts importing it runs after every handler
    lm-eval and its imports (logging, tqdm, datasets, torch) register."""
    global final_handler_registered
    if not final_handler_registered:
        import atexit

        atexit.register(_final_exit_status)
        final_handler_registered = True


def opted_out() -> bool:
    """``CONDAMBIG_DISABLE_LM_EVAL_HOOK`` is set to one of :data:`OPT_OUT_VALUES` (the
    ``.pth`` line checks the same before importing this module)."""
    return os.environ.get(OPT_OUT_VARIABLE, "").strip().lower() in OPT_OUT_VALUES


def install() -> None:
    """Register the finder once (idempotent); when lm-eval is already imported, register
    the final exit handler and patch at once."""
    try:
        if opted_out():
            return
        if any(isinstance(f, _LmEvalFinder) for f in sys.meta_path):
            return
        if _LM_EVAL in sys.modules:
            _register_final_handler()
        if _TARGET in sys.modules:
            _patch_task_manager(sys.modules[_TARGET])
            return
        sys.meta_path.insert(0, _LmEvalFinder())
    except Exception:
        pass
