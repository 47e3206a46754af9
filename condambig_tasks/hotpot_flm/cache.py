"""On-disk cache of the agents' work: downstream answers and answering-agent candidate scores.

Downstream answers are keyed by (downstream model, decoding, full prompt); the answering
agent's P(yes) of each candidate by (agent model, scoring rule, full prompt). The
incomplete- and complete-context answers do not depend on the model under evaluation, so
after the first run of a split they are never recomputed; the candidate scores and
response-context answers are cached the same way (a rerun of the same questions is free).
The work is stored batch by batch as it is computed
(:mod:`condambig_tasks.hotpot_flm.resumable`), so an interrupted run resumes from the last
finished batch. The key holds the whole prompt, so a change of data, masking seed or prompt
wording is a new key, never a stale hit. SQLite makes concurrent readers and writers safe
(each batch is one transaction: a killed run leaves whole batches or nothing).
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_CHUNK = 500  # keys per SELECT (sqlite's bound-parameter limit is 999 on old builds)


def answer_key(model_identity: str, decoding: str, prompt: str) -> str:
    return hashlib.sha256("\x1f".join((model_identity, decoding, prompt)).encode()).hexdigest()


class _PromptCache:
    """A persistent prompt → value map in one table, for one model and setup."""

    table = ""
    column = ""
    sql_type = ""

    def __init__(self, path: Path, model_identity: str, setup: str):
        self.path = Path(path)
        self.model_identity = model_identity
        self.setup = setup
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as connection:
            connection.execute(f"CREATE TABLE IF NOT EXISTS {self.table} "
                               f"(key TEXT PRIMARY KEY, {self.column} {self.sql_type} NOT NULL)")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        connection = sqlite3.connect(self.path, timeout=60)
        try:
            with connection:  # commits on success
                yield connection
        finally:
            connection.close()

    def _key(self, prompt: str) -> str:
        return answer_key(self.model_identity, self.setup, prompt)

    def _valid(self, value: Any) -> bool:
        return True

    def get_many(self, prompts: Iterable[str]) -> dict[str, Any]:
        """The cached values among ``prompts`` (a value of the wrong kind counts as absent)."""
        wanted = {self._key(prompt): prompt for prompt in prompts}
        found: dict[str, Any] = {}
        keys = list(wanted)
        with self._connect() as connection:
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start:start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                query = f"SELECT key, {self.column} FROM {self.table} WHERE key IN ({marks})"
                for key, value in connection.execute(query, chunk):
                    if self._valid(value):
                        found[wanted[key]] = value
        return found

    def put_many(self, values: Mapping[str, Any]) -> None:
        """Store ``values`` in one transaction."""
        with self._connect() as connection:
            connection.executemany(
                f"INSERT OR REPLACE INTO {self.table} (key, {self.column}) VALUES (?, ?)",
                [(self._key(prompt), value) for prompt, value in values.items()],
            )

    def __len__(self) -> int:
        with self._connect() as connection:
            return int(connection.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0])


class AnswerCache(_PromptCache):
    """Downstream answers for one downstream model and decoding setup."""

    table, column, sql_type = "answers", "answer", "TEXT"

    def __init__(self, path: Path, model_identity: str, decoding: str):
        super().__init__(path, model_identity, decoding)
        self.decoding = decoding

    def _valid(self, value: Any) -> bool:
        return isinstance(value, str)


class ScoreCache(_PromptCache):
    """The answering agent's P(yes) per candidate prompt, for one agent and scoring rule."""

    table, column, sql_type = "candidate_scores", "p_yes", "REAL"

    def _valid(self, value: Any) -> bool:
        return isinstance(value, float) and math.isfinite(value) and 0.0 <= value <= 1.0


class NoCache:
    """Stand-in when caching is switched off: nothing is found, nothing is kept."""

    def get_many(self, prompts: Sequence[str]) -> dict[str, Any]:
        return {}

    def put_many(self, values: Mapping[str, Any]) -> None:
        return None
