"""The real ``inspect eval condambig/condambigqa``: the grader gets the project's default
judge concurrency (as lm-eval and ``condambig-score``), not Inspect's starting 20
connections, unless the user chose its connections (``--max-connections``, or
``--adaptive-connections``, which a judge request's own setting would override: read by
``condambig.grader_connections``' task-start hook).

Counted by the loopback grader, never timed: it answers no judgement until 32 are in flight
(or a few seconds have passed), so the count when it starts answering is the grader's
concurrency (before: 20; with the user's choices, 6).
"""

from __future__ import annotations

import pytest

from condambig_metrics.judge.records import DEFAULT_JUDGE_CONCURRENCY
from tests.judge.test_inspect_grader_faults_e2e import (
    PREFLIGHT_TEXT,
    SUBJECT_REPLY,
    only_log,
    run_inspect,
)
from tests.support.copied_data import copied_condambigqa_data
from tests.support.judge_server import JudgeServer

pytestmark = pytest.mark.e2e

COPIES = 3  # of the fixture's 10 questions: about 125 judgements, enough to fill 32 slots


@pytest.fixture
def subject():
    with JudgeServer({"default": {"reply": SUBJECT_REPLY}}) as server:
        yield server


@pytest.mark.parametrize("options, most", [
    ((), DEFAULT_JUDGE_CONCURRENCY),
    (("--max-connections", "6"), 6),
    (("--adaptive-connections", "4-6-8"), 6),
], ids=["default", "max-connections", "adaptive"])
def test_the_grader_gets_the_default_judge_concurrency_unless_the_user_chose_one(
        tmp_path, subject, options, most):
    data = copied_condambigqa_data(tmp_path, COPIES)
    script = {"default": {"scores": {"7": 1.0}},
              "hold": {"in_flight": DEFAULT_JUDGE_CONCURRENCY, "seconds": 5,
                       "except_containing": PREFLIGHT_TEXT}}
    with JudgeServer(script) as grader:
        completed, _ = run_inspect(tmp_path, subject, grader.base_url, "--max-samples", "64",
                                   *options, data=data)
        stats = grader.stats()
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-4000:]
    assert only_log(tmp_path).status == "success", output[-4000:]
    assert stats["requests"] > 3 * DEFAULT_JUDGE_CONCURRENCY, stats
    assert stats["in_flight_at_release"] == most, stats
    assert stats["max_in_flight"] <= DEFAULT_JUDGE_CONCURRENCY, stats
