"""A judge that dies mid-run: a few probes, not every judgement's retries, then the
remaining judgements fail at once as an endpoint failure and what was judged is cached.

Attempts after the death are counted, never seconds: by the server when it still accepts
connections and closes them unanswered (``die_with: disconnect``), by the engine when the
server's process has ended (``die_with: exit``, connections refused).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from condambig_metrics.judge import JudgeCache, JudgeConfig, JudgeEngine, OpenAIJudgeBackend
from condambig_metrics.judge.breaker import PROBES, TRIP_AFTER, ConnectionBreaker
from tests.abg_coqa.scripted_outputs import judge_rules
from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.judge.conftest import request
from tests.support.judge_server import judge_server_process
from tests.support.judging import judge_blocking

SCRIPT = {"default": {"scores": {"5": 1.0}}}
JUDGEMENTS = 120
DIE_AFTER = 20
CONCURRENCY = 4
# connection attempts a dead judge may still get: those admitted before the breaker opened
# (one per slot freed by a failure) and the probes
BOUND = TRIP_AFTER + CONCURRENCY + PROBES


def _engine(base_url: str, cache: JudgeCache | None = None, timeout: float = 5.0,
            max_retries: int = 4) -> JudgeEngine:
    config = JudgeConfig(model="loopback-judge", base_url=base_url, api_key="test-key",
                         concurrency=CONCURRENCY, max_retries=max_retries,
                         timeout_seconds=timeout)
    return JudgeEngine(OpenAIJudgeBackend(config), cache, concurrency=CONCURRENCY,
                       max_retries=max_retries, backoff_initial_seconds=0.001,
                       backoff_max_seconds=0.01, breaker_probe_seconds=0.01)


def _assert_stopped(engine: JudgeEngine, results: list, cache: JudgeCache) -> None:
    judged = [result for result in results if not result.failed]
    assert DIE_AFTER - CONCURRENCY <= len(judged) <= DIE_AFTER
    assert "the judge went away mid-run" in engine.endpoint_failure
    assert "\n" not in engine.endpoint_failure
    assert all(result.error for result in results if result.failed)
    assert engine.stats.failures == JUDGEMENTS - len(judged)
    assert len(cache) == len(judged)  # what was judged is kept for the rerun


def test_a_judge_closing_every_connection_gets_a_few_probes(judge_server, tmp_path) -> None:
    server = judge_server({**SCRIPT, "die_after": DIE_AFTER, "die_with": "disconnect"})
    cache = JudgeCache(tmp_path / "cache.sqlite")
    engine = _engine(server.base_url, cache)
    results = judge_blocking(engine, [request(f"answer {i}") for i in range(JUDGEMENTS)])
    after_death = server.stats()["requests"] - DIE_AFTER
    assert 1 <= after_death <= BOUND  # every judgement's 5 tries: 500
    _assert_stopped(engine, results, cache)


def test_a_killed_judge_refusing_connections_gets_a_few_probes(tmp_path) -> None:
    cache = JudgeCache(tmp_path / "cache.sqlite")
    with judge_server_process({**SCRIPT, "die_after": DIE_AFTER, "die_with": "exit",
                               "latency_ms": 5}) as base_url:
        engine = _engine(base_url, cache)
        results = judge_blocking(engine, [request(f"answer {i}") for i in range(JUDGEMENTS)])
    after_death = engine.stats.requests_sent - DIE_AFTER  # the request that killed it included
    assert 1 <= after_death <= BOUND + 1
    _assert_stopped(engine, results, cache)


def test_a_judge_dropping_a_few_connections_is_probed_and_judges_everything(
        judge_server) -> None:
    server = judge_server({**SCRIPT, "faults": [{"kind": "disconnect", "first": TRIP_AFTER + 1}]})
    engine = _engine(server.base_url, max_retries=6)
    results = judge_blocking(engine, [request(f"answer {i}") for i in range(40)])
    assert not any(result.failed for result in results)
    assert engine.endpoint_failure is None and not engine.breaker.open


def test_a_late_answer_to_a_request_sent_before_the_failures_keeps_the_count() -> None:
    """Answers sent before a death may come back after its first failures (a loaded
    machine); they must not reset the count, or each lets another round of failures
    through."""
    breaker = ConnectionBreaker()
    sent_before = time.monotonic()
    for _ in range(TRIP_AFTER - 1):
        breaker.report(False, False, "refused", time.monotonic())
    breaker.report(False, True, "", sent_before)
    assert breaker.consecutive == TRIP_AFTER - 1
    breaker.report(False, False, "refused", time.monotonic())
    assert breaker.open
    breaker.report(False, True, "", time.monotonic())  # sent after them: it answers again
    assert not breaker.open and breaker.consecutive == 0


def test_a_slow_judge_does_not_trip_the_breaker(judge_server) -> None:
    server = judge_server({**SCRIPT, "faults": [{"kind": "timeout", "sleep_seconds": 0.5}]})
    engine = _engine(server.base_url, timeout=0.1, max_retries=1)
    results = judge_blocking(engine, [request(f"answer {i}") for i in range(3 * TRIP_AFTER)])
    assert all(result.failed for result in results)
    assert not engine.breaker.open and "went away" not in engine.endpoint_failure
    assert server.stats()["requests"] == 2 * 3 * TRIP_AFTER  # every try was sent


# ---- condambig-score, the real command ---------------------------------------------------

def _many_clarifications(tmp_path: Path, count: int) -> tuple[Path, Path]:
    """A reference file of ``count`` ambiguous Abg-CoQA items (copies of a fixture story)
    and one distinct clarification question for each."""
    data = json.loads((FIXTURE_DATA / "abg_coqa" / "coqa_abg_val.json").read_text())
    [story] = [item for item in data["data"] if item["id"] == "fxstoryone|4|2"]
    items = [{**story, "id": f"fxcopy{i}|4|2"} for i in range(count)]
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps({**data, "data": items}))
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps([{"id": item["id"], "output": f"Do you mean boat number {i}?"}
                                for i, item in enumerate(items)]))
    return ref, pred


def test_condambig_score_stops_at_a_killed_judge_in_one_line(tmp_path) -> None:
    ref, pred = _many_clarifications(tmp_path, JUDGEMENTS)
    script = {"rules": judge_rules(), **SCRIPT, "die_after": DIE_AFTER, "die_with": "exit",
              "latency_ms": 5}
    with judge_server_process(script) as base_url:
        result = subprocess.run(
            [executable("condambig-score"), "abg_coqa", "--subtask", "clarification",
             "--pred", str(pred), "--ref", str(ref), "--judge-model", "judge",
             "--judge-base-url", base_url],
            capture_output=True, text=True, timeout=600, cwd=tmp_path,
            env=subprocess_env(CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
                               CONDAMBIG_JUDGE_API_KEY="test-key",
                               CONDAMBIG_JUDGE_MAX_RETRIES="4",
                               CONDAMBIG_JUDGE_CONCURRENCY=str(CONCURRENCY)))
    assert result.returncode == 2, result.stderr[-3000:]
    output = json.loads(result.stdout)  # valid JSON: null, not NaN
    judge = output["judge"]
    after_death = judge["requests"] - DIE_AFTER
    assert 1 <= after_death <= BOUND + 1, judge  # before: every judgement's 5 tries
    assert output["metrics"]["judge_helpfulness"] is None
    assert "the judge went away mid-run" in output["null_reasons"]["judge_helpfulness"]
    assert DIE_AFTER - 1 - CONCURRENCY <= JUDGEMENTS - judge["failures"] <= DIE_AFTER
    lines = [line for line in result.stderr.splitlines() if "judge" in line]
    assert len(lines) == 2, result.stderr[-3000:]  # the progress line, the failure
    assert lines[1].startswith("condambig-score abg_coqa: ")
    assert "the judge went away mid-run" in lines[1] and "run the same command" in lines[1]
    assert "Traceback" not in result.stderr
    # the progress line does not claim the failed judgements done
    assert f"{JUDGEMENTS}/{JUDGEMENTS}" not in lines[0]
    assert f"{judge['failures']} failed" in lines[0]
