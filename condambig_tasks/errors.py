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
