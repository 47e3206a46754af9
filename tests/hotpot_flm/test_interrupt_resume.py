"""Ctrl-C during HotpotQA-FLM's agent step: the rerun resumes from the cached batches.

A real ``condambig-score`` process with tiny local T5 agents, on the fixture made larger by
copying its examples, gets SIGINT once the answering agent has stored a few batches of
candidate scores. It must stop at once (one line, exit 130); the rerun must compute only
the scores not stored and give, bit for bit, the scores and numbers of a run never
interrupted.
"""

from __future__ import annotations

import json
import re
import signal
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_DATA, executable, run_ok, subprocess_env
from tests.support.interrupting import assert_clean_stop, interrupt, sqlite_rows

pytestmark = pytest.mark.e2e

FLM_COPIES = 30  # the fixture's examples thirty times over: seconds of agent work, a wide window


def _larger_flm_data(root: Path) -> Path:
    """The HotpotQA fixture with every example copied (new ids, questions told apart)."""
    examples = json.loads((FIXTURE_DATA / "hotpotqa" / "hotpot_dev_distractor_v1.json")
                          .read_text(encoding="utf-8"))
    copies = [{**example, "_id": f"{example['_id']}c{copy:02d}",
               "question": f"{example['question']} ({copy})"}
              for copy in range(FLM_COPIES) for example in examples]
    (root / "hotpotqa").mkdir(parents=True)
    (root / "hotpotqa" / "hotpot_dev_distractor_v1.json").write_text(json.dumps(copies))
    return root


def _details(path: Path) -> list[dict]:
    """Per-example details without the what-came-from-the-cache bookkeeping."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row["details"].pop("answers_computed")
    return rows


def test_hotpot_flm_interrupted_agent_step_resumes_with_the_same_numbers(tiny_t5, tmp_path):
    data = _larger_flm_data(tmp_path / "data")

    def command(name: str) -> list[str]:
        return [executable("condambig-score"), "hotpot_flm", "--questions", "repeater",
                "--answering-agent", str(tiny_t5), "--downstream-model", str(tiny_t5),
                "--device", "cpu", "--batch-size", "1",  # many small batches: a wide window
                "--per-example", str(tmp_path / f"{name}.jsonl")]

    def env(cache: str) -> dict[str, str]:
        return subprocess_env(CONDAMBIG_DATA_DIR=str(data), CONDAMBIG_OFFLINE="1",
                              CONDAMBIG_CACHE_DIR=str(tmp_path / cache), OMP_NUM_THREADS="1")

    def agent_cache(cache: str) -> Path:
        return tmp_path / cache / "hotpot_flm" / "downstream_answers.sqlite"

    clean = json.loads(run_ok(command("clean"), env("clean"), tmp_path).stdout)
    clean_scores = dict(sqlite_rows(agent_cache("clean"), "SELECT key, p_yes FROM candidate_scores"))

    cache = agent_cache("resumed")

    def scoring_started() -> bool:
        try:
            return bool(cache.exists() and
                        sqlite_rows(cache, "SELECT COUNT(*) FROM candidate_scores")[0][0] >= 8)
        except sqlite3.OperationalError:  # the table is not there yet
            return False

    code, seconds, stderr = interrupt(command("interrupted"), env("resumed"), tmp_path,
                                       scoring_started, signal.SIGINT)
    line = assert_clean_stop(code, seconds, stderr)
    kept = dict(sqlite_rows(cache, "SELECT key, rowid FROM candidate_scores"))
    assert 8 <= len(kept) < len(clean_scores)  # stopped in the answering agent's step
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
