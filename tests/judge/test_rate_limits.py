"""The judge engine against a rate-limited or dying loopback endpoint: Retry-After honoured,
the whole engine slowed down, every judgement obtained with the numbers of a clean run, a
retry budget in time, and no hang when the endpoint dies."""

from __future__ import annotations

import threading

import pytest

from condambig_metrics.judge import JudgeConfig, JudgeEngine, OpenAIJudgeBackend
from condambig_metrics.judge.breaker import PROBES, TRIP_AFTER
from tests.judge.conftest import request
from tests.support.judging import judge_blocking

SCRIPT = {
    "rules": [
        {"contains": "answer 1", "scores": {"6": 0.5, "9": 0.3, "2": 0.2}},
        {"contains": "answer 2", "scores": {"3": 0.8, "4": 0.2}},
    ],
    "default": {"scores": {"7": 0.6, "8": 0.4}},
}


def production_engine(server, **settings) -> JudgeEngine:
    """The engine as ``openai_judge_engine`` builds it (default backoff and concurrency)."""
    config = JudgeConfig(model="loopback-judge", base_url=server.base_url, api_key="k",
                         cache_enabled=False, **settings)
    return JudgeEngine(OpenAIJudgeBackend(config), None, concurrency=config.concurrency,
                       max_retries=config.max_retries,
                       retry_budget_seconds=config.retry_budget_seconds)


def scores(results) -> list[tuple[float | None, bool]]:
    return [(result.raw_score, result.weighted) for result in results]


@pytest.mark.parametrize(("per_second", "retry_after", "form", "count"), [
    (5, 1, "seconds", 20),
    (20, 2, "date", 50),
], ids=["5-per-second", "20-per-second-date"])
def test_a_steady_rate_limit_costs_at_most_half_again_the_judgements(
    judge_server, per_second, retry_after, form, count
) -> None:
    """Once the endpoint has first said "slow down", the engine paces itself: the requests
    refused from then on are at most half the judgements. What it sent before that first
    refusal came back is its opening burst, of which at most its concurrency bound (the
    requests in flight) can be refused: how many are refused depends on how fast the
    loopback answers, so on a loaded machine (server and client share one process) most of
    this short run goes out in the burst."""
    requests = [request(f"answer {i}") for i in range(count)]
    clean_server = judge_server(SCRIPT)
    clean = judge_blocking(production_engine(clean_server), requests)
    limited_server = judge_server({**SCRIPT, "rate_limit": {
        "per_second": per_second, "retry_after": retry_after, "as": form}})
    engine = production_engine(limited_server)
    limited = judge_blocking(engine, requests)
    stats = limited_server.stats(with_timeline=True)
    assert stats["outcomes"].get("429", 0) > 0  # the limit was hit
    assert not any(result.failed for result in limited)
    assert scores(limited) == scores(clean)
    assert stats["requests"] == engine.stats.requests_sent
    timeline = stats["timeline"]
    first_wait = next(entry["retry_until"] for entry in timeline if entry["outcome"] == "429")
    burst = [entry for entry in timeline if entry["at"] < first_wait]
    later = [entry for entry in timeline if entry["at"] >= first_wait]
    assert sum(entry["outcome"] == "429" for entry in burst) <= JudgeConfig(model="m").concurrency
    assert sum(entry["outcome"] == "429" for entry in later) <= 0.5 * count, stats["outcomes"]


@pytest.mark.parametrize("status", ["429", "503"])
@pytest.mark.parametrize("form", ["seconds", "date", "ms"])
def test_no_request_is_sent_before_retry_after_has_passed(
    judge_server, make_engine, status, form
) -> None:
    server = judge_server({**SCRIPT, "faults": [
        {"kind": status, "first": 2, "retry_after": 0.6, "as": form}]})
    # max_retries 0: waiting as the endpoint asks is not a retry of a broken request
    engine = make_engine(server, concurrency=1, max_retries=0)
    results = judge_blocking(engine, [request("answer 1"), request("answer 2")])
    assert scores(results) == [(pytest.approx(6.1), True), (pytest.approx(3.2), True)]
    timeline = server.stats(with_timeline=True)["timeline"]
    assert [entry["outcome"] for entry in timeline] == [status, status, "ok", "ok"]
    for refused, following in zip(timeline, timeline[1:], strict=False):
        if refused["retry_until"] is not None:
            assert following["at"] >= refused["retry_until"]


