"""A bad judge cache never ends a run with a traceback: damaged files are moved aside and
rebuilt, unusable ones are one error naming the path, a full disk mid-run keeps the run's
judgements, and stored values no judgement can have are judged again.

Read-only cases run in a child process that cannot override file permissions (as root,
through ``setpriv`` without CAP_DAC_OVERRIDE), so ``chmod`` really makes them read-only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from condambig_metrics.judge import JudgeCache, JudgeCompletion, JudgeEngine
from condambig_metrics.judge.cache import _SCHEMA
from condambig_metrics.judge.errors import JudgeCacheError
from condambig_metrics.judge.records import JudgeResult
from tests.judge.conftest import request

REPO = Path(__file__).resolve().parents[2]
WHAT_TO_DO = "CONDAMBIG_JUDGE_CACHE (or --metadata judge_cache)"


def _filled(path: Path, rows: int = 300) -> Path:
    cache = JudgeCache(path)
    for index in range(rows):
        cache.put(f"k{index}", "m", JudgeResult.judged(float(index % 11), False, "r" * 100))
    cache.close()
    # fold the write-ahead log into the file, so the file alone holds the rows
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return path


def _damaged_page(path: Path) -> None:
    _filled(path)
    data = bytearray(path.read_bytes())
    page = 4096
    data[2 * page:3 * page] = b"\xa5" * page  # a table page overwritten: quick_check fails
    path.write_bytes(bytes(data))


def _truncated(fraction: float):
    def make(path: Path) -> None:
        data = _filled(path).read_bytes()
        path.write_bytes(data[:int(len(data) * fraction)])
    return make


DAMAGED = {
    "random_bytes": lambda path: path.write_bytes(bytes(range(256)) * 32),
    "text_file": lambda path: path.write_text("not a database\n"),
    "truncated_half": _truncated(0.5),
    "truncated_in_header": lambda path: path.write_bytes(_filled(path).read_bytes()[:50]),
    "damaged_page": _damaged_page,
}


@pytest.mark.parametrize("kind", sorted(DAMAGED))
def test_a_damaged_file_is_moved_aside_and_rebuilt(kind, tmp_path, caplog) -> None:
    path = tmp_path / "judge.sqlite"
    DAMAGED[kind](path)
    original = path.read_bytes()
    cache = JudgeCache(path)
    with caplog.at_level(logging.WARNING, logger="condambig_metrics.judge.cache"):
        cache.open()
    [moved] = [p for p in tmp_path.glob("judge.sqlite.corrupt-*")
               if not p.name.endswith(("-wal", "-shm"))]
    assert moved.read_bytes() == original
    [warning] = [record.getMessage() for record in caplog.records]
    assert "\n" not in warning
    assert re.fullmatch(rf"{re.escape(str(path))} is not a judge cache \(.+\); moved to "
                        rf"{re.escape(str(moved))}, starting a new one", warning), warning
    assert len(cache) == 0
    cache.put("k", "m", JudgeResult.judged(6.0, True, "fine"))
    assert JudgeCache(path).get("k") == JudgeResult.judged(6.0, True, "fine", cached=True)


def _make_folder(path: Path) -> None:
    path.mkdir()


def _make_foreign_database(path: Path) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE users (name TEXT)")


def _make_other_judgements_table(path: Path) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE judgements (key TEXT, verdict TEXT)")


def _make_parent_a_file(path: Path) -> None:
    path.parent.rmdir()
    path.parent.write_text("a file where a folder should be")


UNUSABLE = {
    "folder_as_path": (_make_folder, "is a folder"),
    "another_programs_database": (_make_foreign_database, "another program's database"),
    "another_judgements_table": (_make_other_judgements_table, "another program's database"),
    "parent_is_a_file": (_make_parent_a_file, "cannot create the folder"),
}


@pytest.mark.parametrize("kind", sorted(UNUSABLE))
def test_an_unusable_path_is_one_error_naming_it(kind, tmp_path) -> None:
    path = tmp_path / "cache" / "judge.sqlite"
    path.parent.mkdir()
    make, reason = UNUSABLE[kind]
    make(path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(JudgeCacheError) as raised:
        JudgeCache(path).open()
    message = str(raised.value)
    assert str(path) in message and reason in message and WHAT_TO_DO in message
    assert "\n" not in message and isinstance(raised.value, ValueError)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing moved or added


def _fill_disk(connection: sqlite3.Connection) -> None:
    """sqlite reports a full disk (SQLITE_FULL) once the file would grow past its pages."""
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    connection.execute(f"PRAGMA max_page_count = {max(pages, 1)}")


def test_a_full_disk_at_open_is_one_error(tmp_path, monkeypatch) -> None:
    connect = sqlite3.connect

    def full_disk(*args, **kwargs):
        connection = connect(*args, **kwargs)
        connection.execute("PRAGMA max_page_count = 1")  # a new file cannot get its table
        return connection

    monkeypatch.setattr("condambig_metrics.judge.cache.sqlite3.connect", full_disk)
    path = tmp_path / "judge.sqlite"
    with pytest.raises(JudgeCacheError, match="the disk is full") as raised:
        JudgeCache(path).open()
    assert str(path) in str(raised.value) and WHAT_TO_DO in str(raised.value)


class _CountingBackend:
    """Replies {"score": N} with N = len(prompt) % 11, unweighted; counts calls."""

    model_name = "fake-judge"

    def __init__(self, reason: str = "r") -> None:
        self.calls = 0
        self.reason = reason

    async def complete(self, prompt: str) -> JudgeCompletion:
        self.calls += 1
        return JudgeCompletion(text=json.dumps({"score": len(prompt) % 11,
                                                "reason": self.reason}))


def test_a_full_disk_mid_run_keeps_every_judgement_and_warns_once(tmp_path, caplog) -> None:
    path = tmp_path / "judge.sqlite"
    cache = JudgeCache(path)
    cache.open()
    _fill_disk(cache._connect())
    backend = _CountingBackend(reason="a long reason " * 40)  # about 12 rows per page
    requests = [request(f"answer {index}") for index in range(40)]
    with caplog.at_level(logging.WARNING, logger="condambig_metrics.judge"):
        results = asyncio.run(JudgeEngine(backend, cache).judge_many(requests))
    assert backend.calls == 40 and not any(result.failed for result in results)
    stored = len(cache)
    assert 0 < stored < 40  # the disk filled up part of the way through
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "the disk is full" in warnings[0] and str(path) in warnings[0]
    # what was stored before the disk filled up is still served
    again = asyncio.run(JudgeEngine(backend, JudgeCache(path)).judge_many(requests))
    assert sum(result.cached for result in again) == stored
    assert [r.raw_score for r in again] == [r.raw_score for r in results]


INVALID_ROWS = {
    "huge_raw_score": (1e9, 1, "r"),
    "negative_raw_score": (-1.0, 0, "r"),
    "infinite_raw_score": (float("inf"), 0, "r"),
    "raw_score_text": ("high", 0, "r"),
    "weighted_two": (7.0, 2, "r"),
    "weighted_text": (7.0, "yes", "r"),
    "reason_bytes": (7.0, 0, b"r"),
}


def test_invalid_stored_values_are_judged_again_counted_and_warned_once(tmp_path, caplog):
    path = tmp_path / "judge.sqlite"
    backend = _CountingBackend()
    requests = [request(f"answer {kind}") for kind in INVALID_ROWS]
    first = asyncio.run(JudgeEngine(backend, JudgeCache(path)).judge_many(requests))
    keys = [row[0] for row in sqlite3.connect(path).execute(
        "SELECT key FROM judgements ORDER BY rowid")]
    with sqlite3.connect(path) as connection:
        for key, (raw, weighted, reason) in zip(keys, INVALID_ROWS.values(), strict=True):
            connection.execute("UPDATE judgements SET raw_score = ?, weighted = ?, reason = ? "
                               "WHERE key = ?", (raw, weighted, reason, key))
    cache = JudgeCache(path)
    with caplog.at_level(logging.WARNING, logger="condambig_metrics.judge"):
        again = asyncio.run(JudgeEngine(backend, cache).judge_many(requests))
    assert backend.calls == 2 * len(INVALID_ROWS)  # every invalid row judged again
    assert not any(result.cached for result in again)
    assert [r.raw_score for r in again] == [r.raw_score for r in first]
    assert cache.invalid_entries == len(INVALID_ROWS)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "not valid" in warnings[0] and str(path) in warnings[0]
    # ... and overwritten: a third run is served from the cache
    third = asyncio.run(JudgeEngine(backend, JudgeCache(path)).judge_many(requests))
    assert all(result.cached for result in third) and backend.calls == 2 * len(INVALID_ROWS)


def test_a_value_no_lookup_would_accept_is_not_stored(tmp_path) -> None:
    cache = JudgeCache(tmp_path / "judge.sqlite")
    cache.put("k", "m", JudgeResult.judged(float("nan"), False, "r"))
    cache.put("k2", "m", JudgeResult.judged(90.0, True, "DeepEval counts a token '90'"))
    assert len(cache) == 0 and cache.get("k") is None


# --- read-only files and folders, in a child that obeys file permissions -------------------

_PROBE = """
import sys
from condambig_metrics.judge.cache import JudgeCache
from condambig_metrics.judge.errors import JudgeCacheError
try:
    JudgeCache(sys.argv[1]).open()
