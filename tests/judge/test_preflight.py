"""The judge check before any generation, against a loopback OpenAI-compatible server."""

import socket

import pytest

from condambig_metrics.judge import JudgeConfig, OpenAIJudgeBackend
from condambig_metrics.judge.preflight import JudgeUnavailableError, check_judge
from condambig_metrics.judge.records import DEFAULT_JUDGE_MAX_RETRIES
from tests.support.judge_server import JudgeServer
from tests.support.judging import judge_blocking


def _backend(base_url: str, model: str = "judge-model") -> OpenAIJudgeBackend:
    return OpenAIJudgeBackend(JudgeConfig(model=model, base_url=base_url, api_key="k",
                                          timeout_seconds=5))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("script", [
    {},                                              # a normal judge
    {"refuse_logprobs": True},                       # answers without log-probabilities
    {"default": {"reply": "no score here"}},          # answers, unreadably
    {"faults": [{"kind": "429"}]},                   # busy, but there
])
def test_a_judge_that_answers_passes(script):
    with JudgeServer(script) as server:
        check_judge(_backend(server.base_url), "judge-model at " + server.base_url)
        assert server.stats()["requests"] >= 1


@pytest.mark.parametrize("kind", ["401", "403", "404"])
def test_a_refusal_ends_at_once_naming_the_judge(kind):
    with JudgeServer({"faults": [{"kind": kind}]}) as server:
        with pytest.raises(JudgeUnavailableError) as raised:
            check_judge(_backend(server.base_url), f"judge-model at {server.base_url}",
                        what_to_set="CONDAMBIG_JUDGE_BASE_URL")
        assert server.stats()["requests"] == 1
    message = str(raised.value)
    assert server.base_url in message and f"HTTP {kind}" in message
    assert "CONDAMBIG_JUDGE_BASE_URL" in message and "\n" not in message


def test_an_unreachable_endpoint_is_tried_as_often_as_the_engine_would_then_ends():
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    with pytest.raises(JudgeUnavailableError, match="cannot be reached") as raised:
        check_judge(_backend(url), f"judge-model at {url}")
    assert raised.value.requests == 1 + DEFAULT_JUDGE_MAX_RETRIES


@pytest.mark.parametrize("max_retries", [DEFAULT_JUDGE_MAX_RETRIES, 2, 0])
def test_a_judge_answering_on_its_last_retry_passes_the_check(max_retries):
    """The check tries as often as the engine would (1 + max_retries), not fewer."""
    faults = {"faults": [{"kind": "500", "first": max_retries}]}
    with JudgeServer(faults) as server:
        backend = OpenAIJudgeBackend(JudgeConfig(model="judge-model", base_url=server.base_url,
                                                 api_key="k", max_retries=max_retries))
        check_judge(backend, "judge-model at " + server.base_url)
        assert server.stats()["requests"] == 1 + max_retries
    with JudgeServer({"faults": [{"kind": "500", "first": 1 + max_retries}]}) as server:
        backend = OpenAIJudgeBackend(JudgeConfig(model="judge-model", base_url=server.base_url,
                                                 api_key="k", max_retries=max_retries))
        with pytest.raises(JudgeUnavailableError, match="cannot be reached"):
            check_judge(backend, "judge-model at " + server.base_url)
        assert server.stats()["requests"] == 1 + max_retries


def test_the_default_check_tries_as_often_as_the_default_engine():
    with JudgeServer({"faults": [{"kind": "503", "first": DEFAULT_JUDGE_MAX_RETRIES}]}) as server:
        check_judge(_backend(server.base_url), "judge-model at " + server.base_url)
        assert server.stats()["requests"] == 1 + DEFAULT_JUDGE_MAX_RETRIES


def test_after_a_failed_check_no_request_is_counted_that_was_not_sent():
    """The engine's request count plus the check's equals what the endpoint received."""
    from condambig_metrics.judge import JudgeEngine
    from condambig_metrics.judge.preflight import CheckedBackend
    from tests.judge.conftest import request

    with JudgeServer({"require_api_key": "another-key"}) as server:
        backend = CheckedBackend(_backend(server.base_url), "judge-model")
        engine = JudgeEngine(backend, None, concurrency=8)
        results = judge_blocking(engine, [request(f"answer {i}") for i in range(8)])
        received = server.stats()["requests"]
    assert all(result.failed for result in results)
    assert received == 1
    assert engine.stats.requests_sent + backend.check_requests == received


