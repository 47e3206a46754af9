"""Make a stock lm-eval (0.4.13 reads no task entry points) find this project's tasks.

A ``.pth`` file installed beside the package imports this module at interpreter start-up,
unless ``CONDAMBIG_DISABLE_LM_EVAL_HOOK`` is set (the line checks it before importing
anything; the fallback is then
``lm_eval --include_path $(python -c 'import condambig_tasks.lm_eval_tasks as t; print(t.task_folder())')``).
Every Python process of the environment pays for this import, lm-eval or not, so the
module loads nothing ``site`` has not already loaded. It registers a meta-path finder that
does nothing until lm-eval is imported; then it wraps ``TaskManager.__init__`` (when
``lm_eval.tasks.manager`` is imported) so this package's task folder is appended to the
include paths when lm-eval does not index it by itself, in every ``TaskManager`` that
indexes lm-eval's built-in tasks (the default; ``TaskManager(include_defaults=False)``
indexes only its own ``include_path``, as lm-eval documents). It never raises and costs one
finder call per import otherwise.
It also wraps ``EvaluatorConfig.process_tasks`` (when ``lm_eval.config.evaluate_config`` is
imported): once the command has resolved its task names, and before it loads the model, the
command's config is kept (:mod:`condambig_tasks.lm_eval_command`) and what the selected tasks
need is checked (:mod:`condambig_tasks.lm_eval_preflight`).
It also registers one :mod:`atexit` handler as ``lm_eval`` starts importing, before any of
lm-eval's code runs, so that it runs after all of lm-eval's: it does nothing unless a run's
judged numbers were withheld, and then gives the non-zero exit status after lm-eval has
written its output (:mod:`condambig_tasks.exit_status`).

The package also declares an ``lm_eval.tasks`` entry point (pyproject.toml) for the
task-plugin work in review upstream (EleutherAI/lm-evaluation-harness PR #4015, "Feat/plugin
task registration": built-in tasks, then plugin tasks, then ``--include_path``). Whether the
installed lm-eval reads it is found out by behaviour, once per process: a ``TaskManager``
built with no built-in tasks and no include path (an empty index in 0.4.13, so nearly free)
holds our tasks only if lm-eval found them through the entry point. Then the folder is left
to lm-eval; otherwise it is added to the include paths, so it is indexed exactly once.
The entry point's value (``condambig_tasks.lm_eval_tasks:task_folder``, a function
returning the folder) is NOT checked against the PR: of its thread only the opening of the
description could be read offline (motivation, precedence), not the part saying what an
``lm_eval.tasks`` entry point must name. The check above does not depend on it: an lm-eval
that expects another form finds nothing through it, and the folder is added as today.
"""

import os
import sys

# Imported at every interpreter start-up (the .pth file): only modules ``site`` has already
# loaded (os, sys) at module level, everything else inside the functions that need it.

_LM_EVAL = "lm_eval"
_TARGET = "lm_eval.tasks.manager"
_CONFIG_TARGET = "lm_eval.config.evaluate_config"
OPT_OUT_VARIABLE = "CONDAMBIG_DISABLE_LM_EVAL_HOOK"
OPT_OUT_VALUES = ("1", "true", "yes")


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


def indexes_task_folder(manager) -> bool:
    """The manager's index (``TaskManager.task_index``: name -> entry with ``yaml_path``)
    holds a task or group read from our folder."""
    folder = _task_folder() + os.sep
    return any(os.path.realpath(str(entry.yaml_path)).startswith(folder)
               for entry in getattr(manager, "task_index", {}).values()
               if getattr(entry, "yaml_path", None))


def finds_tasks_by_itself(manager_class, original_init) -> bool:
    """Whether lm-eval indexes our folder without being told (it read our entry point):
    asked once per class of a ``TaskManager`` built with ``include_defaults=False`` and no
    include path, which indexes nothing but plugin folders."""
    if "_condambig_finds_tasks" not in manager_class.__dict__:
        try:
            probe = manager_class.__new__(manager_class)
            original_init(probe, include_defaults=False)
            found = indexes_task_folder(probe)
        except Exception:  # never break lm-eval because of this plugin: index the folder
            found = False
        manager_class._condambig_finds_tasks = found
    return manager_class._condambig_finds_tasks


