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


@pytest.mark.parametrize("kind, setting", [("401", "CONDAMBIG_JUDGE_API_KEY"),
                                           ("403", "CONDAMBIG_JUDGE_API_KEY"),
                                           ("404", "CONDAMBIG_JUDGE_BASE_URL")])
def test_a_refusal_ends_at_once_naming_the_judge(kind, setting):
    with JudgeServer({"faults": [{"kind": kind}]}) as server:
        with pytest.raises(JudgeUnavailableError) as raised:
            check_judge(_backend(server.base_url), f"judge-model at {server.base_url}")
        assert server.stats()["requests"] == 1
    message = str(raised.value)
    assert server.base_url in message and f"HTTP {kind}" in message
    assert message.count(setting) == 1 and "\n" not in message


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
    from condambig_metrics.judge import preflight

    url = f"http://127.0.0.1:{_closed_port()}/v1"
    monkeypatch.setenv("DEADGRADER_BASE_URL", url)
    monkeypatch.setenv("DEADGRADER_API_KEY", "k")
    monkeypatch.setattr(preflight, "_ANSWERED", set())
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


class _Scripted:
    """A judge that answers a check, or refuses it (``down``), counting the checks."""

    def __init__(self):
        self.down, self.checks = False, 0

    async def check(self, prompt):
        from condambig_metrics.judge import PermanentJudgeError

        self.checks += 1
        if self.down:
            raise PermanentJudgeError("HTTP 401: bad key")


def test_a_judge_that_failed_its_check_is_checked_again_one_that_answered_is_not(
        monkeypatch):
    """A key or endpoint fixed within one process (a notebook, eval_set's retries) is seen."""
    from condambig_metrics.judge import preflight

    monkeypatch.setattr(preflight, "_ANSWERED", set())
    judge = _Scripted()
    judge.down = True
    with pytest.raises(JudgeUnavailableError, match="bad key"):
        check_judge(judge, "judge at x", once=True)
    judge.down = False
    check_judge(judge, "judge at x", once=True)  # fixed: checked again, and answers
    check_judge(judge, "judge at x", once=True)  # answered before: not asked again
    assert judge.checks == 2


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


def test_a_judge_that_failed_mid_run_is_checked_again_and_its_return_counted(monkeypatch):
    """After a judge (the grader) went away (or refused every request) mid-run, its next use
    is checked again (eval-set's retry ends at the check while it is down), and its
    answering again is counted, so that scorers make a new judge engine instead of the one
    that gave up."""
    from condambig_metrics.judge import preflight

    monkeypatch.setattr(preflight, "_ANSWERED", set())
    monkeypatch.setattr(preflight, "_FORGOTTEN", set())
    judge = _Scripted()
    check_judge(judge, "judge at x", once=True)
    returns = preflight.judge_returns()
    preflight.forget_judge("judge at x")  # it went away mid-run
    judge.down = True
    with pytest.raises(JudgeUnavailableError):
        check_judge(judge, "judge at x", once=True)  # checked again: still down
    assert preflight.judge_returns() == returns
    judge.down = False
    check_judge(judge, "judge at x", once=True)  # back
    check_judge(judge, "judge at x", once=True)  # answered: not asked again
    assert judge.checks == 3
    assert preflight.judge_returns() == returns + 1