def test_the_default_grader_is_not_called_a_bound_role(monkeypatch):
    """With no grader bound, the check's failure names the default grader as such."""
    from condambig import grader_preflight

    url = f"http://127.0.0.1:{_closed_port()}/v1"
    monkeypatch.setenv("DEADGRADER_BASE_URL", url)
    monkeypatch.setenv("DEADGRADER_API_KEY", "k")
    monkeypatch.setattr(grader_preflight, "_CHECKED", set())
    with pytest.raises(grader_preflight.GraderUnavailableError) as raised:
        grader_preflight.grader_in_effect("condambigqa_main", "openai-api/deadgrader/j")
    message = str(raised.value)
    assert message.startswith("condambigqa_main: no grader role is bound and the default "
                              "grader openai-api/deadgrader/j at " + url), message
    assert "cannot be reached" in message and "grader=openai-api" not in message
    assert "--model-role grader=<model>" in message and "\n" not in message


def test_a_dead_port_whose_number_holds_429_is_not_taken_for_a_rate_limit():
    """Only a rate-limit error means "there and busy", not '429' anywhere in a message."""
    for port in range(42900, 43000):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        break
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(JudgeUnavailableError, match="cannot be reached"):
        check_judge(_backend(url), f"judge-model at {url}")


def test_a_grader_that_failed_its_check_is_checked_again_one_that_answered_is_not(monkeypatch):
    """A key or endpoint fixed within one process (a notebook, eval_set's retries) is seen."""
    from types import SimpleNamespace

    from condambig import grader_preflight

    calls = []

    def check(grader, base_url, default_for=None):
        calls.append(base_url)
        if len(calls) == 1:
            raise grader_preflight.GraderUnavailableError("401: bad key")

    monkeypatch.setattr(grader_preflight, "_check", check)
    monkeypatch.setattr(grader_preflight, "_CHECKED", set())
    api = SimpleNamespace(base_url="http://127.0.0.1:9/v1")
    grader = type("Grader", (), {"api": api, "__str__": lambda self: "openai/judge"})()
    with pytest.raises(grader_preflight.GraderUnavailableError, match="bad key"):
        grader_preflight.check_grader(grader)
    grader_preflight.check_grader(grader)  # fixed: checked again, and answers
    grader_preflight.check_grader(grader)  # answered before: not asked again
    assert len(calls) == 2


def test_the_check_asks_for_a_few_tokens_not_a_judgements_budget():
    """A slow local judge answers a 16-token request in seconds where a full judgement's
    budget would run past the check's timeout."""
    from condambig_metrics.judge.preflight import PREFLIGHT_MAX_TOKENS

    with JudgeServer({}) as server:
        backend = OpenAIJudgeBackend(JudgeConfig(model="judge-model", base_url=server.base_url,
                                                 api_key="k", max_tokens=512))
        check_judge(backend, "judge-model at " + server.base_url)
        stats = server.stats()
    assert stats["requests"] == 1
    assert stats["last_request"]["max_tokens"] == PREFLIGHT_MAX_TOKENS < 512


def test_a_judge_that_connects_but_stays_silent_is_called_slow_not_unreachable():
    with JudgeServer({"latency_ms": 3000}) as server:
        with pytest.raises(JudgeUnavailableError) as raised:
            check_judge(_backend(server.base_url), "judge-model at " + server.base_url,
                        attempts=1, timeout_seconds=0.2)
    message = str(raised.value)
    assert "did not answer the check request" in message and "cannot be reached" not in message
    assert "too slow or stuck" in message and "\n" not in message


def test_a_grader_that_failed_mid_run_is_checked_again_and_its_return_counted(monkeypatch):
    """After a grader went away (or refused every request) mid-run, its next use is checked
    again (eval-set's retry ends at the check while it is down), and its answering again is
    counted, so that scorers make a new judge engine instead of the one that gave up."""
    from types import SimpleNamespace

    from condambig import grader_preflight

    calls = []
    down = [False]

    def check(grader, base_url, default_for=None):
        calls.append(base_url)
        if down[0]:
            raise grader_preflight.GraderUnavailableError("cannot be reached")

    monkeypatch.setattr(grader_preflight, "_check", check)
    monkeypatch.setattr(grader_preflight, "_CHECKED", set())
    monkeypatch.setattr(grader_preflight, "_FORGOTTEN", set())
    api = SimpleNamespace(base_url="http://127.0.0.1:9/v1")
    grader = type("Grader", (), {"api": api, "__str__": lambda self: "openai/judge"})()
    grader_preflight.check_grader(grader)
    returns = grader_preflight.grader_returns()
    grader_preflight.forget_grader(grader)  # it went away mid-run
    down[0] = True
    with pytest.raises(grader_preflight.GraderUnavailableError):
        grader_preflight.check_grader(grader)  # checked again: still down
    assert grader_preflight.grader_returns() == returns
    down[0] = False
    grader_preflight.check_grader(grader)  # back
    grader_preflight.check_grader(grader)  # answered: not asked again
    assert len(calls) == 3
    assert grader_preflight.grader_returns() == returns + 1
