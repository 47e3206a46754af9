"""The Inspect side of the judge: adapting ModelOutput logprobs and the grader role."""

from __future__ import annotations

import asyncio
import contextvars
import math

import pytest
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessageAssistant,
    Logprob,
    Logprobs,
    ModelOutput,
    TopLogprob,
    get_model,
)
from inspect_ai.model._model import init_model_roles

from condambig.judge_backend import (
    InspectJudgeBackend,
    completion_from_output,
    grader_judge_engine,
)
from condambig_metrics.judge import JudgeEngine, TransientJudgeError, judge_reply
from tests.judge.conftest import request


def output_with_logprobs(text: str, tokens: list[str], score_index: int,
                         alternatives: dict[str, float]) -> ModelOutput:
    content = []
    for index, token in enumerate(tokens):
        top = ([TopLogprob(token=t, logprob=math.log(p)) for t, p in alternatives.items()]
               if index == score_index else [TopLogprob(token=token, logprob=0.0)])
        chosen = math.log(alternatives[token]) if index == score_index else 0.0
        content.append(Logprob(token=token, logprob=chosen, top_logprobs=top))
    choice = ChatCompletionChoice(message=ChatMessageAssistant(content=text), stop_reason="stop",
                                  logprobs=Logprobs(content=content))
    return ModelOutput(model="grader", choices=[choice])


def test_model_output_logprobs_are_adapted_and_weighted() -> None:
    text = '{"score": 8, "reason": "right city"}'
    tokens = ['{"', "score", '":', " 8", ",", ' "', "reason", '":', ' "', "right", " city", '"}']
    output = output_with_logprobs(text, tokens, 3, {" 8": 0.7, " 9": 0.2, " eight": 0.1})
    completion = completion_from_output(output)
    assert completion.text == text
    assert [t.token for t in completion.token_logprobs] == tokens
    assert completion.token_logprobs[3].top[" 9"] == pytest.approx(math.log(0.2))
    judgement = judge_reply(completion)
    assert judgement.weighted
    assert judgement.raw_score == pytest.approx((0.7 * 8 + 0.2 * 9) / 0.9)
    assert judgement.reason == "right city"


def test_output_without_logprobs_gives_the_integer() -> None:
    output = ModelOutput.from_content(model="grader", content='{"score": 3}')
    completion = completion_from_output(output)
    assert completion.token_logprobs is None
    assert judge_reply(completion).raw_score == 3.0


def test_empty_output_is_a_retryable_failure() -> None:
    with pytest.raises(TransientJudgeError):
        completion_from_output(ModelOutput(model="grader", choices=[]))


def test_no_grader_role_means_no_engine() -> None:
    def without_role():
        init_model_roles({})
        return grader_judge_engine()

    assert contextvars.copy_context().run(without_role) is None


def test_grader_role_gives_an_engine_on_that_model(judge_server, monkeypatch, tmp_path) -> None:
    server = judge_server({"rules": [{"contains": "Lyon", "scores": {"6": 0.5, "9": 0.5}}]})
    monkeypatch.setenv("LOOPBACK_BASE_URL", server.base_url)
    monkeypatch.setenv("LOOPBACK_API_KEY", "test-key")
    grader = get_model("openai-api/loopback/judge-model", memoize=False)

    def with_role():
        init_model_roles({"grader": grader})
        return grader_judge_engine(tmp_path / "judge.sqlite")

    engine = contextvars.copy_context().run(with_role)
    assert isinstance(engine, JudgeEngine)
    assert engine.model_name == "openai-api/loopback/judge-model"
    [result] = asyncio.run(engine.judge_many([request("Lyon")]))
    assert result.weighted and result.raw_score == pytest.approx(7.5)
    sent = server.stats()["last_request"]
    assert (sent["model"], sent["logprobs"], sent["top_logprobs"]) == ("judge-model", True, 20)
    assert sent["temperature"] == 0


def test_grader_engine_uses_the_default_cache(judge_server, monkeypatch, tmp_path) -> None:
    server = judge_server({"default": {"scores": {"8": 1.0}}})
    monkeypatch.setenv("LOOPBACK_BASE_URL", server.base_url)
    monkeypatch.setenv("LOOPBACK_API_KEY", "test-key")
    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    grader = get_model("openai-api/loopback/judge-model", memoize=False)

    def judge_twice():
        init_model_roles({"grader": grader})
        first = asyncio.run(grader_judge_engine().judge_many([request("Lyon")]))
        second = asyncio.run(grader_judge_engine().judge_many([request("Lyon")]))
        return first + second

    first, second = contextvars.copy_context().run(judge_twice)
    assert (first.cached, second.cached) == (False, True)
    assert first.raw_score == second.raw_score == 8.0
    assert (tmp_path / "cache" / "judge.sqlite").is_file()
    assert server.stats()["requests"] == 1


def test_inspect_backend_failures_are_counted(judge_server, monkeypatch) -> None:
    server = judge_server({"faults": [{"kind": "401"}]})
    monkeypatch.setenv("LOOPBACK_BASE_URL", server.base_url)
    monkeypatch.setenv("LOOPBACK_API_KEY", "test-key")
    model = get_model("openai-api/loopback/judge-model", memoize=False)
    engine = JudgeEngine(InspectJudgeBackend(model), None, max_retries=1)
    [result] = asyncio.run(engine.judge_many([request("Lyon")]))
    assert result.failed and result.score is None and "401" in result.error


def test_connection_failures_are_told_from_timeouts() -> None:
    """Only a refused, reset or unanswered connection is left to the engine's breaker; a
    slow grader (a timeout, which the SDK's class makes a kind of connection error) is not."""
    import httpx
    import openai

    from condambig.judge_backend import connection_failure

    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    refused = openai.APIConnectionError(request=request)
    refused.__cause__ = httpx.ConnectError("connection refused")
    assert connection_failure(refused)
    assert connection_failure(ConnectionResetError())
    assert not connection_failure(openai.APITimeoutError(request=request))
    assert not connection_failure(TimeoutError())
    assert not connection_failure(ValueError("bad request"))


def test_only_judge_requests_skip_inspects_retries_of_connection_failures() -> None:
    """The grader's hook declines a retry only inside a judge request: the same model
    generating for the subject keeps Inspect's retries."""
    import httpx
    import openai

    from condambig.judge_backend import _JUDGE_REQUEST

    model = get_model("openai-api/grader/j", base_url="http://127.0.0.1:9/v1", api_key="k",
                      memoize=False)
    InspectJudgeBackend(model)
    InspectJudgeBackend(model)  # installed once
    refused = openai.APIConnectionError(
        request=httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions"))
    assert model.should_retry(refused) is True  # Inspect's own decision
    token = _JUDGE_REQUEST.set(True)
    try:
        assert model.should_retry(refused) is False
    finally:
        _JUDGE_REQUEST.reset(token)
