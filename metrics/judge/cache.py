"""Persistent judge cache: one sqlite file, one row per judgement (judge model, full prompt,
weighting rule, and the endpoint and settings that change a judgement; see :func:`cache_key`).

Each result is written (and committed) as soon as it arrives, so a run that is killed
resumes by asking only for what is missing. Failures are never stored. WAL mode and a
busy timeout let several processes (lm-eval ranks, parallel Inspect evals) share a file.

A bad cache never ends a run with a traceback:

- a file that is not an sqlite database, or a damaged one (truncated, failing sqlite's
  ``PRAGMA quick_check``), is moved aside to ``<path>.corrupt-<time>`` with a one-line
  warning and a new cache is started;
- a cache that cannot be used at all (a folder, a read-only file or folder, a full disk,
  another program's database) is one :class:`JudgeCacheError` naming the path and what to
  set instead, raised when the cache is opened, before any judge call;
- a write that fails during a run (the disk fills up) is logged once; the run goes on
  without storing (the judgements stay in memory), and a read that fails is a miss;
- a stored value that no judgement can have (a raw score that is not a finite number in
  0..10, a weighted flag other than 0/1, a reason that is not text) is a miss: it is
  judged again and overwritten, counted in :attr:`JudgeCache.invalid_entries` and warned
  about once.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from condambig_metrics.judge.errors import JudgeCacheError
from condambig_metrics.judge.records import (
    DEFAULT_JUDGE_WEIGHTING,
    SCORE_MAX,
    SCORE_MIN,
    JudgeResult,
)

logger = logging.getLogger(__name__)

_COLUMNS = ("key", "model", "raw_score", "weighted", "reason", "created")
# sqlite's primary result codes for a file that is not a database or is damaged
# (https://www.sqlite.org/rescode.html): such a file is moved aside and rebuilt.
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26
_SQLITE_REASONS = {3: "permission denied", 8: "it is read-only", 10: "an I/O error",
                   13: "the disk is full", 14: "it cannot be created or opened",
                   1544: "its folder is read-only"}  # 1544: SQLITE_READONLY_DIRECTORY
_WHAT_TO_DO = ("Point CONDAMBIG_JUDGE_CACHE (or --metadata judge_cache) at a writable file, "
               "or set it to 'off' to run without a cache.")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judgements (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    raw_score REAL NOT NULL,
    weighted INTEGER NOT NULL,
    reason TEXT NOT NULL,
    created REAL NOT NULL DEFAULT (julianday('now'))
)
"""


def cache_key(model_name: str, prompt: str, weighting: str = DEFAULT_JUDGE_WEIGHTING,
              settings: Mapping[str, object] | None = None) -> str:
    """sha256 over the judge model name, the full prompt, the weighting rule and the
    backend's settings that change a judgement (endpoint, log-probabilities, length).

    Only what differs from the defaults is added (the weighting rule's name when it is not
    the default, then each entry of ``settings`` in name order), so a judgement made with
    the default rule at the default endpoint with default settings keeps the key
    sha256(model \0 prompt). Text is encoded with ``surrogatepass``: a lone surrogate in
    a prompt gives a key, not an error.
    """
    digest = hashlib.sha256()
    digest.update(_encoded(model_name))
    digest.update(b"\x00")
    digest.update(_encoded(prompt))
    if weighting != DEFAULT_JUDGE_WEIGHTING:
        digest.update(b"\x00weighting=")
        digest.update(_encoded(weighting))
    for name in sorted(settings or {}):
        digest.update(b"\x00" + _encoded(name) + b"=")
        digest.update(_encoded(str((settings or {})[name])))
    return digest.hexdigest()


def _encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


