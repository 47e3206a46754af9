"""Signalling a real CLI process part-way and checking how it stopped (interrupt tests)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

STOP_WITHIN_SECONDS = 2.0


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def interrupt(command: list[str], env: dict[str, str], cwd: Path, ready: Callable[[], bool],
              signum: int) -> tuple[int, float, str]:
    """Start ``command``, send ``signum`` once ``ready()``; (exit code, seconds it took to
    exit after the signal, stderr)."""
    # SIGINT back to its default in the child: a shell's background job (``cmd &``) starts
    # with SIGINT ignored, which Python keeps, and Ctrl-C would then be tested on nothing
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_for(lambda: ready() or process.poll() is not None, "the run to get going")
        assert process.poll() is None, f"finished before the signal:\n{process.stderr.read()}"
        process.send_signal(signum)
        sent = time.monotonic()
        _, stderr = process.communicate(timeout=60)
        return process.returncode, time.monotonic() - sent, stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def assert_clean_stop(code: int, seconds: float, stderr: str) -> str:
    """Exit 130 within the limit, no traceback, exactly one line about the interrupt."""
    assert "Traceback" not in stderr, stderr
    assert code == 130, stderr
    assert seconds < STOP_WITHIN_SECONDS, f"stopped {seconds:.2f} s after the signal"
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