def test_the_whole_engine_waits_not_only_the_refused_request(judge_server, make_engine) -> None:
    # two requests in flight at a time; the first one is refused with Retry-After 1.5 s
    server = judge_server({**SCRIPT, "latency_ms": 50, "faults": [
        {"kind": "429", "first": 1, "retry_after": 1.5}]})
    engine = make_engine(server, concurrency=2, max_retries=3)
    results = judge_blocking(engine, [request(f"answer {i}") for i in range(12)])
    assert not any(result.failed for result in results)
    timeline = server.stats(with_timeline=True)["timeline"]
    [refused] = [entry for entry in timeline if entry["outcome"] == "429"]
    # a request already on its way when the 429 left the server may still arrive
    # (0.3 s of grace); none starts after that until the wait is over
    early = [entry for entry in timeline
             if refused["at"] + 0.3 < entry["at"] < refused["retry_until"]]
    assert early == []


def test_rate_limit_waits_do_not_use_up_max_retries(judge_server, make_engine) -> None:
    server = judge_server({**SCRIPT, "faults": [{"kind": "429", "first": 5}]})
    engine = make_engine(server, concurrency=1, max_retries=0)
    [result] = judge_blocking(engine, [request("answer 1")])
    assert not result.failed and result.raw_score == pytest.approx(6.1)
    assert server.stats()["requests"] == engine.stats.requests_sent == 6
    assert engine.stats.retries == 5


def test_the_retry_budget_in_time_stops_a_judgement_that_stays_rate_limited(
    judge_server, make_engine
) -> None:
    server = judge_server({**SCRIPT, "faults": [
        {"kind": "429", "contains": "answer 1", "retry_after": 0.2}]})
    engine = make_engine(server, concurrency=2, retry_budget_seconds=1.0)
    limited, fine = judge_blocking(engine, [request("answer 1"), request("answer 2")])
    assert limited.failed and "retry budget of 1 s" in limited.error
    assert "HTTP 429" in limited.error and "CONDAMBIG_JUDGE_RETRY_BUDGET" in limited.error
    assert not fine.failed
    assert engine.stats.failures == 1 and engine.endpoint_failure is None
    # it waited and retried, and gave up when the next wait would end past the budget:
    # no more requests than 0.2 s waits fit in 1 s
    assert 2 <= server.stats()["requests"] <= 1 + 1.0 / 0.2 + 2


def test_a_wait_longer_than_the_budget_fails_at_once(judge_server, make_engine) -> None:
    server = judge_server({**SCRIPT, "faults": [{"kind": "429", "retry_after": 3600}]})
    engine = make_engine(server, concurrency=1, retry_budget_seconds=30)
    [result] = judge_blocking(engine, [request("answer 1")])
    assert result.failed and "Retry-After 3600 s" in result.error
    assert server.stats()["requests"] == 1 and engine.stats.retries == 0


@pytest.mark.parametrize("die_with", ["500", "disconnect"])
def test_a_dying_endpoint_ends_with_the_failures_counted(judge_server, die_with) -> None:
    server = judge_server({**SCRIPT, "die_after": 10, "die_with": die_with})
    config = JudgeConfig(model="loopback-judge", base_url=server.base_url, api_key="k",
                         concurrency=4, max_retries=2, cache_enabled=False)
    engine = JudgeEngine(OpenAIJudgeBackend(config), None, concurrency=4, max_retries=2,
                         backoff_initial_seconds=0.05, backoff_max_seconds=0.2)
    results = judge_blocking(engine, [request(f"answer {i}") for i in range(30)])
    assert engine.stats.retries <= 20 * 2  # at most max_retries per failed judgement
    judged = [result for result in results if not result.failed]
    assert len(judged) == 10
    assert engine.stats.failures == 20 == sum(result.failed for result in results)
    assert all(result.score is None for result in results if result.failed)
    if die_with == "500":  # it still answers: every judgement's tries
        assert engine.endpoint_failure is None  # some judgements were obtained
        assert engine.stats.requests_sent == server.stats()["requests"] == 10 + 20 * 3
    else:  # it closes every connection: a few probes, then an endpoint failure
        assert "the judge went away mid-run" in engine.endpoint_failure
        # the answered ones, the failures that open the breaker, those in flight then, probes
        bound = 10 + TRIP_AFTER + (4 - 1) + PROBES
        assert engine.stats.requests_sent == server.stats()["requests"] <= bound


