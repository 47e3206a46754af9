"""Ctrl-C during HotpotQA-FLM's agent step: the rerun resumes from the cached batches.

A real ``condambig-score`` process with tiny local T5 agents, on the fixture (its examples
give 76 batches of one candidate score, many more than the signal needs), gets SIGINT once
the answering agent has stored a few batches of candidate scores. It must stop at once (one
line, exit 130); the rerun must compute only the scores not stored and give, bit for bit,
the scores and numbers of a run never interrupted. The signal's window is made by the
interrupted run pausing after each stored batch once a few are stored (a test-only
start-up patch), not by more data: more data (as this test once had, the fixture copied
three times over) made every run of the test longer, and a loaded machine still narrowed
the window.
"""

from __future__ import annotations

import json
import re
import signal
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_DATA, executable, run_ok, subprocess_env
from tests.support.child_site import with_sitecustomize
from tests.support.interrupting import assert_clean_stop, interrupt, sqlite_rows

pytestmark = pytest.mark.e2e

STORED_BEFORE_SIGNAL = 8
# the interrupted run, once STORED_BEFORE_SIGNAL batches are stored, pauses after each store:
# the signal finds it mid-run however slow the machine (and however fast)
PAUSE_AFTER_STORES = """
def _start():
    import os
    import time

    from condambig_tasks.hotpot_flm import cache

    store, stored = cache.ScoreCache.put_many, []

    def paused_put_many(self, values):
        store(self, values)
        stored.append(len(values))
        if len(stored) >= int(os.environ["CONDAMBIG_TEST_PAUSE_AFTER"]):
            time.sleep(0.5)

    cache.ScoreCache.put_many = paused_put_many
"""


def _details(path: Path) -> list[dict]:
    """Per-example details without the what-came-from-the-cache bookkeeping."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row["details"].pop("answers_computed")
    return rows


def test_hotpot_flm_interrupted_agent_step_resumes_with_the_same_numbers(tiny_t5, tmp_path):
    def command(name: str) -> list[str]:
        return [executable("condambig-score"), "hotpot_flm", "--questions", "repeater",
                "--answering-agent", str(tiny_t5), "--downstream-model", str(tiny_t5),
                "--device", "cpu", "--batch-size", "1",  # many small batches: a wide window
                "--per-example", str(tmp_path / f"{name}.jsonl")]

    def env(cache: str) -> dict[str, str]:
        return subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_OFFLINE="1",
                              CONDAMBIG_CACHE_DIR=str(tmp_path / cache), OMP_NUM_THREADS="1")

    def agent_cache(cache: str) -> Path:
        return tmp_path / cache / "hotpot_flm" / "downstream_answers.sqlite"

    clean = json.loads(run_ok(command("clean"), env("clean"), tmp_path).stdout)
    clean_scores = dict(sqlite_rows(agent_cache("clean"), "SELECT key, p_yes FROM candidate_scores"))

    cache = agent_cache("resumed")

    def scoring_started() -> bool:
        try:
            return bool(cache.exists() and scores_stored() >= STORED_BEFORE_SIGNAL)
        except sqlite3.OperationalError:  # the table is not there yet
            return False

    def scores_stored() -> int:
        return sqlite_rows(cache, "SELECT COUNT(*) FROM candidate_scores")[0][0]

    paused = with_sitecustomize(tmp_path / "paused", env("resumed"), PAUSE_AFTER_STORES)
    paused["CONDAMBIG_TEST_PAUSE_AFTER"] = str(STORED_BEFORE_SIGNAL)
    code, work_after, stderr = interrupt(command("interrupted"), paused, tmp_path,
                                          scoring_started, signal.SIGINT, scores_stored)
    # batches of one: at most the batch being stored as the signal came
    line = assert_clean_stop(code, work_after, stderr, in_flight=1)
    kept = dict(sqlite_rows(cache, "SELECT key, rowid FROM candidate_scores"))
    assert STORED_BEFORE_SIGNAL <= len(kept) < len(clean_scores)  # stopped in that step
    assert re.search(rf"hotpot_flm candidate scores {len(kept)}/{len(clean_scores)}\b", line)

    again = json.loads(run_ok(command("again"), env("resumed"), tmp_path).stdout)
    after = dict(sqlite_rows(cache, "SELECT key, rowid FROM candidate_scores"))
    # the kept scores were not computed again (a stored row is replaced, with a new rowid)
    assert {key: after[key] for key in kept} == kept
    assert len(after) == len(clean_scores)
    resumed_scores = dict(sqlite_rows(cache, "SELECT key, p_yes FROM candidate_scores"))
    assert resumed_scores == clean_scores  # bit for bit
    assert again["metrics"] == clean["metrics"]
    assert _details(tmp_path / "again.jsonl") == _details(tmp_path / "clean.jsonl")
