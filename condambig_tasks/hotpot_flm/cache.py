"""On-disk cache of downstream answers, keyed by (downstream model, decoding, full prompt).

The downstream answers on the incomplete and complete contexts do not depend on the
model under evaluation, so after the first run of a split they are never recomputed; the
response-context answers are cached the same way (a rerun of the same questions is free).
The key holds the whole prompt, so a change of data, masking seed or prompt wording is a
new key, never a stale hit. SQLite makes concurrent readers and writers safe.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

SCHEMA = "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, answer TEXT NOT NULL)"


def answer_key(model_identity: str, decoding: str, prompt: str) -> str:
    return hashlib.sha256("\x1f".join((model_identity, decoding, prompt)).encode()).hexdigest()


class AnswerCache:
    """A persistent prompt → answer map for one downstream model and decoding setup."""

    def __init__(self, path: Path, model_identity: str, decoding: str):
        self.path = Path(path)
        self.model_identity = model_identity
        self.decoding = decoding
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as connection:
            connection.execute(SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        connection = sqlite3.connect(self.path, timeout=60)
        try:
            with connection:  # commits on success
                yield connection
        finally:
            connection.close()

    def _key(self, prompt: str) -> str:
        return answer_key(self.model_identity, self.decoding, prompt)

    def get_many(self, prompts: Iterable[str]) -> dict[str, str]:
        """The cached answers among ``prompts``."""
        wanted = {self._key(prompt): prompt for prompt in prompts}
        found: dict[str, str] = {}
        keys = list(wanted)
        with self._connect() as connection:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                marks = ",".join("?" * len(chunk))
                query = f"SELECT key, answer FROM answers WHERE key IN ({marks})"
                for key, answer in connection.execute(query, chunk):
                    found[wanted[key]] = answer
        return found

    def put_many(self, answers: Mapping[str, str]) -> None:
        with self._connect() as connection:
            connection.executemany(
                "INSERT OR REPLACE INTO answers (key, answer) VALUES (?, ?)",
                [(self._key(prompt), answer) for prompt, answer in answers.items()],
            )


class NoCache:
    """Stand-in when caching is switched off: nothing is found, nothing is kept."""

    def get_many(self, prompts: Sequence[str]) -> dict[str, str]:
        return {}

    def put_many(self, answers: Mapping[str, str]) -> None:
        return None
