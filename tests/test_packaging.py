"""Installation and registration: import names, the lm-eval hook, the Inspect entry point."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, executable, subprocess_env
from tests.support import lm_eval_listing
from tests.support.fresh_site import venv_with_checkout_pth

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

DIRECTORY_OF = {"condambig_tasks": "condambig_tasks", "condambig_metrics": "metrics",
                "condambig": "inspect_tasks"}
LM_EVAL_TASKS = ("condambigqa", "condambigqa_gold_conditions", "condambigqa_no_conditions",
                 "condambigqa_closed_book", "condambigqa_closed_book_conditions",
                 "condambigqa_all")


BUILTIN_PREFIX = "LM-EVAL-TASK-FOLDER: "


def list_tasks(python: str, env: dict[str, str]) -> tuple[str, list[str], str]:
    """:func:`tests.support.lm_eval_listing.list_tasks` in one child: the same listing child,
    which also prints lm-eval's own task folder as it exits (instead of a second interpreter
    importing lm-eval to say it)."""
    import json

    code = ("import atexit, pathlib, sys, lm_eval.tasks\n"
            "atexit.register(lambda: print(" + repr(BUILTIN_PREFIX) + " + str(pathlib.Path("
            "lm_eval.tasks.__file__).parent), file=sys.stderr))\n" + lm_eval_listing._CHILD)
    result = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env,
                            cwd="/", timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stderr.splitlines()
    [asked] = [line for line in lines if line.startswith(lm_eval_listing.ASKED_PREFIX)]
    [builtin] = [line for line in lines if line.startswith(BUILTIN_PREFIX)]
    return (result.stdout, json.loads(asked[len(lm_eval_listing.ASKED_PREFIX):]),
            builtin[len(BUILTIN_PREFIX):])


def _declared_packages() -> set[str]:
    """The packages setup.py gives setuptools (its ``setup()`` call captured, not run)."""
    import runpy
    from unittest import mock

    with mock.patch("setuptools.setup") as setup:
        runpy.run_path(str(REPO_ROOT / "setup.py"), run_name="setup_probe")
    kwargs = setup.call_args.kwargs
    assert {name: str(REPO_ROOT / folder) for name, folder in DIRECTORY_OF.items()} == \
        {name: str(REPO_ROOT / folder) for name, folder in kwargs["package_dir"].items()}
    return set(kwargs["packages"])


def test_every_package_directory_is_declared_under_its_import_name():
    found = set()
    for import_name, directory in DIRECTORY_OF.items():
        for init in (REPO_ROOT / directory).rglob("__init__.py"):
            relative = init.parent.relative_to(REPO_ROOT / directory)
            found.add(".".join([import_name, *relative.parts]))
    assert found == _declared_packages()


def test_no_generic_top_level_names_are_installed():
    assert all(name.split(".")[0] in DIRECTORY_OF for name in _declared_packages())


def test_startup_hook_is_cheap_and_lazy():
    code = ("import sys; print('condambig_tasks._lm_eval_hook' in sys.modules, "
            "'lm_eval' in sys.modules, 'condambig_metrics' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=subprocess_env(), check=True).stdout.split()
    assert out == ["True", "False", "False"]


@pytest.mark.e2e
def test_stock_lm_eval_lists_the_tasks():
    """lm-eval's own listing command, no flag: its TaskManager asks for its built-in tasks
    and our folder (lm-eval's tree itself is not indexed: tests/support/lm_eval_listing.py)."""
    import condambig_tasks.lm_eval_tasks as task_folder

    listed, asked, builtin = list_tasks(sys.executable, subprocess_env())
    assert asked[0] == builtin and task_folder.task_folder() in asked
    names = {line.split("|")[1].strip() for line in listed.splitlines() if line.count("|") > 1}
    for task in LM_EVAL_TASKS:
        assert task in names, task


def test_the_opt_out_leaves_lm_eval_untouched(tmp_path):
    """With the opt-out set, importing lm-eval's task manager patches nothing (so its task
    index holds none of ours; indexing lm-eval's whole task tree to show it costs ~45 s).
    Run where ``site`` processes this checkout's .pth line (not an earlier install's)."""
    python = venv_with_checkout_pth(tmp_path / "venv")
    code = ("import lm_eval.tasks.manager as m, sys;"
            "print(getattr(m.TaskManager, '_condambig_patched', False),"
            " 'condambig_tasks._lm_eval_hook' in sys.modules)")
    outputs = {}
    for opt_out in ("", "1"):
        env = subprocess_env(CONDAMBIG_DISABLE_LM_EVAL_HOOK=opt_out)
        env.pop("PYTHONPATH", None)
        result = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                                env=env, timeout=300, cwd="/")
        assert result.returncode == 0, result.stderr[-2000:]
        outputs[opt_out] = result.stdout.split()
    assert outputs[""] == ["True", "True"]
    assert outputs["1"] == ["False", "False"]  # the .pth line imported nothing


