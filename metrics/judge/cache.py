"""Persistent judge cache: one sqlite file, one row per judgement (judge model, full prompt,
weighting rule, and the endpoint and settings that change a judgement; see :func:`cache_key`).

Each result is written (and committed) as soon as it arrives, so a run that is killed
resumes by asking only for what is missing. Failures are never stored. WAL mode and a
busy timeout let several processes (lm-eval ranks, parallel Inspect evals) share a file.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from condambig_metrics.judge.records import DEFAULT_JUDGE_WEIGHTING

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


@dataclass(frozen=True)
class CachedJudgement:
    raw_score: float
    weighted: bool
    reason: str


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

    def open(self) -> None:
        """Open (and create) the file now, so a bad location fails before any judge call."""
        with self._lock:
            self._connect()

    def get(self, key: str) -> CachedJudgement | None:
        with self._lock:
            row = self._connect().execute(
                "SELECT raw_score, weighted, reason FROM judgements WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        return CachedJudgement(raw_score=float(row[0]), weighted=bool(row[1]), reason=row[2])

    def put(self, key: str, model_name: str, judgement: CachedJudgement) -> None:
        with self._lock:
            self._connect().execute(
                "INSERT OR REPLACE INTO judgements (key, model, raw_score, weighted, reason) "
                "VALUES (?, ?, ?, ?, ?)",
                (key, model_name, judgement.raw_score, int(judgement.weighted), judgement.reason),
            )

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
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(
                self.path, timeout=self._busy_timeout, isolation_level=None,
                check_same_thread=False,
            )
            connection.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            _set_up(connection, self._busy_timeout)
        except (sqlite3.Error, OSError) as error:
            raise OSError(
                f"cannot open the judge cache {self.path}: {error}. Point "
                "CONDAMBIG_JUDGE_CACHE (or --metadata judge_cache) at a writable file, or set "
                "it to 'off' to run without a cache."
            ) from error
        self._connection, self._pid = connection, os.getpid()
        return connection


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