def test_an_endpoint_dead_from_the_start_is_an_endpoint_failure(judge_server,
                                                                make_engine) -> None:
    server = judge_server({**SCRIPT, "die_after": 0})
    engine = make_engine(server, max_retries=1)
    judge_blocking(engine, [request(f"answer {i}") for i in range(5)])
    assert "all 5 judgement(s) failed" in engine.endpoint_failure
    assert "HTTP 500" in engine.endpoint_failure


def test_the_server_counts_every_request_under_a_rate_limit(judge_server) -> None:
    import json
    import urllib.request

    server = judge_server({"rate_limit": {"per_second": 2, "retry_after": 1}})
    statuses = []
    for _ in range(3):
        data = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]})
        try:
            urllib.request.urlopen(urllib.request.Request(
                server.base_url + "/chat/completions", data=data.encode(),
                headers={"Content-Type": "application/json"}), timeout=5)
            statuses.append((200, None))
        except urllib.error.HTTPError as error:
            statuses.append((error.code, error.headers.get("Retry-After")))
    assert statuses == [(200, None), (200, None), (429, "1")]
    assert server.stats()["requests"] == 3


@pytest.mark.parametrize(("retry_after", "form"), [(1e9, "seconds"), (1e9, "ms"),
                                                   (2.4e9, "date")])  # the date: in 2100
def test_a_wait_beyond_the_retry_budget_fails_the_queued_judgements_at_once(
        judge_server, make_engine, retry_after, form) -> None:
    """One 429 asks for a wait of decades: the judgement refused and every one queued
    behind the closed gate fail (their retry budget cannot cover it), not wait forever."""
    server = judge_server({"default": {"scores": {"5": 1.0}},
                           "faults": [{"kind": "429", "first": 1, "retry_after": retry_after,
                                       "as": form}]})
    engine = make_engine(server, concurrency=1, retry_budget_seconds=600.0)
    done: list = []
    worker = threading.Thread(target=lambda: done.append(judge_blocking(engine,
        [request(f"answer {index}") for index in range(5)])), daemon=True)
    worker.start()
    worker.join(120)  # a guard against the old endless wait, not a measured time
    assert done, "the queued judgements still wait for the gate"
    [results] = done
    assert all(result.failed for result in results)
    assert server.stats()["requests"] == 1 and engine.stats.failures == 5
    assert all("retry budget" in result.error for result in results)


def test_a_judge_refusing_every_other_request_without_retry_after_keeps_going(
        judge_server, make_engine) -> None:
    """Every other request gets a 429 naming no wait: every judgement is obtained with the
    numbers of a clean run, one refusal per judgement, and the engine's pace and
    concurrency are not run down (each refusal used to halve the pace, to 0.05/s)."""
    requests = [request(f"answer {i}") for i in range(40)]
    clean = judge_blocking(make_engine(judge_server(SCRIPT)), requests)
    server = judge_server({**SCRIPT, "faults": [{"kind": "429", "every": 2}]})
    engine = make_engine(server, concurrency=4, max_retries=0)
    results = judge_blocking(engine, requests)
    assert scores(results) == scores(clean)
    stats = server.stats()
    assert stats["outcomes"]["ok"] == len(requests)  # one refusal per judgement (the
    assert stats["outcomes"]["429"] in (len(requests) - 1, len(requests))  # last: maybe none)
    throttle = engine._throttle
    assert throttle.intermittent() and throttle.limit >= 2
    assert throttle.pace is None or throttle.pace > 1.0
