"""Lines after a framework's own report, and a non-zero exit status once it has written
its output.

lm-eval's command evaluates, writes ``results_*.json`` and the ``--log_samples`` files,
prints its table and returns normally: nothing of a task's code runs after that, and a
``SystemExit`` raised in an :mod:`atexit` handler does not change the status. So a run
whose judged numbers were withheld (the judge failed) ends in two :mod:`atexit` steps:

- :func:`say_at_exit` lines are printed to stderr when the interpreter exits, after the
  table (stdout is flushed first: a piped stdout is block-buffered) — each task's headline
  with its standard error, or why it is null;
- :func:`fail_at_exit` arms the *final* handler, which exits with the status after every
  other handler has run (log handlers flushed, locks released). :mod:`atexit` runs
  handlers last in, first out, so the ``.pth`` hook (``condambig_tasks._lm_eval_hook``)
  registers it as ``lm_eval`` starts importing, before any of lm-eval's code has
  registered one; when the hook is not installed or opted out, :func:`fail_at_exit`
  registers it and it flushes the logs itself.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Callable

FAILED_RUN_STATUS = 1

_status = 0
_said: list[Callable[[], list[str]]] = []


def fail_at_exit(status: int = FAILED_RUN_STATUS) -> None:
    """Exit with ``status`` when the interpreter exits (after the framework's output). The
    first call registers the handler that gives it, unless the start-up hook did."""
    global _status
    hook = sys.modules.get("condambig_tasks._lm_eval_hook")
    if not _status and not getattr(hook, "final_handler_registered", False):
        atexit.register(final)
    _status = _status or status


def say_at_exit(lines: Callable[[], list[str]]) -> None:
    """Print ``lines()`` to stderr when the interpreter exits (each prefixed ``condambig:``).

    A callable, so what is printed is what is known at exit (e.g. every task of the run);
    given again, it is still printed once."""
    if lines in _said:
        return
    if not _said:
        atexit.register(_say)
    _said.append(lines)


def _say() -> None:
    try:  # the framework's report first, also when both streams go to one pipe
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    for lines in _said:
        try:
            found = lines()
        except Exception:  # a report must never turn a finished run into a crash
            continue
        for line in found:
            print(f"condambig: {line}", file=sys.stderr)
    sys.stderr.flush()


def final() -> None:
    """Exit now with the armed status (the last atexit handler); nothing when none."""
    if not _status:
        return
    import logging

    logging.shutdown()  # already done when this handler runs last; harmless again
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(_status)