except JudgeCacheError as error:
    print("error:", error)
else:
    print("opened")
"""


def _unprivileged() -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions cannot be enforced")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def _read_only_file_rollback(folder: Path) -> Path:
    path = folder / "judge.sqlite"
    with sqlite3.connect(path) as connection:  # a rollback-journal file: opening switches it
        connection.execute(_SCHEMA)
    path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    return path


def _read_only_file_wal(folder: Path) -> Path:
    path = _filled(folder / "judge.sqlite")  # already a cache: opens, and reads work
    path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    return path


def _read_only_folder(name: str):
    def make(folder: Path) -> Path:
        path = folder / "ro" / name
        (folder / "ro").mkdir()
        if name == "judge.sqlite":
            _filled(path)
        (folder / "ro").chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP
                          | stat.S_IROTH | stat.S_IXOTH)
        return path
    return make


READ_ONLY = {
    "read_only_file": (_read_only_file_rollback, "read-only"),
    "read_only_cache_file": (_read_only_file_wal, "read-only"),
    "read_only_folder_with_the_cache": (_read_only_folder("judge.sqlite"), "read-only"),
    "read_only_folder_new_cache": (_read_only_folder("new.sqlite"), "cannot be created"),
    "read_only_folder_new_subfolder": (_read_only_folder("sub/new.sqlite"),
                                       "cannot create the folder"),
}


@pytest.mark.parametrize("kind", sorted(READ_ONLY))
def test_read_only_is_one_error_naming_the_path(kind, tmp_path) -> None:
    prefix = _unprivileged()
    make, reason = READ_ONLY[kind]
    tmp_path.chmod(0o755)
    path = make(tmp_path)
    try:
        result = subprocess.run([*prefix, sys.executable, "-c", _PROBE, str(path)], cwd=REPO,
                                capture_output=True, text=True, timeout=60)
    finally:
        for item in [tmp_path, *tmp_path.rglob("*")]:
            if not item.is_symlink():
                item.chmod(0o755 if item.is_dir() else 0o644)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("error: "), result.stdout + result.stderr
    assert reason in result.stdout and str(path) in result.stdout
    assert WHAT_TO_DO in result.stdout and result.stdout.count("\n") == 1
    assert not list(tmp_path.rglob("*.corrupt-*"))


# --- through the condambig-score command -------------------------------------------------

def _score_with_cache(tmp_path: Path, server_url: str, cache_path: Path):
    from tests.abg_coqa.scripted_outputs import RAW_OUTPUTS
    from tests.conftest import FIXTURE_DATA, executable, subprocess_env

    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps([{"id": key, "output": value}
                                for key, value in RAW_OUTPUTS["clarification"].items()]))
    command = [executable("condambig-score"), "abg_coqa", "--subtask", "clarification",
               "--pred", str(pred), "--ref", str(FIXTURE_DATA / "abg_coqa" / "coqa_abg_val.json"),
               "--judge-model", "judge", "--judge-base-url", server_url]
    env = subprocess_env(CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
                         CONDAMBIG_JUDGE_API_KEY="test-key",
                         CONDAMBIG_JUDGE_CACHE=str(cache_path))
    return subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.e2e
def test_condambig_score_moves_a_corrupt_cache_aside_and_scores(tmp_path) -> None:
    from tests.abg_coqa.scripted_outputs import EXPECTED_JUDGE, judge_rules
    from tests.support.judge_server import JudgeServer

    path = tmp_path / "judge.sqlite"
    path.write_bytes(bytes(range(256)) * 32)
    with JudgeServer({"rules": judge_rules()}) as server:
        result = _score_with_cache(tmp_path, server.base_url, path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    [moved] = tmp_path.glob("judge.sqlite.corrupt-*")
    assert f"{path} is not a judge cache (file is not a database); moved to {moved}, " \
           "starting a new one" in result.stderr
    metrics = json.loads(result.stdout)["metrics"]
    assert {name: metrics[name] for name in EXPECTED_JUDGE} == pytest.approx(EXPECTED_JUDGE)
    assert len(JudgeCache(path)) == 2  # the new cache holds this run's judgements


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["folder_as_path", "another_programs_database"])
def test_condambig_score_unusable_cache_is_one_line_and_exit_2(kind, tmp_path) -> None:
    from tests.support.judge_server import JudgeServer

    path = tmp_path / "judge.sqlite"
    make, reason = UNUSABLE[kind]
    make(path)
    with JudgeServer({}) as server:
        result = _score_with_cache(tmp_path, server.base_url, path)
        asked = server.stats()["requests"]
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    [line] = [line for line in result.stderr.splitlines() if "judge cache" in line]
    assert line.startswith("condambig-score abg_coqa: ") and str(path) in line
    assert reason in line and WHAT_TO_DO in line
    assert asked == 0  # judged nothing before failing
