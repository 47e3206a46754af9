"""lm-eval registration: the ``.pth`` hook leaves the task folder to an entry-point-aware
lm-eval, and ``lm-eval validate`` finds every task and group this project ships.

lm-eval 0.4.13 reads no task entry points, so the hook adds the task folder to
``TaskManager``'s include paths. The task-plugin work in review upstream
(EleutherAI/lm-evaluation-harness PR #4015) reads the ``lm_eval.tasks`` entry-point group
itself; under such a TaskManager the folder must be indexed once, not twice. The hook finds
out by behaviour (what a TaskManager indexes), so lm-eval is simulated here by small fake
``TaskManager`` classes.
"""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

from condambig_tasks import _lm_eval_hook as hook
from condambig_tasks.lm_eval_tasks import task_folder
from tests.conftest import executable, subprocess_env
from tests.support import warm_start
from tests.test_contract import LM_EVAL_TASKS, read_task_yaml

# A TaskManager shaped like lm-eval 0.4.13's, indexing its include paths into
# ``task_index`` (name -> entry with ``yaml_path``), recording the folders it scanned and
# counting the builds that index the built-in tasks (the costly part: ~7 s in 0.4.13).
_MANAGER_BASE = '''
from pathlib import Path
{imports}


class Entry:
    def __init__(self, yaml_path):
        self.yaml_path = yaml_path


class TaskManager:
    """Indexes task folders: {docstring}"""

    full_builds = 0

    def __init__(self, verbosity=None, include_path=None, include_defaults=True,
                 metadata=None):
        TaskManager.full_builds += bool(include_defaults)
        paths = [Path(p) for p in {plugin_paths}]
        if include_path:
            extra = include_path if isinstance(include_path, (list, tuple)) else [include_path]
            paths += [Path(p) for p in extra]
        self.include_path = include_path
        self.scanned = paths
        self.task_index = {{}}
        for root in paths:
            for path in sorted(root.glob("*/*.yaml")):
                self.task_index[path.stem] = Entry(path)
'''

# lm-eval with the task-plugin feature: reads the group, loads each entry point
ENTRY_POINT_AWARE = _MANAGER_BASE.format(
    imports="from importlib.metadata import entry_points",
    docstring="plugin folders first, then include_path",
    plugin_paths='[point.load()() for point in entry_points(group="lm_eval.tasks")]')

# lm-eval as today: no entry points (the group named only in a comment and a docstring)
STOCK = _MANAGER_BASE.format(
    imports="# a future lm-eval reads entry_points(group=\"lm_eval.tasks\") here",
    docstring='no "lm_eval.tasks" entry_points are read',
    plugin_paths="[]")

# names the group and reads its entry points, but indexes nothing from them
IGNORING = _MANAGER_BASE.format(
    imports="from importlib.metadata import entry_points\n"
            "PLUGINS = list(entry_points(group=\"lm_eval.tasks\"))",
    docstring="reads the group but ignores it",
    plugin_paths="[]")

# a TaskManager that cannot be built without built-in tasks: the hook must still work
REFUSING = _MANAGER_BASE.format(
    imports="", docstring="refuses include_defaults=False",
    plugin_paths="([] if include_defaults else 1 / 0)")


