"""The tests' warm start of framework commands (tests/support/warm_start.py) behaves as a
fresh process: same output and exit code, the import-time environment honoured, a timeout
that kills the command."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.conftest import executable, subprocess_env
from tests.support import warm_start

pytestmark = pytest.mark.e2e

# a task file that never finishes loading (Inspect imports a file once it finds a @task in it)
SLEEPING_TASK = ("import time\nfrom inspect_ai import Task, task\ntime.sleep(600)\n\n\n"
                 "@task\ndef sleeper():\n    return Task()\n")


def _last_start(log) -> dict:
    """The warm start's log line of the last framework command."""
    return json.loads(log.read_text().splitlines()[-1])


def test_a_warm_command_ends_as_the_same_command_started_cold(tmp_path, monkeypatch):
    log = tmp_path / "warm.log"
    monkeypatch.setenv(warm_start.LOG_VARIABLE, str(log))
    command = [executable("inspect"), "eval", "no_such_task_file.py", "--model", "none"]
    warm = warm_start.run(command, env=subprocess_env(), cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert _last_start(log)["cold_because"] == []
    assert _last_start(log)["cpu_seconds"] is not None  # the warm server ran it
    cold = subprocess.run(command, env=subprocess_env(), cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert warm.returncode == cold.returncode != 0
    assert warm.stdout == cold.stdout
    assert warm.stderr.splitlines()[-3:] == cold.stderr.splitlines()[-3:]


def test_a_variable_the_frameworks_read_on_import_sends_the_command_cold(tmp_path,
                                                                        monkeypatch):
    log = tmp_path / "warm.log"
    monkeypatch.setenv(warm_start.LOG_VARIABLE, str(log))
    command = [executable("lm_eval"), "--help"]
    # transformers reads TRANSFORMERS_VERBOSITY when imported, and the warm interpreter
    # imported it already; CONDAMBIG_DATA_DIR is read when a task loads; a thread count
    # has a warm interpreter of its own
    for env, cold_because in ((subprocess_env(CONDAMBIG_DATA_DIR=str(tmp_path)), []),
                              (subprocess_env(OMP_NUM_THREADS="1"), []),
                              (subprocess_env(TRANSFORMERS_VERBOSITY="debug"),
                               ["TRANSFORMERS_VERBOSITY"]),
                              (subprocess_env(PYTHONWARNINGS="ignore"), ["PYTHONWARNINGS"])):
        result = warm_start.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-2000:]
        assert _last_start(log)["cold_because"] == cold_because
        assert (_last_start(log)["cpu_seconds"] is None) == bool(cold_because)


def test_a_timeout_kills_the_warm_command(tmp_path):
    (tmp_path / "sleeper.py").write_text(SLEEPING_TASK, encoding="utf-8")
    command = [executable("inspect"), "eval", "sleeper.py", "--model", "none"]
    with pytest.raises(subprocess.TimeoutExpired):
        warm_start.run(command, env=subprocess_env(), cwd=tmp_path, capture_output=True,
                       text=True, timeout=10)
    pid = warm_start.last_pid()
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(pid, 0)
