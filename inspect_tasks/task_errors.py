"""A task that ends in one of the project's errors is shown as its one line, not a traceback.

An error raised while a task runs (the grader refusing every request or going away
mid-run: :func:`condambig._factory.grader_failure`) ends the task with status ``error``;
the ``inspect`` command then draws the task's panel around the exception's whole
traceback (``inspect_ai._display.core.results.task_result_error``), dozens of lines of
Inspect's frames around the one line that says what to do. In the ``inspect`` command
only (as :func:`condambig_tasks.errors.install_one_line_errors`), that panel shows
``condambig: <message>`` instead for a project error; every other error, and any error
with ``CONDAMBIG_TRACEBACK=1``, keeps Inspect's traceback. The log keeps the traceback.
"""

from __future__ import annotations

import os
from typing import Any

from condambig_tasks.errors import TRACEBACK_VARIABLE, in_framework_command, user_error_in


def one_line_body(error: BaseException) -> str | None:
    """The panel's body for ``error``: the project error's line (None: not ours, or the
    traceback was asked for)."""
    found = user_error_in(error)
    if found is None or os.environ.get(TRACEBACK_VARIABLE, "").strip() in {"1", "true"}:
        return None
    return f"condambig: {found}"


def install() -> None:
    """Wrap Inspect's task-error panel (idempotent; a no-op outside the ``inspect``
    command, or where Inspect no longer draws the panel this way)."""
    if not in_framework_command():
        return
    try:
        from inspect_ai._display.core import results
    except ImportError:
        return
    drawn = getattr(results, "task_result_error", None)
    if drawn is None or getattr(drawn, "_condambig", False):
        return

    def task_result_error(profile: Any, error: Any) -> Any:
        body = one_line_body(error.exc_value)
        if body is None:
            return drawn(profile, error)
        from rich.text import Text

        return results.task_panel(
            profile=profile, show_model=True, body=Text(body), subtitle=None,
            footer=results.task_interrupted(profile, error.samples_completed),
            log_location=profile.log_location)

    task_result_error._condambig = True  # type: ignore[attr-defined]
    results.task_result_error = task_result_error


install()