def _fake_lm_eval(tmp_path: Path, source: str):
    """``<tmp>/lm_eval/tasks/manager.py`` with ``source``, imported under a unique name."""
    tasks_dir = tmp_path / "lm_eval" / "tasks"
    tasks_dir.mkdir(parents=True)
    (tasks_dir / "manager.py").write_text(textwrap.dedent(source), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"fake_manager_{tmp_path.name}",
                                                  tasks_dir / "manager.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _times_scanned(manager) -> int:
    ours = Path(task_folder()).resolve()
    return sum(Path(path).resolve() == ours for path in manager.scanned)


def test_this_install_declares_the_task_entry_point():
    from importlib.metadata import entry_points

    [point] = [p for p in entry_points(group="lm_eval.tasks") if p.name == "condambig"]
    assert point.value == "condambig_tasks.lm_eval_tasks:task_folder"
    assert point.load()() == task_folder()


def test_installed_lm_eval_does_not_find_the_tasks_by_itself():
    from lm_eval.tasks.manager import TaskManager

    original = getattr(TaskManager.__init__, "__wrapped__", TaskManager.__init__)
    assert hook.finds_tasks_by_itself(TaskManager, original) is False


@pytest.mark.parametrize("kind, source, by_itself", [
    ("entry-point-aware", ENTRY_POINT_AWARE, True),
    ("stock", STOCK, False),
    ("naming the group, ignoring it", IGNORING, False),
    ("refusing a probe", REFUSING, False),
])
def test_the_task_folder_is_indexed_exactly_once(kind, source, by_itself, tmp_path):
    module = _fake_lm_eval(tmp_path, source)
    unpatched = module.TaskManager(include_path=str(tmp_path / "user"))
    hook._patch_task_manager(module)
    full_builds = module.TaskManager.full_builds
    manager = module.TaskManager(include_path=str(tmp_path / "user"))
    assert module.TaskManager.full_builds == full_builds + 1, kind  # built-in tasks once
    assert module.TaskManager._condambig_finds_tasks is by_itself, kind
    assert _times_scanned(manager) == 1, (kind, manager.scanned)
    assert "condambigqa" in manager.task_index
    assert hook.indexes_task_folder(manager)
    if by_itself:  # lm-eval found the folder itself; the hook added nothing
        assert manager.include_path == str(tmp_path / "user")
        assert _times_scanned(unpatched) == 1
    else:  # the hook put the folder before the user's paths
        assert [Path(p) for p in manager.include_path] == \
            [Path(task_folder()), tmp_path / "user"]
        assert _times_scanned(unpatched) == 0


def test_lm_eval_is_asked_once_per_process(tmp_path, monkeypatch):
    module = _fake_lm_eval(tmp_path, STOCK)
    hook._patch_task_manager(module)
    probes = []
    real = hook.indexes_task_folder
    monkeypatch.setattr(hook, "indexes_task_folder",
                        lambda manager: probes.append(manager) or real(manager))
    for _ in range(3):
        assert _times_scanned(module.TaskManager()) == 1
    assert len(probes) == 1  # the probe; the real managers are not inspected


def test_a_folder_the_user_already_passes_is_not_added_again(tmp_path):
    module = _fake_lm_eval(tmp_path, STOCK)
    hook._patch_task_manager(module)
    manager = module.TaskManager(include_path=[task_folder()])
    assert _times_scanned(manager) == 1


def _shipped_lm_eval_names() -> list[str]:
    """Every task and group name declared by the YAMLs of the task folders."""
    names = []
    for path in sorted(LM_EVAL_TASKS.glob("*/*.yaml")):
        config = read_task_yaml(path)
        names += [str(config[key]) for key in ("task", "group") if isinstance(config.get(key), str)]
    return sorted(set(names))


@pytest.mark.e2e
def test_lm_eval_validate_finds_every_task_and_group():
    """One ``lm-eval validate`` call (its task index takes ~35 s) for every name, plus one
    that does not exist: exit code 1 naming only that one shows the others were found."""
    names = _shipped_lm_eval_names()
    assert {"condambig", "condambigqa", "condambigqa_paper", "hotpot_flm", "conditionalqa",
            "ambignq", "abg_coqa", "abg_coqa_detection"} <= set(names)
    missing = "condambig_no_such_task"
    result = warm_start.run(
        [executable("lm-eval"), "validate", "--tasks", ",".join([*names, missing])],
        capture_output=True, text=True, env=subprocess_env(), timeout=600, cwd="/")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-3000:]
    assert f"Tasks not found: {missing}\n" in result.stdout, output[-3000:]

