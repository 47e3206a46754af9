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
from collections.abc import Iterable, Iterator
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
    except (RecursionError, ValueError) as error:
        raise _unreadable(error) from None


def kind(value: Any) -> str:
    """'a list', 'an integer', ... for messages (never the value: it may be huge)."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
             int: "an integer", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _unreadable(error: RecursionError | ValueError) -> JsonFileError:
    """The failures of ``json`` other than a syntax error, as one :class:`JsonFileError`."""
    if isinstance(error, RecursionError):
        return JsonFileError("arrays or objects nested too deeply to read, over about "
                             f"{sys.getrecursionlimit()} levels")
    if "integer string conversion" in str(error):
        return JsonFileError(f"an integer longer than {sys.get_int_max_str_digits()} digits")
    return JsonFileError(str(error))


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


_DECODER = json.JSONDecoder()
_BLANK = " \t\n\r"
_NUMBER_GOES_ON = frozenset("0123456789.eE+-")


class _Blocks:
    """Text arriving in blocks, kept from the current row on: consumed text is dropped (its
    lines counted, so an error still names its place in the whole file)."""

    def __init__(self, blocks: Iterator[str]):
        self._blocks = blocks
        self.text = ""
        self.position = 0
        self.exhausted = False
        self._lines = 0  # newlines in the dropped text
        self._column = 0  # characters after the dropped text's last newline

    def more(self) -> bool:
        """Append the next block (dropping what was consumed); False at the end."""
        if self.position:
            dropped = self.text[:self.position]
            newlines = dropped.count("\n")
            self._lines += newlines
            self._column = (len(dropped) - dropped.rfind("\n") - 1 if newlines
                            else self._column + len(dropped))
            self.text, self.position = self.text[self.position:], 0
        block = next(self._blocks, None)
        if block is None:
            self.exhausted = True
            return False
        self.text += block
        return True

    def skip_blank(self) -> str | None:
        """The next character that is not whitespace (not consumed); None at the end."""
        while True:
            while self.position < len(self.text) and self.text[self.position] in _BLANK:
                self.position += 1
            if self.position < len(self.text):
                return self.text[self.position]
            if not self.more():
                return None

    def error(self, reason: str, offset: int | None = None) -> JsonFileError:
        offset = self.position if offset is None else offset
        before = self.text[:offset]
        line = before.count("\n")
        column = offset - before.rfind("\n") if line else self._column + offset + 1
        return JsonFileError(reason, self._lines + line + 1, column)


def iter_array(blocks: Iterable[str], unwrap: str | None = None) -> Iterator[Any]:
    """The elements of the JSON array that the text ``blocks`` make up, each parsed as soon as
    it is complete: a large text is never held whole, only the current row and one block.
    A top-level object is parsed whole, and its rows are the list under ``unwrap``. Failures
    are :class:`JsonFileError` naming the place in the whole text, with ``json.loads``'s
    reasons."""
    text = _Blocks(iter(blocks))
    first = text.skip_blank()
    if first is None:
        raise text.error("Expecting value")
    if first != "[":
        while text.more():
            pass
        value = loads(text.text)
        rows = value.get(unwrap) if isinstance(value, dict) and unwrap else None
        if not isinstance(rows, list):
            raise JsonFileError("expected a JSON array" + (
                f" or an object with a {unwrap!r} array" if unwrap else ""))
        yield from rows
        return
    text.position += 1
    expecting_row = True
    while True:
        character = text.skip_blank()
        if character is None:
            raise text.error("Expecting ',' delimiter")
        if character == "]" and expecting_row is not None:
            text.position += 1
            if text.skip_blank() is not None:
                raise text.error("Extra data")
            return
        if expecting_row is False:
            if character != ",":
                raise text.error("Expecting ',' delimiter")
            text.position += 1
            expecting_row = None  # a row must follow a comma (no trailing comma)
            continue
        yield _next_row(text)
        expecting_row = False


def _next_row(text: _Blocks) -> Any:
    """The row starting at ``text.position``, reading more blocks while it is incomplete: a
    failure is final once the whole text is read; a number is complete once a character
    that cannot continue it follows."""
    while True:
        try:
            value, end = _DECODER.raw_decode(text.text, text.position)
        except json.JSONDecodeError as error:
            if text.exhausted:
                raise text.error(error.msg, error.pos) from None
            # an incomplete row, or an error the rest of the text confirms: read until the
            # text held doubles, so a row of n blocks is parsed O(log n) times, not n
            wanted = 2 * (len(text.text) - text.position)
            while text.more() and len(text.text) - text.position < wanted:
                pass
            continue
        except (RecursionError, ValueError) as error:
            raise _unreadable(error) from None
        if not text.exhausted and isinstance(value, (int, float)) and (
                end == len(text.text) or text.text[end] in _NUMBER_GOES_ON):
            text.more()
            continue
        text.position = end
        return value
