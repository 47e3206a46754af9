"""JSON from files a user or an upstream source gives (outputs, data, framework logs and
results): every way the text can fail to be a value is one :class:`JsonFileError` with a
short reason, which each reader words as its own one-line error naming the file.

``json.loads`` fails in three ways: a syntax error (``JSONDecodeError``), nesting deeper
than the interpreter's recursion limit (``RecursionError``), and an integer literal longer
than Python's int-string conversion limit (a plain ``ValueError``, see
``sys.get_int_max_str_digits``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any


class JsonFileError(ValueError):
    """Text that is not a JSON value: ``reason`` is a phrase, ``line`` / ``column`` the
    1-based place (in the file, for :func:`loads_lines`) where it failed, when known."""

    def __init__(self, reason: str, line: int | None = None, column: int | None = None):
        where = "" if line is None else f" at line {line}" + (
            "" if column is None else f" column {column}")
        super().__init__(reason + where)
        self.reason = reason
        self.line = line
        self.column = column


def loads(text: str) -> Any:
    """``json.loads`` whose every failure is a :class:`JsonFileError`."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise JsonFileError(error.msg, error.lineno, error.colno) from None
    except RecursionError:
        raise JsonFileError("arrays or objects nested too deeply to read, over about "
                            f"{sys.getrecursionlimit()} levels") from None
    except ValueError as error:
        if "integer string conversion" in str(error):
            raise JsonFileError(f"an integer longer than {sys.get_int_max_str_digits()} "
                                "digits") from None
        raise JsonFileError(str(error)) from None


def loads_lines(text: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) of every non-blank line of JSON Lines text."""
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            yield number, loads_line(line, number)


def loads_line(line: str, number: int) -> Any:
    """One line of a JSON Lines file; a failure names ``number`` as its line."""
    try:
        return loads(line)
    except JsonFileError as error:
        raise JsonFileError(error.reason, number, error.column) from None
