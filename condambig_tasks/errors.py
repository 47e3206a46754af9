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


def wants_traceback() -> bool:
    """``CONDAMBIG_TRACEBACK=1``: show a project error's traceback, not its one line."""
    import os

    return os.environ.get(TRACEBACK_VARIABLE, "").strip() in {"1", "true"}


def command_error(prog: str, error: BaseException) -> int:
    """A fixable error ending one of the project's console commands: one line on stderr
    naming the command, exit status 2 (with ``CONDAMBIG_TRACEBACK=1``, raised again)."""
    import sys

    if wants_traceback():
        raise error
    print(f"{prog}: {error}", file=sys.stderr)
    return 2


def user_error_in(error: BaseException | None) -> CondambigError | None:
    """The project error behind ``error`` (itself, or what it was raised from / during)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, CondambigError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


FRAMEWORK_PACKAGES = ("lm_eval", "inspect_ai")


def in_framework_command() -> bool:
    """This process is lm-eval's or Inspect's command line: started as one of their
    console scripts (names read from their own ``console_scripts`` entry points, e.g.
    ``lm_eval``, ``lm-eval``, ``inspect``) or as ``python -m lm_eval`` / ``-m inspect_ai``."""
    import os
    import sys

    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None:  # python -m <module>
        return spec.name.split(".")[0] in FRAMEWORK_PACKAGES
    script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    script = script[:-4] if script.lower().endswith(".exe") else script
    if not script or script in {"-c", "-m"}:
        return False
    from importlib.metadata import entry_points

    return any(point.name == script and point.module.split(".")[0] in FRAMEWORK_PACKAGES
               for point in entry_points(group="console_scripts"))


def install_one_line_errors() -> None:
    """In an ``lm_eval`` or ``inspect`` command, show a project error that ends the run
    as one line, not as the framework's traceback (``CONDAMBIG_TRACEBACK=1`` shows the
    traceback). Called when either framework loads our tasks; idempotent.

    Neither framework offers a supported place for this: lm-eval's command has no error
    handling of its own, and Inspect's (``inspect_ai._util.error.exception_hook``,
    installed by its ``main``) formats only its private ``PrerequisiteError``; its hooks
    API (``inspect_ai.hooks``) reports task events, not how an error is printed. So this
    wraps ``sys.excepthook``, narrowly: only in those two command processes (a program
    that merely imports lm-eval, Inspect or this package keeps its hook), and every error
    that is not ours goes to the hook found at install time (Inspect's, in ``inspect``)."""
    import sys

    previous = sys.excepthook
    if getattr(previous, "_condambig", False) or not in_framework_command():
        return

    def excepthook(kind, error, traceback):
        found = user_error_in(error)
        if found is None or wants_traceback():
            previous(kind, error, traceback)
            return
        print(f"condambig: {found}", file=sys.stderr)
        print(f"(set {TRACEBACK_VARIABLE}=1 for the full traceback)", file=sys.stderr)

    excepthook._condambig = True  # type: ignore[attr-defined]
    sys.excepthook = excepthook
