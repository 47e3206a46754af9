"""The judge engine: cache lookup, bounded concurrency, retries, failure accounting.

Backends only send one prompt; everything that makes a judged run reliable and fast lives
here once, for lm-eval, Inspect and ``condambig-score`` alike.

Progress: give the engine a ``progress_factory(label, total)`` (for instance
``condambig_tasks.progress.Progress``); each :meth:`JudgeEngine.judge_many` call then makes
one progress object for its distinct judgements and calls its ``advance(1)`` as each one
finishes (cache hits and failures included), and its ``failed(1)``, when it has one, for
each judgement that failed (finished, but nothing kept to resume from).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from condambig_metrics.judge.breaker import ConnectionBreaker
from condambig_metrics.judge.cache import JudgeCache, cache_key
from condambig_metrics.judge.errors import (
    ConnectionFailedError,
    JudgeError,
    LogprobsRefusedError,
    PermanentJudgeError,
    RateLimitedError,
    RequestNotSentError,
    TransientJudgeError,
    UnparseableReplyError,
    redact_secrets,
)
from condambig_metrics.judge.prompt import render_prompt
from condambig_metrics.judge.records import (
    DEFAULT_JUDGE_CONCURRENCY,
    DEFAULT_JUDGE_MAX_RETRIES,
    JudgeBackend,
    JudgeCompletion,
    JudgeRequest,
    JudgeResult,
    JudgeStats,
)
from condambig_metrics.judge.scoring import judge_reply
from condambig_metrics.judge.throttle import EndpointThrottle, WaitBeyondBudget

logger = logging.getLogger(__name__)

_FAILURES_LOGGED = 3

_TRANSCRIPT: ContextVar[list[dict[str, Any]] | None] = ContextVar("judge_transcript",
                                                                 default=None)


@contextlib.contextmanager
def record_judgements() -> Iterator[list[dict[str, Any]]]:
    """Collect every judgement made in this context (prompt, reply, score, failure), for a
    per-sample transcript such as Inspect's score metadata."""
    transcript: list[dict[str, Any]] = []
    token = _TRANSCRIPT.set(transcript)
    try:
        yield transcript
    finally:
        _TRANSCRIPT.reset(token)


