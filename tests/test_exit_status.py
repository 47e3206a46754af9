"""A run whose judged numbers were withheld exits non-zero after everything else of the
exit has happened (the framework's output written, every other atexit handler run)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import subprocess_env

# An lm-eval process: the start-up hook registers the status handler as ``lm_eval`` starts
# importing, so handlers registered afterwards (logging's, the two below) run before it.
SCRIPT = """
import lm_eval
import atexit
from condambig_tasks import exit_status
atexit.register(lambda: print("handler registered before ran", flush=True))
exit_status.say_at_exit(lambda: ["combined_score is null: the judge failed"])
{fail}
atexit.register(lambda: print("handler registered after ran", flush=True))
print("main done", flush=True)
"""


def _run(fail: bool) -> subprocess.CompletedProcess:
    code = SCRIPT.format(fail="exit_status.fail_at_exit()" if fail else "")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=subprocess_env())


def test_the_status_comes_after_every_other_exit_handler():
    result = _run(fail=True)
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["main done", "handler registered after ran",
                                          "handler registered before ran"]
    assert result.stderr.strip() == "condambig: combined_score is null: the judge failed"


def test_without_a_failure_the_lines_are_said_and_the_status_is_zero():
    result = _run(fail=False)
    assert result.returncode == 0
    assert "handler registered before ran" in result.stdout
    assert "condambig: combined_score is null" in result.stderr


def test_the_lines_follow_the_framework_report_in_one_pipe():
    """``lm_eval ... 2>&1 | tee run.log``: stdout is block-buffered in a pipe, and the lines
    still come after the table printed to it."""
    code = ("from condambig_tasks import exit_status\n"
            "exit_status.say_at_exit(lambda: ['ambignq f1_answer_all = 0.5000 ± 0.1000'])\n"
            "print('|table row|')\n")
    env = subprocess_env()
    env.pop("PYTHONUNBUFFERED", None)  # as lm_eval runs for most users: stdout buffered
    result = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=60, env=env)
    assert result.stdout.splitlines() == ["|table row|",
                                          "condambig: ambignq f1_answer_all = 0.5000 ± 0.1000"]