def _patch_task_manager(module) -> None:
    manager_class = getattr(module, "TaskManager", None)
    if manager_class is None or getattr(manager_class, "_condambig_patched", False):
        return
    original_init = manager_class.__init__

    def __init__(self, verbosity=None, include_path=None, *args, **kwargs):
        # TaskManager(include_defaults=False) indexes only the paths it is given (lm-eval's
        # own tests rely on it): our folder comes with lm-eval's built-in tasks, not alone
        include_defaults = args[0] if args else kwargs.get("include_defaults", True)
        if include_defaults and not finds_tasks_by_itself(manager_class, original_init):
            include_path = _with_task_folder(include_path)
        original_init(self, verbosity, include_path, *args, **kwargs)

    __init__.__doc__ = original_init.__doc__
    __init__.__wrapped__ = original_init
    manager_class.__init__ = __init__
    manager_class._condambig_patched = True
    from condambig_tasks.errors import install_one_line_errors

    install_one_line_errors()


def _patch_evaluator_config(module) -> None:
    """After the command resolves its task names (``EvaluatorConfig.process_tasks``) and
    before it loads the model, keep the command's config
    (:mod:`condambig_tasks.lm_eval_command`) and check what the selected tasks need
    (:mod:`condambig_tasks.lm_eval_preflight`): a project error ends the run there."""
    config_class = getattr(module, "EvaluatorConfig", None)
    original = getattr(config_class, "process_tasks", None)
    if original is None or getattr(original, "_condambig", False):
        return

    def process_tasks(self, *args, **kwargs):
        manager = original(self, *args, **kwargs)
        from condambig_tasks.errors import CondambigError

        try:
            from condambig_tasks.lm_eval_command import remember
            from condambig_tasks.lm_eval_preflight import check_selected_tasks

            remember(self)
            check_selected_tasks(getattr(self, "tasks", None) or [],
                                 getattr(self, "metadata", None))
        except CondambigError:
            raise
        except Exception:  # not the user's to fix: the task's own load meets it later
            pass
        return manager

    process_tasks.__doc__ = original.__doc__
    process_tasks.__wrapped__ = original
    process_tasks._condambig = True
    config_class.process_tasks = process_tasks


_PATCHES = {_TARGET: _patch_task_manager, _CONFIG_TARGET: _patch_evaluator_config}


def _then_patch(exec_module, patch):
    """The module's own loader's ``exec_module`` (PEP 451), then ``patch`` on the module it
    ran; the loader stays the module's own (``get_source`` for tracebacks and the rest)."""

    def exec_then_patch(module) -> None:
        exec_module(module)
        try:
            patch(module)
        except Exception:
            pass

    return exec_then_patch


class _LmEvalFinder:
    """A meta-path finder (PEP 451: ``find_spec`` is all ``sys.meta_path`` asks for, so no
    ``importlib.abc`` base class, whose import pulls in ``typing`` and ``tempfile``).

    It finds nothing itself: the first import of ``lm_eval`` registers the final exit
    handler, before any of lm-eval's code runs; the imports of ``lm_eval.tasks.manager``
    and ``lm_eval.config.evaluate_config`` get their own loader, which patches
    ``TaskManager`` or ``EvaluatorConfig`` once the module has run."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == _LM_EVAL:
            _register_final_handler()
            return None
        patch = _PATCHES.get(fullname)
        if patch is None:
            return None
        try:
            from importlib.machinery import PathFinder

            spec = PathFinder.find_spec(fullname, path)
            if spec is None or spec.loader is None:
                return None
            spec.loader.exec_module = _then_patch(spec.loader.exec_module, patch)
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
        if _CONFIG_TARGET in sys.modules:
            _patch_evaluator_config(sys.modules[_CONFIG_TARGET])
        if _TARGET in sys.modules:
            _patch_task_manager(sys.modules[_TARGET])
            return
        sys.meta_path.insert(0, _LmEvalFinder())
    except Exception:
        pass
