"""lm-eval with a judge that dies after some judgements: a few probes reach the dead judge,
not every judgement's retries; the judged metrics are withheld with the reason, one line
says the judge went away and gives the ``--from-log`` command, the run exits 1 after
writing, and the judgements made are in the cache.

The judge closes every connection unanswered once it has answered ``DIE_AFTER`` requests
(``die_with: disconnect``), so the server counts every attempt after its death.
"""

from __future__ import annotations

import math
import re
import sqlite3

import pytest

from condambig_metrics.judge.breaker import PROBES, TRIP_AFTER
from tests.support.copied_data import copied_condambigqa_data
from tests.support.judge_server import JudgeServer
from tests.test_lm_eval_judge_faults import HEALTHY, SUBJECT_REPLY, _env, _lm_eval, _written

pytestmark = pytest.mark.e2e

COPIES = 10  # of the fixture's questions, so that many judgements are left after the death
DIE_AFTER = 4  # the check before generation, then 3 judgements
CONCURRENCY = 2


@pytest.fixture(scope="module")
def subject():
    with JudgeServer({"default": {"reply": SUBJECT_REPLY}}) as server:
        yield server


def test_a_judge_dying_mid_run_gets_a_few_probes_and_one_line(subject, tmp_path):
    with JudgeServer({**HEALTHY, "die_after": DIE_AFTER, "die_with": "disconnect"}) as judge:
        env = {**_env(tmp_path, judge.base_url), "CONDAMBIG_DATA_DIR": str(copied_condambigqa_data(tmp_path, COPIES)),
               "CONDAMBIG_JUDGE_MAX_RETRIES": "4", "CONDAMBIG_JUDGE_CONCURRENCY": str(CONCURRENCY)}
        out = tmp_path / "out"
        result = _lm_eval(subject, out, env, "--limit", str(3 * COPIES))
        after_death = judge.stats()["requests"] - DIE_AFTER
    assert result.returncode == 1, result.stderr[-3000:]
    # before: every remaining judgement's 5 tries (hundreds)
    assert 1 <= after_death <= TRIP_AFTER + CONCURRENCY + PROBES, result.stderr[-3000:]
    results, samples = _written(out)  # results and samples are written
    assert len(samples) == 3 * COPIES
    task = results["results"]["condambigqa"]
    assert math.isnan(task["combined_score,none"])
    reason = results["configs"]["condambigqa"]["metadata"]["null_reasons"]["combined_score"]
    assert "the judge went away mid-run" in reason
    lines = [line for line in result.stderr.splitlines() if "went away" in line]
    assert len(lines) == 1, result.stderr[-4000:]
    assert lines[0].startswith("condambig: condambigqa: combined_score is null: ")
    [command] = re.findall(r"`([^`]+)`", lines[0])
    assert f"--from-log {out}" in command and "only the missing judgements are sent" in lines[0]
    assert "Traceback" not in result.stderr
    cache = tmp_path / "cache" / "judge.sqlite"
    with sqlite3.connect(cache) as connection:  # what was judged is kept
        [(kept,)] = connection.execute("SELECT COUNT(*) FROM judgements").fetchall()
    assert 1 <= kept <= DIE_AFTER - 1
