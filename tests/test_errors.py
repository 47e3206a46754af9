"""One error style: a project error that ends an lm-eval or Inspect run is one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from condambig_tasks.errors import CondambigError, user_error_in
from tests.support import warm_start

SCRIPT = """
from condambig_tasks.errors import CondambigError, install_one_line_errors
install_one_line_errors()
try:
    raise CondambigError("AmbigNQ: data not available; set CONDAMBIG_DATA_DIR")
except CondambigError as error:
    raise RuntimeError("a framework wrapped it") from error
"""


def test_the_project_error_is_found_behind_framework_wrappers():
    inner = CondambigError("set the data folder")
    try:
        try:
            raise inner
        except CondambigError:
            raise KeyError("framework") from None  # context kept, cause suppressed
    except KeyError as outer:
        assert user_error_in(outer) is inner
    assert user_error_in(ValueError("other")) is None


def _run_as(tmp_path, script_name: str, **env: str) -> subprocess.CompletedProcess:
    """SCRIPT run as a file named ``script_name`` (``lm_eval`` is the name of lm-eval's
    console script, so the process looks like the ``lm_eval`` command)."""
    import os

    script = tmp_path / script_name
    script.write_text(SCRIPT, encoding="utf-8")
    return warm_start.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **env})


def test_uncaught_project_error_prints_one_line_and_fails(tmp_path):
    result = _run_as(tmp_path, "lm_eval")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0] == "condambig: AmbigNQ: data not available; set CONDAMBIG_DATA_DIR"
    assert "Traceback" not in result.stderr and len(lines) == 2


def test_the_traceback_is_one_variable_away(tmp_path):
    result = _run_as(tmp_path, "lm_eval", CONDAMBIG_TRACEBACK="1")
    assert "Traceback" in result.stderr and "a framework wrapped it" in result.stderr


def test_outside_the_framework_commands_python_reports_the_error(tmp_path):
    result = _run_as(tmp_path, "my_program.py")
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "a framework wrapped it" in result.stderr
    assert "condambig: AmbigNQ" not in result.stderr


@pytest.mark.parametrize("argv0, main_module, expected", [
    ("/venv/bin/lm_eval", None, True),
    ("/venv/bin/lm-eval", None, True),
    ("/venv/bin/inspect", None, True),
    ("/home/me/my_program.py", None, False),
    ("-c", None, False),
    ("", None, False),
    ("/venv/lib/lm_eval/__main__.py", "lm_eval.__main__", True),
    ("/venv/lib/inspect_ai/__main__.py", "inspect_ai.__main__", True),
    ("/venv/lib/pytest/__main__.py", "pytest.__main__", False),
])
def test_the_framework_commands_are_recognised(monkeypatch, argv0, main_module, expected):
    import types
    from importlib.machinery import ModuleSpec

    from condambig_tasks.errors import in_framework_command

    main = types.ModuleType("__main__")
    main.__spec__ = ModuleSpec(main_module, None) if main_module else None
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setattr(sys, "argv", [argv0])
    assert in_framework_command() is expected


def test_importing_the_package_leaves_the_excepthook_alone():
    """A Python program that imports this package, its Inspect entry point and lm-eval's
    task manager (which the .pth hook patches) keeps its own ``sys.excepthook``."""
    from tests.conftest import subprocess_env

    code = ("import sys\n"
            "def mine(*args): pass\n"
            "sys.excepthook = mine\n"
            "import condambig, condambig_tasks, condambig._registry, lm_eval.tasks.manager\n"
            "from condambig_tasks.errors import install_one_line_errors\n"
            "install_one_line_errors()\n"
            "print(getattr(lm_eval.tasks.manager.TaskManager, '_condambig_patched', False),"
            " sys.excepthook is mine)\n")
    result = warm_start.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=subprocess_env(), timeout=300, cwd="/")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["True", "True"]  # the hook ran; the excepthook is kept


def _cli_env(**extra: str) -> dict[str, str]:
    from tests.conftest import subprocess_env

    return subprocess_env(**{"CONDAMBIG_DATA_DIR": "/nonexistent-condambig-data", **extra})


def _last_lines(result: subprocess.CompletedProcess, count: int = 3) -> str:
    return "\n".join((result.stderr + result.stdout).strip().splitlines()[-count:])


@pytest.mark.e2e
def test_lm_eval_without_data_ends_with_the_project_message(tmp_path):
    from tests.conftest import executable

    result = warm_start.run([executable("lm_eval"), "--model", "dummy", "--tasks", "ambignq"],
                            capture_output=True, text=True,
                            env=_cli_env(CONDAMBIG_DATA_DIR=str(tmp_path)), cwd=tmp_path,
                            timeout=600)
    assert result.returncode != 0
    tail = _last_lines(result)
    assert "condambig: AmbigNQ: data not available" in tail, tail
    assert "CONDAMBIG_DATA_DIR=DIR with DIR/ambignq/ containing: dev_light.json" in tail
    assert "Traceback" not in result.stderr


@pytest.mark.e2e
def test_inspect_without_agents_fails_before_generating(tmp_path, fixture_data_dir):
    from tests.conftest import executable

    result = warm_start.run(
        [executable("inspect"), "eval", "condambig/hotpot_flm", "--model", "none",
         "-T", "split=test", "-T", f"answering_agent={tmp_path / 'no-such-agent'}",
         "--log-dir", str(tmp_path / "logs")],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
        env=_cli_env(CONDAMBIG_DATA_DIR=str(fixture_data_dir)))
    assert result.returncode != 0
    # stderr's end (Inspect prints its banner of installed hooks on stdout)
    tail = "\n".join(result.stderr.strip().splitlines()[-3:])
    assert "condambig:" in tail and "no-such-agent" in tail, tail
    assert "Traceback" not in result.stderr
    assert not list((tmp_path / "logs").glob("*.eval"))  # no eval started, nothing generated


@pytest.mark.e2e
def test_inspect_refuses_a_value_outside_the_options_type(tmp_path, fixture_data_dir):
    """``-T`` values meet the options' one validation: one line listing the allowed values."""
    from tests.conftest import executable

    result = warm_start.run(
        [executable("inspect"), "eval", "condambig/abg_coqa", "--model", "none",
         "-T", "subtask=detect", "--log-dir", str(tmp_path / "logs")],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
        env=_cli_env(CONDAMBIG_DATA_DIR=str(fixture_data_dir)))
    assert result.returncode != 0
    tail = "\n".join(result.stderr.strip().splitlines()[-3:])
    assert ("condambig: abg_coqa option subtask must be one of detection, clarification, "
            "clarified_qa; got 'detect' (did you mean 'detection'?)") in tail, tail
    assert "Traceback" not in result.stderr
    assert not list((tmp_path / "logs").glob("*.eval"))


