"""The judge's HTTP client against loopback servers: one request per ``complete``, the pool,
redirects not followed, error bodies read as the OpenAI SDK reads them, sessions per event
loop, proxies, and the engine's start reaching its bound without waiting for replies."""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging
import warnings

import pytest

from condambig_metrics.judge import JudgeConfig, JudgeEngine, OpenAIJudgeBackend
from condambig_metrics.judge.openai_backend import _error_message, _proxy_for
from condambig_metrics.judge.records import DEFAULT_JUDGE_CONCURRENCY
from condambig_metrics.judge.throttle import EndpointThrottle
from tests.judge.conftest import request
from tests.support.judging import judge_blocking

SCRIPT = {"rules": [{"contains": "Lyon", "scores": {"6": 0.5, "9": 0.3, "2": 0.2}}],
          "default": {"scores": {"5": 1.0}}}


def test_a_redirect_is_not_followed_and_the_key_goes_nowhere_else(judge_server,
                                                                   make_engine) -> None:
    elsewhere = judge_server({**SCRIPT, "require_api_key": "test-key"})
    server = judge_server({**SCRIPT, "faults": [
        {"kind": "redirect", "location": elsewhere.base_url + "/chat/completions"}]})
    engine = make_engine(server, concurrency=1)
    results = judge_blocking(engine, [request("Lyon"), request("Paris")])
    assert all(result.failed for result in results)
    assert "HTTP 307" in results[0].error and elsewhere.base_url in results[0].error
    assert "CONDAMBIG_JUDGE_BASE_URL" in results[0].error
    assert engine.endpoint_failure is not None  # the endpoint's, not one prompt's
    assert server.stats()["requests"] == engine.stats.requests_sent == 1
    assert elsewhere.stats()["requests"] == 0


def test_no_quota_left_is_an_endpoint_failure_sent_once(judge_server, make_engine) -> None:
    server = judge_server({**SCRIPT, "faults": [{"kind": "429", "code": "insufficient_quota"}]})
    engine = make_engine(server, concurrency=1, max_retries=3)
    results = judge_blocking(engine, [request("Lyon"), request("Paris"), request("Rome")])
    assert all(result.failed for result in results)
    assert "no quota left" in engine.endpoint_failure
    assert server.stats()["requests"] == 1 and engine.stats.retries == 0


@pytest.mark.parametrize("kind", ["409", "425", "502"])
def test_other_retryable_statuses_are_retried(judge_server, make_engine, kind) -> None:
    server = judge_server({**SCRIPT, "faults": [{"kind": kind, "first": 1}]})
    engine = make_engine(server, concurrency=1)
    [result] = judge_blocking(engine, [request("Lyon")])
    assert not result.failed and result.raw_score == pytest.approx(6.1)
    assert server.stats()["requests"] == 2 and engine.stats.retries == 1


def test_connections_are_kept_open_and_reused(judge_server, make_engine) -> None:
    server = judge_server({**SCRIPT, "latency_ms": 20})
    engine = make_engine(server, concurrency=4)
    results = judge_blocking(engine, [request(f"answer {i}") for i in range(40)])
    assert not any(result.failed for result in results)
    stats = server.stats()
    assert stats["requests"] == 40 and stats["connections"] <= 4


def test_an_unreachable_endpoint_is_retried_then_named(make_engine, judge_server) -> None:
    server = judge_server(SCRIPT)
    server.stop()  # the port is closed now
    engine = make_engine(server, max_retries=1)
    [result] = judge_blocking(engine, [request("Lyon")])
    assert result.failed and "cannot reach the judge endpoint" in result.error
    assert str(server.port) in result.error and "\n" not in result.error
    assert engine.stats.requests_sent == 2


@pytest.mark.parametrize(("body", "message", "code"), [
    (b'{"error": {"message": "logprobs are off", "type": "x", "code": "bad"}}',
     "logprobs are off", "bad"),
    # vLLM's error body: the fields at the top level, the code a number
    (b'{"object": "error", "message": "model\\nnot found", "type": "NotFound", "code": 404}',
     "model not found", "404"),
    (b"<html><body>502 Bad Gateway</body></html>", "<html><body>502 Bad Gateway</body></html>",
     None),
    (b"", "(no message)", None),
])
def test_error_bodies_are_read_as_the_openai_sdk_reads_them(body, message, code) -> None:
    assert _error_message(body) == (message, code)


