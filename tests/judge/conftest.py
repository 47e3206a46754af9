"""Fixtures for the judge tests: a loopback judge server and engines with fast backoff."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from condambig_metrics.judge import (
    JudgeCache,
    JudgeConfig,
    JudgeCriterion,
    JudgeEngine,
    JudgeRequest,
    OpenAIJudgeBackend,
)
from tests.support.judge_server import JudgeServer

ANSWER_CORRECTNESS = JudgeCriterion(
    name="Answer Correctness",
    criteria="Whether the actual answer is factually correct based on the expected answer.",
    evaluation_steps=(
        "Check whether the actual answer contradicts the expected answer.",
        "Heavily penalise omission of critical details.",
        "The answer addresses the question without irrelevant information.",
    ),
)


def request(actual: str, expected: str = "Paris", question: str = "Capital of France?") -> JudgeRequest:
    return JudgeRequest(ANSWER_CORRECTNESS, input=question, actual_output=actual,
                        expected_output=expected)


@pytest.fixture
def judge_server() -> Iterator[Callable[..., JudgeServer]]:
    """Start loopback servers with a script; all are stopped after the test."""
    servers: list[JudgeServer] = []

    def start(script: dict | None = None) -> JudgeServer:
        server = JudgeServer(script).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def make_engine(tmp_path: Path) -> Callable[..., JudgeEngine]:
    """An OpenAI-backend engine on a server, with millisecond backoff so retries are quick."""

    def build(server: JudgeServer, *, cache: JudgeCache | None | str = "none",
              concurrency: int = 4, max_retries: int = 2, timeout_seconds: float = 5.0,
              top_logprobs: int = 20, model: str = "loopback-judge",
              retry_budget_seconds: float = 600.0) -> JudgeEngine:
        config = JudgeConfig(model=model, base_url=server.base_url, api_key="test-key",
                             concurrency=concurrency, max_retries=max_retries,
                             timeout_seconds=timeout_seconds, top_logprobs=top_logprobs)
        judge_cache = None if cache == "none" else cache
        return JudgeEngine(OpenAIJudgeBackend(config), judge_cache, concurrency=concurrency,
                           max_retries=max_retries, backoff_initial_seconds=0.001,
                           backoff_max_seconds=0.01, retry_budget_seconds=retry_budget_seconds)

    return build