class JudgeCache:
    """Thread-safe sqlite cache; reconnects after a fork so each process has its own handle."""

    def __init__(self, path: str | os.PathLike[str], busy_timeout_seconds: float = 60.0):
        self.path = Path(path).expanduser()
        self._busy_timeout = busy_timeout_seconds
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._pid: int | None = None
        self._writable = True  # False after a write failed: the run goes on without storing
        self._readable = True  # False after a read failed: every lookup is a miss
        self.invalid_entries = 0
        """Stored values no judgement can have, met by :meth:`get` (each judged again)."""

    def open(self) -> None:
        """Open (and create) the file now, so a bad location fails before any judge call."""
        with self._lock:
            self._connect()

    @classmethod
    def check(cls, path: str | os.PathLike[str]) -> None:
        """Open (and create) the cache file and close it again: a front end calls this before
        any generation, so an unusable path raises :class:`JudgeCacheError` then."""
        cache = cls(path)
        try:
            cache.open()
        finally:
            cache.close()

    def get(self, key: str) -> JudgeResult | None:
        """The stored judgement (``cached``), or None: not stored, not valid, or the file
        unreadable."""
        with self._lock:
            connection = self._connect()
            if not self._readable:
                return None
            try:
                row = connection.execute(
                    "SELECT raw_score, weighted, reason FROM judgements WHERE key = ?", (key,)
                ).fetchone()
            except sqlite3.Error as error:
                self._readable = self._writable = False
                logger.warning("judge cache %s: cannot read it (%s); continuing without the "
                               "cache (judgements are asked again and not stored)",
                               self.path, error)
                return None
            if row is None:
                return None
            judgement = _valid_judgement(*row)
            if judgement is None:
                self.invalid_entries += 1
                if self.invalid_entries == 1:
                    logger.warning("judge cache %s: a stored judgement is not valid (raw score "
                                   "%r, weighted %r, reason of type %s); judging it again and "
                                   "replacing it (further ones are counted, not logged)",
                                   self.path, row[0], row[1], type(row[2]).__name__)
            return judgement

    def put(self, key: str, model_name: str, judgement: JudgeResult) -> None:
        """Store a judgement; a value :meth:`get` would refuse is not stored, and a failed
        write (a full disk) is logged once and ends storing for this run, never the run."""
        if _valid_judgement(judgement.raw_score, int(judgement.weighted),
                            judgement.reason) is None:
            logger.debug("judge cache %s: not storing %r (outside what a lookup accepts)",
                         self.path, judgement)
            return
        with self._lock:
            connection = self._connect()
            if not self._writable:
                return
            try:
                connection.execute(
                    "INSERT OR REPLACE INTO judgements (key, model, raw_score, weighted, reason) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (key, model_name, judgement.raw_score, int(judgement.weighted),
                     judgement.reason),
                )
            except sqlite3.Error as error:
                self._writable = False
                logger.warning("judge cache %s: cannot store judgements (%s); continuing "
                               "without storing: this run's judgements are kept, a rerun asks "
                               "for them again. %s", self.path, _reason(error), _WHAT_TO_DO)

    def __len__(self) -> int:
        with self._lock:
            return int(self._connect().execute("SELECT COUNT(*) FROM judgements").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()
            self._connection = None

    def __getstate__(self) -> dict:
        # The connection is per process; a pickled cache reopens the same file.
        return {"path": str(self.path), "busy_timeout": self._busy_timeout}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["path"], state["busy_timeout"])

    def _connect(self) -> sqlite3.Connection:
        if self._connection is not None and self._pid == os.getpid():
            return self._connection
        try:
            connection = self._open_usable()
        except _NotAJudgeCache as damaged:
            self._move_aside(str(damaged))
            try:
                connection = self._open_usable()
            except _NotAJudgeCache as again:
                raise JudgeCacheError(f"{self.path} is not a judge cache ({again}) "
                                      f"even after moving the old file aside. "
                                      f"{_WHAT_TO_DO}") from None
        self._connection, self._pid = connection, os.getpid()
        self._writable = self._readable = True
        return connection

    def _open_usable(self) -> sqlite3.Connection:
        """A connection on a readable, writable judge cache; :class:`_NotAJudgeCache` for a
        damaged file, :class:`JudgeCacheError` for one that cannot be used."""
        if self.path.is_dir():
            raise JudgeCacheError(
                f"the judge cache {self.path} is a folder, not a file. Point "
                "CONDAMBIG_JUDGE_CACHE (or --metadata judge_cache) at a file in it, such as "
                f"{self.path / 'judge.sqlite'}, or set it to 'off' to run without a cache.")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise JudgeCacheError(f"cannot create the folder of the judge cache {self.path}: "
                                  f"{error.strerror or error}. {_WHAT_TO_DO}") from None
        connection = None
        try:
            connection = sqlite3.connect(
                self.path, timeout=self._busy_timeout, isolation_level=None,
                check_same_thread=False,
            )
            connection.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            _check_not_foreign(connection)
            _set_up(connection, self._busy_timeout)
            _check_usable(connection)
        except sqlite3.Error as error:
            if connection is not None:
                connection.close()
            if _is_damage(error):
                raise _NotAJudgeCache(" ".join(str(error).split())) from None
            raise JudgeCacheError(f"cannot use the judge cache {self.path}: {_reason(error)}. "
                                  f"{_WHAT_TO_DO}") from None
        except BaseException:
            if connection is not None:
                connection.close()
            raise
        return connection

    def _move_aside(self, reason: str) -> None:
        """Rename the damaged file (and its sqlite side files) to ``<path>.corrupt-<time>``."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        number = 1
        while target.exists():
            number += 1
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{number}")
        try:
            os.replace(self.path, target)
        except FileNotFoundError:
            return  # another process moved it aside first and starts the new one
        except OSError as error:
            raise JudgeCacheError(
                f"{self.path} is not a judge cache ({reason}) and cannot be moved aside "
                f"({error.strerror or error}). Move or delete it, or p"
                f"{_WHAT_TO_DO[1:]}") from None
        for suffix in ("-wal", "-shm", "-journal"):
            side = Path(f"{self.path}{suffix}")
            if side.exists():
                try:
                    os.replace(side, f"{target}{suffix}")
                except OSError:
                    pass  # sqlite ignores side files that do not match the new database
        logger.warning("%s is not a judge cache (%s); moved to %s, starting a new one",
                       self.path, reason, target)


class _NotAJudgeCache(Exception):
    """The file is not an sqlite database, or a damaged one: to be moved aside (the
    message says why)."""


def _is_damage(error: sqlite3.Error) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)


def _reason(error: sqlite3.Error) -> str:
    code = getattr(error, "sqlite_errorcode", None)
    reason = (None if code is None
              else _SQLITE_REASONS.get(code) or _SQLITE_REASONS.get(code & 0xFF))
    return f"{reason} ({error})" if reason else str(error)


def _check_not_foreign(connection: sqlite3.Connection) -> None:
    """Raise when the file is another program's sqlite database (tables, none of ours):
    no table of ours is added to it."""
    tables = [row[0] for row in connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")]
    if tables and "judgements" not in tables:
        raise sqlite3.DatabaseError(f"another program's database: it has the tables "
                                    f"{', '.join(sorted(tables)[:5])} and no judgements")


def _check_usable(connection: sqlite3.Connection) -> None:
    """Raise the sqlite error that makes the open file unusable: damage (``quick_check``, a
    linear read of the file), a ``judgements`` table of another shape, or no write access
    (a rolled-back insert)."""
    damage = connection.execute("PRAGMA quick_check(1)").fetchone()
    if damage is None or damage[0] != "ok":
        error = sqlite3.DatabaseError(f"damaged: {damage[0] if damage else 'no answer'}")
        error.sqlite_errorcode = _SQLITE_CORRUPT  # type: ignore[attr-defined]
        raise error
    columns = tuple(row[1] for row in connection.execute("PRAGMA table_info(judgements)"))
    if columns != _COLUMNS:
        raise sqlite3.DatabaseError(
            f"another program's database: its 'judgements' table has the columns "
            f"{', '.join(columns)}")
    connection.execute("BEGIN IMMEDIATE")
    try:
        connection.execute("INSERT OR REPLACE INTO judgements (key, model, raw_score, weighted, "
                           "reason) VALUES ('', '', 0, 0, '')")
    finally:
        connection.execute("ROLLBACK")


def _valid_judgement(raw_score: object, weighted: object, reason: object) -> JudgeResult | None:
    """The judgement a stored row holds, or None when no judgement can have these values."""
    if isinstance(raw_score, bool) or not isinstance(raw_score, (int, float)):
        return None
    if not math.isfinite(raw_score) or not SCORE_MIN <= raw_score <= SCORE_MAX:
        return None
    if isinstance(weighted, bool) or weighted not in (0, 1) or not isinstance(reason, str):
        return None
    return JudgeResult.judged(float(raw_score), bool(weighted), reason, cached=True)


def _set_up(connection: sqlite3.Connection, patience_seconds: float) -> None:
    """WAL mode and the table. Switching a new file to WAL takes an exclusive lock that
    sqlite's busy timeout does not wait for, so two processes opening one fresh file at
    once see "database is locked": retry that, briefly, within the busy timeout."""
    deadline = time.monotonic() + patience_seconds
    delay = 0.01
    while True:
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute(_SCHEMA)
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