class JudgeEngine:
    """Judges many requests concurrently; order of results follows order of requests.

    ``concurrency``, ``max_retries`` and ``retry_budget_seconds`` as a
    :class:`~condambig_metrics.judge.records.JudgeConfig` checked them (the front ends
    read them into one)."""

    def __init__(
        self,
        backend: JudgeBackend,
        cache: JudgeCache | None,
        concurrency: int = DEFAULT_JUDGE_CONCURRENCY,
        max_retries: int = DEFAULT_JUDGE_MAX_RETRIES,
        *,
        request_timeout_seconds: float | None = None,
        backoff_initial_seconds: float = 0.5,
        backoff_max_seconds: float = 20.0,
        retry_budget_seconds: float = 600.0,
        progress_factory: Callable[[str, int], Any] | None = None,
        breaker_probe_seconds: float = 1.0,
    ):
        self.backend = backend
        self.cache = cache
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.request_timeout_seconds = request_timeout_seconds
        self.backoff_initial_seconds = backoff_initial_seconds
        self.backoff_max_seconds = backoff_max_seconds
        self.retry_budget_seconds = retry_budget_seconds
        self.progress_factory = progress_factory
        self._stats = JudgeStats()
        self._judged = 0  # judgements obtained, from the endpoint or the cache
        self._last_error: str | None = None
        self._endpoint_error: PermanentJudgeError | None = None
        self._throttle = EndpointThrottle(concurrency, backoff_initial_seconds,
                                          backoff_max_seconds)
        # an endpoint that stops accepting connections gets a few probes, not every retry
        self.breaker = ConnectionBreaker(probe_seconds=breaker_probe_seconds)

    @property
    def model_name(self) -> str:
        return self.backend.model_name

    @property
    def stats(self) -> JudgeStats:
        return replace(self._stats)

    @property
    def endpoint_failure(self) -> str | None:
        """Why the endpoint, not one prompt, failed; None when it did not.

        An authentication or endpoint error (HTTP 401/403/404), or failures with not one
        judgement obtained (an unreachable or broken endpoint). A run that reports judged
        metrics should stop with an error status when this is set.
        """
        if self._endpoint_error is not None:
            return str(self._endpoint_error)
        if self._stats.failures and not self._judged:
            return (f"all {self._stats.failures} judgement(s) failed; the last error: "
                    f"{self._last_error}")
        return None

    @property
    def endpoint_refused(self) -> bool:
        """The endpoint refused the requests as a whole (a key, model or URL to fix, or it
        failed the check before the first judgement), rather than went away mid-run."""
        return self._endpoint_error is not None and self.breaker.gone is None

    async def judge_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeResult]:
        """One result per request, in order; identical prompts (under one weighting rule)
        are judged once.

        Concurrent calls on one event loop share the engine's ``concurrency`` bound and its
        slow-down when the endpoint rate-limits (:mod:`condambig_metrics.judge.throttle`).
        """
        asks = [(render_prompt(request), request.weighting) for request in requests]
        unique = list(dict.fromkeys(asks))
        if self.cache is not None:
            self.cache.open()
        progress = (None if self.progress_factory is None
                    else self.progress_factory(f"judge {self.model_name}", len(unique)))

        async def judge(prompt: str, weighting: str) -> JudgeResult:
            result = await self._judge(prompt, weighting)
            if progress is not None:
                if result.failed and hasattr(progress, "failed"):
                    progress.failed(1)
                progress.advance(1)
            return result

        results = await asyncio.gather(*(judge(prompt, weighting) for prompt, weighting in unique))
        by_ask = dict(zip(unique, results, strict=True))
        transcript = _TRANSCRIPT.get()
        if transcript is not None:
            transcript.extend(_transcript_entry(prompt, by_ask[(prompt, weighting)])
                              for prompt, weighting in unique)
        return [by_ask[ask] for ask in asks]

    async def _judge(self, prompt: str, weighting: str) -> JudgeResult:
        settings = self._cache_settings()
        hit = self._cached(prompt, weighting, settings)
        if hit is not None:
            return hit
        if self._endpoint_error is not None:
            return self._failed(str(self._endpoint_error), quiet=True)
        try:
            obtained = await self._ask_with_retries(prompt, weighting, settings)
        except PermanentJudgeError as error:
            if error.affects_all_requests:
                self._endpoint_error = error
            return self._failed(str(error) or type(error).__name__,
                                quiet=error.affects_all_requests)
        except TransientJudgeError as error:
            return self._failed(str(error) or type(error).__name__,
                                quiet=isinstance(error, ConnectionFailedError))
        except Exception as error:  # a backend bug must not take down the whole run
            return self._failed(f"{type(error).__name__}: {error}")
        if isinstance(obtained, JudgeResult):  # cached under settings changed meanwhile
            return obtained
        judgement, settings = obtained
        self._judged += 1
        if self.cache is not None:
            try:
                self.cache.put(self._key(prompt, weighting, settings), self.backend.model_name,
                               judgement)
            except (OSError, ValueError, sqlite3.Error) as error:  # keep the judgement; only resuming suffers
                logger.warning("judge cache %s: could not store a result: %s",
                               self.cache.path, error)
        return judgement

    def _cache_settings(self) -> dict[str, str]:
        return dict(getattr(self.backend, "cache_settings", None) or {})

    def _key(self, prompt: str, weighting: str, settings: Mapping[str, str]) -> str:
        return cache_key(self.backend.model_name, prompt, weighting, settings)

    def _cached(self, prompt: str, weighting: str,
                settings: Mapping[str, str]) -> JudgeResult | None:
        if self.cache is None:
            return None
        hit = self.cache.get(self._key(prompt, weighting, settings))
        if hit is None:
            return None
        self._stats.cache_hits += 1
        self._judged += 1
        return hit

    async def _ask_with_retries(
        self, prompt: str, weighting: str, settings: dict[str, str],
    ) -> tuple[JudgeResult, Mapping[str, str]] | JudgeResult:
        """The judgement and the settings it was obtained with (or a cache hit, when the
        backend's settings changed while the request waited).

        Rate limits wait as the throttle says and are bounded only by the retry budget in
        time; other transient errors back off per judgement and also count against
        ``max_retries``. The budget starts at the first failed attempt.
        """
        throttle = self._throttle
        retries_left = self.max_retries
        deadline: float | None = None
        backoff = self.backoff_initial_seconds
        retry = False
        unparseable_reply: str | None = None  # the last reply no score was read from
        while True:
            try:
                sent_at = await throttle.acquire(retry, deadline, self.retry_budget_seconds)
            except WaitBeyondBudget as error:
                raise TransientJudgeError(
                    f"{error}, more than this judgement's retry budget of "
                    f"{self.retry_budget_seconds:g} s (CONDAMBIG_JUDGE_RETRY_BUDGET / --metadata "
                    "judge_retry_budget); gave up without sending it") from None
            rate_limited = False
            probe = False
            try:
                probe = await self.breaker.admit()
                if self._endpoint_error is not None:
                    raise self._endpoint_error
                current = self._cache_settings()
                if current != settings:  # e.g. log-probabilities were refused meanwhile
                    settings = current
                    hit = self._cached(prompt, weighting, settings)
                    if hit is not None:
                        return hit
                try:
                    sent_probe, probe = probe, False  # reported by _send_watched
                    completion = await self._send_watched(prompt, sent_probe)
                    # unparseable (an echo of the prompt included): retried
                    judgement = judge_reply(completion, weighting, prompt)
                except LogprobsRefusedError:
                    # The backend has switched log-probabilities off: ask again now, as every
                    # request in flight when the refusals came back does.
                    self._stats.logprob_fallbacks += 1
                    retry = True
                    continue
                except RateLimitedError as error:
                    throttle.rate_limited(error.retry_after, sent_at)
                    failure: TransientJudgeError = error
                    rate_limited = True
                except UnparseableReplyError as error:
                    if completion.text == unparseable_reply:
                        # the same reply to the same request at temperature 0: asking
                        # again would only repeat it (a real judge that did not write the
                        # verdict format spent the whole retry budget on copies of it)
                        raise UnparseableReplyError(
                            f"{error} (the same reply twice at temperature 0: not asked "
                            "again)") from None
                    unparseable_reply = completion.text
                    failure = error
                except TransientJudgeError as error:
                    failure = error
                else:
                    throttle.succeeded()
                    obtained_with = (settings if completion.cache_settings is None
                                     else dict(completion.cache_settings))
                    return judgement, obtained_with
            finally:
                if probe:  # not sent (or its sending was cancelled)
                    self.breaker.report(True, None)
                throttle.release()
            now = time.monotonic()
            if deadline is None:
                deadline = now + self.retry_budget_seconds
            wait = 0.0
            if not rate_limited:
                if retries_left == 0:
                    raise failure
                retries_left -= 1
                wait = (min(backoff, self.backoff_max_seconds)
                        + random.uniform(0, self.backoff_initial_seconds))
                backoff *= 2
            if max(now + wait, throttle.open_at) > deadline:
                raise TransientJudgeError(
                    f"{failure}; gave up: waiting again would exceed the retry budget of "
                    f"{self.retry_budget_seconds:g} s (CONDAMBIG_JUDGE_RETRY_BUDGET / "
                    "--metadata judge_retry_budget)", retry_after=failure.retry_after,
                ) from failure
            self._stats.retries += 1
            logger.debug("judge request failed (%s); retrying", failure)
            if wait:
                await asyncio.sleep(wait)
            retry = True

    async def _send_watched(self, prompt: str, probe: bool) -> JudgeCompletion:
        """One request to the backend (counted as sent unless it refused to send it),
        telling the breaker whether the endpoint accepted the connection."""
        connected: bool | None = None
        error_text = ""
        sent_at = time.monotonic()
        self._stats.requests_sent += 1
        try:
            completion = await asyncio.wait_for(self.backend.complete(prompt),
                                                self.request_timeout_seconds)
            connected = True
            return completion
        except asyncio.TimeoutError as error:
            connected = True  # a slow endpoint is there
            raise TransientJudgeError(
                f"judge request timed out after {self.request_timeout_seconds} s"
            ) from error
        except ConnectionFailedError as error:
            connected, error_text = False, str(error)
            raise
        except RequestNotSentError:
            self._stats.requests_sent -= 1  # the backend refused it before sending
            raise
        except JudgeError:  # an answer, or a timeout: the endpoint is there
            connected = True
            raise
        finally:
            self.breaker.report(probe, connected, error_text, sent_at)

    def _failed(self, error: str, quiet: bool = False) -> JudgeResult:
        """A failed judgement, counted and logged (``quiet``: at debug level, for failures
        of the endpoint as a whole, which the front end reports once at the end)."""
        # the reason is written to per-sample files, results and logs: no key in it
        key = getattr(getattr(self.backend, "config", None), "api_key", None)
        error = redact_secrets(error, [key if isinstance(key, str) else None])
        self._stats.failures += 1
        self._last_error = error
        if quiet or self._stats.failures > _FAILURES_LOGGED:
            logger.debug("judge %s: judgement failed: %s", self.backend.model_name, error)
        else:
            logger.warning("judge %s: judgement failed: %s%s", self.backend.model_name, error,
                           " (further failures are logged at debug level)"
                           if self._stats.failures == _FAILURES_LOGGED else "")
        return JudgeResult.failure(error)


def _transcript_entry(prompt: str, result: JudgeResult) -> dict[str, Any]:
    return {"prompt": prompt, "model_reason": result.reason, "raw_score": result.raw_score,
            "score": result.score, "weighted": result.weighted, "cached": result.cached,
            "failed": result.failed, "error": result.error}

