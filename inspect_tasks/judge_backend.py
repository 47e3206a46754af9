"""The judge engine on Inspect's ``grader`` model role (any Inspect provider, local or API).

``inspect eval condambig/<task> --model ... --model-role grader=openai/gpt-4o-mini`` makes
the grader the judge; Inspect's own client handles the provider, rate limits and its
retries, and :class:`~condambig_metrics.judge.JudgeEngine` adds the G-Eval scoring, the
shared sqlite cache and judge-failed accounting.

One exception to Inspect's retries: a judge request whose connection is refused, reset or
closed unanswered is not retried by Inspect (which would retry it for minutes, silently)
but handed to the engine as a connection failure, so that its breaker
(:mod:`condambig_metrics.judge.breaker`) notices a judge that went away mid-run after a few
probes. The grader's other calls (and the same model used as the subject) keep Inspect's
retries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from pathlib import Path

from inspect_ai.model import GenerateConfig, Model, ModelOutput, get_model, model_roles

from condambig.grader_connections import grader_connections
from condambig_metrics.judge import (
    JudgeCache,
    JudgeCompletion,
    JudgeEngine,
    PermanentJudgeError,
    TransientJudgeError,
    token_logprobs,
)
from condambig_metrics.judge.errors import ConnectionFailedError, redact_secrets
from condambig_metrics.judge.records import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TOP_LOGPROBS,
    ENDPOINT_STATUS,
    judge_settings,
)

GRADER_ROLE = "grader"


# what every judge request asks the grader for: temperature 0 and top logprobs
JUDGE_GENERATE_CONFIG = GenerateConfig(temperature=0, logprobs=True,
                                       top_logprobs=DEFAULT_TOP_LOGPROBS,
                                       max_tokens=DEFAULT_MAX_TOKENS)


class InspectJudgeBackend:
    """Sends judge prompts through an Inspect ``Model`` at temperature 0 with top logprobs."""

    def __init__(self, model: Model):
        self.model = model
        self.model_name = str(model)
        # The cache key's settings: the model name holds the provider; the endpoint is the
        # provider's base URL when one is set (two servers may serve one model name).
        self.cache_settings = judge_settings(getattr(getattr(model, "api", None), "base_url",
                                                     None))
        leave_connection_failures_to_the_engine(model)

    async def complete(self, prompt: str) -> JudgeCompletion:
        token = _JUDGE_REQUEST.set(True)
        try:
            output = await self.model.generate(
                prompt, config=JUDGE_GENERATE_CONFIG.merge(grader_connections(self.model)))
        except Exception as error:
            raise self._classified(error) from error
        finally:
            _JUDGE_REQUEST.reset(token)
        return completion_from_output(output)

    def _classified(self, error: Exception) -> Exception:
        summary = error_summary(error, secrets=[getattr(getattr(self.model, "api", None),
                                                        "api_key", None)])
        if connection_failure(error):
            return ConnectionFailedError(f"grader {self.model_name}: cannot reach it: {summary}")
        if isinstance(error, (asyncio.TimeoutError, TimeoutError, ConnectionError)):
            return TransientJudgeError(f"grader {self.model_name}: {summary}")
        # Inspect has already retried what its provider considers transient. A refusal of
        # every request (HTTP 401/403/404): the engine sends no more, and the scorer ends
        # the run (JudgeEngine.endpoint_refused)
        return PermanentJudgeError(f"grader {self.model_name} failed: {summary}",
                                   affects_all_requests=status_code(error) in ENDPOINT_STATUS)


# set while the judge backend awaits the grader: only its requests skip Inspect's retries
# of connection failures (a grader that is also the subject keeps them for generation)
_JUDGE_REQUEST: ContextVar[bool] = ContextVar("condambig_judge_request", default=False)


def leave_connection_failures_to_the_engine(model: Model) -> None:
    """Make Inspect's retry loop give a judge request's connection failure back at once
    (the engine retries it and its breaker counts it); installed once per model."""
    inspect_should_retry = model.should_retry
    if getattr(inspect_should_retry, "condambig_judge_hook", False):
        return

    def should_retry(error: BaseException) -> bool:
        if _JUDGE_REQUEST.get() and connection_failure(error):
            return False
        return inspect_should_retry(error)

    should_retry.condambig_judge_hook = True  # type: ignore[attr-defined]
    model.should_retry = should_retry  # type: ignore[method-assign]


# provider SDK and HTTP client exceptions of a refused, reset or unanswered connection
_CONNECTION_FAILURES = frozenset({
    "APIConnectionError", "ConnectError", "RemoteProtocolError", "ReadError", "WriteError",
    "ClientConnectionError", "ServerDisconnectedError",
})


def connection_failure(error: BaseException) -> bool:
    """Whether ``error`` (or an exception it wraps) is a refused, reset or closed
    connection; a timeout (a slow grader: its class name says ``Timeout``) is not."""
    for current in _chain(error):
        names = {kind.__name__ for kind in type(current).__mro__}
        if isinstance(current, TimeoutError) or any("Timeout" in name for name in names):
            return False
        if isinstance(current, ConnectionError) or names & _CONNECTION_FAILURES:
            return True
    return False


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def status_code(error: BaseException) -> int | None:
    """The HTTP status behind ``error`` (Inspect wraps the provider's exception)."""
    for current in _chain(error):
        code = getattr(current, "status_code", None)
        if isinstance(code, int):
            return code
    return None


def error_summary(error: BaseException, limit: int = 300,
                  secrets: Iterable[str | None] = ()) -> str:
    """The last line of the error (Inspect's ``ModelGenerateError`` puts the whole
    request before the provider's message), at most ``limit`` characters, with ``secrets``
    (the grader's key), bearer tokens and key-like text redacted."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = redact_secrets(lines[-1] if lines else type(error).__name__, secrets)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def completion_from_output(output: ModelOutput) -> JudgeCompletion:
    """Adapt an Inspect ``ModelOutput`` (text + ``choices[0].logprobs``) to a completion."""
    if output.empty or output.error:
        raise TransientJudgeError(
            f"grader returned no usable completion{': ' + output.error if output.error else ''}"
        )
    logprobs = output.choices[0].logprobs
    if logprobs is None or not logprobs.content:
        return JudgeCompletion(text=output.completion, token_logprobs=None)
    tokens = [
        token_logprobs(
            entry.token, entry.logprob,
            ((alternative.token, alternative.logprob) for alternative in entry.top_logprobs or []),
        )
        for entry in logprobs.content
    ]
    return JudgeCompletion(text=output.completion, token_logprobs=tokens)


def grader_judge_engine(cache_path: str | Path | None = None, *,
                        default: str | None = None) -> JudgeEngine | None:
    """The engine on the ``grader`` role (else on ``default``, the benchmark's default
    grader), or None when neither is there.

    Call it inside a running eval (a scorer), where Inspect has bound the roles, those of
    ``task_with(task, model_roles=...)`` included; ``get_model(role=..., default=...)`` as
    inspect_evals resolves its graders. ``cache_path`` None means the cache
    ``CONDAMBIG_JUDGE_CACHE`` names, as for lm-eval and ``condambig-score`` (none for
    ``off``; unset, :func:`condambig_tasks.settings.judge_cache_file`, shared with them).
    The engine's concurrency and retries are the project's defaults.
    """
    if model_roles().get(GRADER_ROLE) is None and default is None:
        return None
    model = get_model(role=GRADER_ROLE, default=default)
    if cache_path is None:
        from condambig_tasks import settings

        cache_path = settings.judge_cache_choice()
    cache = JudgeCache(cache_path) if cache_path is not None else None
    return JudgeEngine(InspectJudgeBackend(model), cache)