def test_hook_adds_the_task_folder_to_task_manager_include_paths():
    code = (
        "from lm_eval.tasks import TaskManager; import condambig_tasks.lm_eval_tasks as t;"
        "m = TaskManager(include_path='/nonexistent-user-path');"
        "print(t.task_folder() in [str(p) for p in m.include_path])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=subprocess_env(), timeout=300)
    assert result.stdout.strip().endswith("True"), result.stderr[-2000:]


@pytest.mark.e2e
def test_inspect_lists_the_tasks():
    listing = subprocess.run([executable("inspect"), "list", "tasks", "inspect_tasks"],
                             capture_output=True, text=True, cwd=REPO_ROOT,
                             env=subprocess_env(), timeout=300)
    assert "inspect_tasks/condambigqa.py@condambigqa" in listing.stdout, listing.stderr[-2000:]
    code = ("from inspect_ai._util.entrypoints import ensure_entry_points;"
            "from inspect_ai._util.registry import registry_find, registry_info;"
            "ensure_entry_points();"
            "print(sorted(registry_info(t).name for t in registry_find(lambda i: i.type == 'task')))")
    registered = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                env=subprocess_env(), timeout=300, cwd="/")
    assert "condambig/condambigqa" in registered.stdout, registered.stderr[-2000:]


@pytest.mark.e2e
def test_the_readme_inspect_listing_command_lists_every_task(tmp_path):
    """README's "Listing the tasks" command, run as written from another folder."""
    import re

    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    [command] = re.findall(r"Inspect: `(.*?inspect list tasks.*?)`", readme)
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                            cwd=tmp_path, env=subprocess_env(), timeout=300)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
    from condambig_tasks.register import inspect_tasks

    listed = {line.split("@", 1)[1] for line in result.stdout.split() if "@" in line}
    assert listed == {task.name for task in inspect_tasks()}


def _source_copy(tmp_path: Path) -> Path:
    """A copy of the checkout to build from (a build leaves ``build/`` behind, which would
    make ``inspect list tasks`` in the checkout show every task twice)."""
    source = tmp_path / "source"
    shutil.copytree(REPO_ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis"))
    return source


@pytest.fixture(scope="module")
def built_wheel(tmp_path_factory) -> Path:
    """The project's wheel, built once from a copy of the checkout for this module's tests
    (read-only: one checks its contents, one installs it into a fresh venv)."""
    tmp_path = tmp_path_factory.mktemp("regular-wheel")
    source, wheel_dir = _source_copy(tmp_path), tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(wheel_dir), str(source)], check=True, timeout=600,
                   capture_output=True)
    return next(wheel_dir.glob("condambig-*.whl"))


@pytest.mark.e2e
def test_regular_wheel_ships_the_pth_file_at_the_root(built_wheel):
    wheel = built_wheel
    names = zipfile.ZipFile(wheel).namelist()
    assert "condambig_lm_eval.pth" in names
    assert "condambig_tasks/lm_eval_tasks/condambigqa/condambigqa.yaml" in names
    assert "condambig_tasks/lm_eval_tasks/condambigqa/_condambigqa_all.yaml" in names
    assert "condambig_tasks/assets.py" in names  # the upstream sources, for the register
    assert not [n for n in names if n.endswith("/eval.yaml")]  # catalogue facts are code
    assert any(n.startswith("condambig_metrics/") for n in names)
    assert any(n.startswith("condambig/") for n in names)
    for notice in ("LICENSE", "NOTICE"):  # MIT, and the upstream data and scripts
        assert any(n.startswith("condambig-") and ".dist-info/" in n
                   and n.endswith("/" + notice) for n in names), notice


