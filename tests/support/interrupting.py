"""Signalling a real CLI process part-way and checking how it stopped (interrupt tests)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def interrupt(command: list[str], env: dict[str, str], cwd: Path, ready: Callable[[], bool],
              signum: int, work: Callable[[], int]) -> tuple[int, int, str]:
    """Start ``command``, send ``signum`` once ``ready()``; (exit code, the work done after
    the signal, stderr). ``work()`` counts what the run has done (requests a server
    received, rows written): a run that stops at once does no more than what was in
    flight, whatever the time the machine's load gives it."""
    # SIGINT back to its default in the child: a shell's background job (``cmd &``) starts
    # with SIGINT ignored, which Python keeps, and Ctrl-C would then be tested on nothing
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_for(lambda: ready() or process.poll() is not None, "the run to get going")
        assert process.poll() is None, f"finished before the signal:\n{process.stderr.read()}"
        done = work()
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=300)
        return process.returncode, work() - done, stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def assert_clean_stop(code: int, work_after: int, stderr: str, in_flight: int) -> str:
    """Exit 130 with no more work done after the signal than was ``in_flight``, no
    traceback, exactly one line about the interrupt."""
    assert "Traceback" not in stderr, stderr
    assert code == 130, stderr
    assert work_after <= in_flight, f"{work_after} more done after the signal"
    lines = [line for line in stderr.splitlines() if "interrupted" in line]
    assert len(lines) == 1, stderr
    assert "run again to resume" in lines[0]
    return lines[0]


def sqlite_rows(path: Path, query: str) -> list[tuple]:
    connection = sqlite3.connect(path)
    try:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return connection.execute(query).fetchall()
    finally:
        connection.close()
