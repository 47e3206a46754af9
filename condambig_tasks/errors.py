"""The project's user-facing error: its message says what happened and what to do.

Every front end (``condambig-score``, lm-eval, Inspect) shows it as one line. Data errors
(:class:`condambig_tasks.data.DataUnavailableError`, ``CorruptDataError``) are subclasses.
"""

from __future__ import annotations


class CondambigError(Exception):
    """A condition the user can fix (missing data, bad option, bad prediction file)."""


class ConfigurationError(CondambigError, ValueError):
    """An option value that is not allowed; the message names the option and the choices."""


class PredictionFileError(CondambigError, ValueError):
    """A prediction / output file that cannot be read as the benchmark's format."""


TRACEBACK_VARIABLE = "CONDAMBIG_TRACEBACK"


def user_error_in(error: BaseException | None) -> CondambigError | None:
    """The project error behind ``error`` (itself, or what it was raised from / during)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, CondambigError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def install_one_line_errors() -> None:
    """Show a project error that ends an lm-eval or Inspect run as one line, not as the
    framework's traceback (``CONDAMBIG_TRACEBACK=1`` shows the traceback). Other errors
    keep Python's usual report. Idempotent; called when either framework loads our tasks."""
    import os
    import sys

    previous = sys.excepthook
    if getattr(previous, "_condambig", False):
        return

    def excepthook(kind, error, traceback):
        found = user_error_in(error)
        if found is None or os.environ.get(TRACEBACK_VARIABLE, "").strip() in {"1", "true"}:
            previous(kind, error, traceback)
            return
        print(f"condambig: {found}", file=sys.stderr)
        print(f"(set {TRACEBACK_VARIABLE}=1 for the full traceback)", file=sys.stderr)

    excepthook._condambig = True  # type: ignore[attr-defined]
    sys.excepthook = excepthook