def _root_files(wheel: Path) -> set[str]:
    return {name for name in zipfile.ZipFile(wheel).namelist() if "/" not in name}


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["lenient", "strict"])
def test_editable_wheel_ships_the_pth_file_at_the_root(tmp_path, mode):
    """``pip install -e .`` installs the PEP 660 wheel setuptools builds here; its root
    files land at the site-packages root (``--config-settings editable_mode=strict`` too)."""
    source, wheel_dir = _source_copy(tmp_path), tmp_path / "wheel"
    code = ("import sys; from setuptools import build_meta;"
            "build_meta.build_editable(sys.argv[1], {'editable_mode': sys.argv[2]})")
    result = subprocess.run([sys.executable, "-c", code, str(wheel_dir), mode], cwd=source,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    [wheel] = wheel_dir.glob("condambig-*.editable-*.whl")
    assert "condambig_lm_eval.pth" in _root_files(wheel)
    record = next(name for name in zipfile.ZipFile(wheel).namelist() if name.endswith("/RECORD"))
    assert "\ncondambig_lm_eval.pth," in "\n" + zipfile.ZipFile(wheel).read(record).decode()


def test_setup_py_uses_no_private_setuptools_name():
    """setup.py extends setuptools through public names only: no ``_``-prefixed module or
    method of setuptools is imported or overridden (``editable_wheel`` is internal)."""
    import ast
    import importlib

    tree = ast.parse((REPO_ROOT / "setup.py").read_text(encoding="utf-8"))
    imported = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module.startswith("setuptools"):
            assert not any(part.startswith("_") for part in node.module.split(".")), node.module
            assert "editable_wheel" not in node.module
            module = importlib.import_module(node.module)
            imported.update({alias.asname or alias.name: getattr(module, alias.name)
                             for alias in node.names})
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [imported[base.id] for base in node.bases if isinstance(base, ast.Name)]
        for method in (n for n in node.body if isinstance(n, ast.FunctionDef)):
            private = method.name.startswith("_") and not method.name.startswith("__")
            overrides = any(hasattr(base, method.name) for base in bases)
            assert not (private and overrides), f"{node.name}.{method.name}"


def _isolated_venv_seeing_this_environment(venv: Path) -> Path:
    """A fresh venv whose own site-packages come first and that also sees the packages of
    the interpreter running the tests (lm-eval and its dependencies).

    ``--system-site-packages`` would expose the *base* interpreter's site-packages, not this
    (test) venv's, so it only works where lm-eval is also installed into the base Python.
    A plain path line in a ``.pth`` file appends this environment's site-packages to
    ``sys.path`` without running its own ``.pth`` files, so this checkout's editable
    install and its lm-eval hook stay out: only the wheel under test provides condambig.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=300)
    python = venv / "bin" / "python"
    venv_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    this_site = sysconfig.get_paths()["purelib"]
    Path(venv_site, "zz_test_environment.pth").write_text(this_site + "\n")
    return python


@pytest.mark.e2e
def test_regular_install_makes_stock_lm_eval_find_the_tasks(tmp_path, built_wheel):
    """A non-editable install into a fresh venv (lm-eval itself comes from the test venv)."""
    wheel = built_wheel
    python = _isolated_venv_seeing_this_environment(tmp_path / "venv")
    # pip of the test environment installs into the new venv's site-packages
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", str(wheel)], check=True, timeout=600,
                   capture_output=True)
    listed, asked, builtin = list_tasks(str(python), subprocess_env())
    assert asked[0] == builtin
    rows = [row for row in listed.splitlines()
            if row.count("|") > 1 and row.split("|")[1].strip() == "condambigqa"]
    assert rows and str(tmp_path / "venv") in rows[0], rows