def test_a_session_left_open_by_an_ended_loop_is_let_go_quietly(judge_server, caplog) -> None:
    server = judge_server(SCRIPT)
    backend = OpenAIJudgeBackend(JudgeConfig(model="loopback-judge", base_url=server.base_url,
                                             api_key="k"))
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.ERROR):
        warnings.simplefilter("always")
        first = asyncio.run(backend.complete("Lyon"))  # no aclose: that loop just ends
        second = asyncio.run(backend.complete("Lyon"))  # a new loop, a new session
        asyncio.run(backend.aclose())
        gc.collect()
    assert first.text == second.text and server.stats()["requests"] == 2
    unclosed = ("Unclosed client session", "Unclosed connector")
    assert not [w for w in caught if str(w.message).startswith(unclosed)]
    assert not [r for r in caplog.records if r.getMessage().startswith(unclosed)]


def test_proxies_come_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    monkeypatch.delenv("http_proxy", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert _proxy_for("http://judge.example:8000/v1/chat/completions") == \
        "http://proxy.example:3128"
    assert _proxy_for("http://127.0.0.1:8000/v1/chat/completions") is None
    assert _proxy_for("https://judge.example/v1/chat/completions") is None  # no HTTPS_PROXY


# ---- the engine's start ------------------------------------------------------------------

def test_the_start_reaches_the_bound_without_waiting_for_replies(judge_server,
                                                                 make_engine) -> None:
    # 16 judgements at 400 ms each and concurrency 16: one round trip. Growing only by one
    # per success (1, 2, 4, 8, 1 in flight) would take five.
    server = judge_server({**SCRIPT, "latency_ms": 400})
    engine = make_engine(server, concurrency=16)
    results = judge_blocking(engine, [request(f"answer {i}") for i in range(16)])
    assert not any(result.failed for result in results)
    assert server.stats()["max_in_flight"] == 16  # all in one round trip


def test_a_rate_limit_ends_the_start_and_halves_what_it_reached(monkeypatch) -> None:
    """With ``time.monotonic`` frozen and moved by hand (a loaded machine's sleeps
    overshoot, and the start's doubling would read them as more time); the event loop only
    runs ready callbacks here, so it needs no clock of its own."""
    import time

    from condambig_metrics.judge import throttle as throttle_module

    clock = {"now": time.monotonic()}
    monkeypatch.setattr(throttle_module.time, "monotonic", lambda: clock["now"])

    async def run() -> tuple[int, float]:
        throttle = EndpointThrottle(64, 0.5, 20.0)
        sent_at = await throttle.acquire()
        clock["now"] += 0.1 + 1e-9  # the start allows 2 ** (0.1 / 0.025) = 16 by now
        throttle.rate_limited(0.0, sent_at)
        limit = throttle.limit
        waiting = [asyncio.ensure_future(throttle.acquire()) for _ in range(20)]
        clock["now"] += 0.2  # without the start's doubling, nothing more is let in
        for _ in range(50):
            await asyncio.sleep(0)
        granted = sum(future.done() for future in waiting)
        for future in waiting:
            future.cancel()
        return granted + 1, limit

    in_flight, limit = asyncio.run(run())
    assert limit == pytest.approx(8)  # half of the 16 the start had reached
    assert in_flight == 8


def test_the_default_concurrency_is_declared_once(monkeypatch, tmp_path) -> None:
    from condambig import judge_backend
    from condambig_tasks import settings

    assert DEFAULT_JUDGE_CONCURRENCY == JudgeConfig(model="m").concurrency
    assert inspect.signature(JudgeEngine.__init__).parameters["concurrency"].default == \
        DEFAULT_JUDGE_CONCURRENCY
    # the Inspect grader's engine (no grader bound: the default grader's)
    grader_engine = judge_backend.grader_judge_engine(tmp_path / "judge.sqlite",
                                                      default="mockllm/model")
    assert grader_engine.concurrency == DEFAULT_JUDGE_CONCURRENCY
    monkeypatch.delenv("CONDAMBIG_JUDGE_CONCURRENCY", raising=False)
    config = settings.judge_config_from_environment({"judge_model": "m", "judge_api_key": "k"})
    assert config.concurrency == DEFAULT_JUDGE_CONCURRENCY