@pytest.mark.e2e
def test_inspect_refuses_an_invalid_judge_max_failed_in_one_line(tmp_path, fixture_data_dir):
    """``CONDAMBIG_JUDGE_MAX_FAILED=abc`` ended in a 137-line traceback."""
    from tests.conftest import executable

    result = warm_start.run(
        [executable("inspect"), "eval", "condambig/abg_coqa", "--model", "none",
         "-T", "subtask=clarification", "--log-dir", str(tmp_path / "logs")],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
        env=_cli_env(CONDAMBIG_DATA_DIR=str(fixture_data_dir),
                     CONDAMBIG_JUDGE_MAX_FAILED="abc"))
    assert result.returncode != 0
    tail = "\n".join(result.stderr.strip().splitlines()[-3:])
    assert ("condambig: judge setting CONDAMBIG_JUDGE_MAX_FAILED / --metadata "
            "judge_max_failed must be a whole number >= 0, got 'abc'") in tail, tail
    assert "Traceback" not in result.stderr
    assert not list((tmp_path / "logs").glob("*.eval"))


@pytest.mark.parametrize("command", ["condambig-score", "condambig-report",
                                     "condambig-inspect-score"])
def test_each_project_command_ends_a_fixable_error_in_one_line_or_its_traceback(
        command, tmp_path, monkeypatch, capsys, use_fixture_data):
    """One line and exit 2; with ``CONDAMBIG_TRACEBACK=1`` the error itself, traceback and
    all (docs/faults.md), as in the framework commands above."""
    from condambig_tasks import cli, inspect_rescore
    from condambig_tasks.report import cli as report_cli

    missing = tmp_path / "missing.json"
    run = {"condambig-score": lambda: cli.main(["ambignq", "--outputs", str(missing)]),
           "condambig-report": lambda: report_cli.main([str(missing)]),
           "condambig-inspect-score": lambda: inspect_rescore.main([str(missing)])}[command]
    monkeypatch.delenv("CONDAMBIG_TRACEBACK", raising=False)
    capsys.readouterr()
    assert run() == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(command) and str(missing) in line
    monkeypatch.setenv("CONDAMBIG_TRACEBACK", "1")
    with pytest.raises((CondambigError, FileNotFoundError)) as raised:
        run()
    assert str(missing) in str(raised.value)
