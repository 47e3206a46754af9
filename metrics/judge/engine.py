"""The judge engine: cache lookup, bounded concurrency, retries, failure accounting.

Backends only send one prompt; everything that makes a judged run reliable and fast lives
here once, for lm-eval, Inspect and ``condambig-score`` alike.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

from condambig_metrics.judge.cache import CachedJudgement, JudgeCache, cache_key
from condambig_metrics.judge.errors import PermanentJudgeError, TransientJudgeError
from condambig_metrics.judge.prompt import SCORE_MAX, render_prompt
from condambig_metrics.judge.records import (
    JudgeBackend,
    JudgeRequest,
    JudgeResult,
    JudgeStats,
)
from condambig_metrics.judge.scoring import judge_reply

logger = logging.getLogger(__name__)

_FAILURES_LOGGED = 3


@dataclass
class _Counters:
    requests_sent: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0


class JudgeEngine:
    """Judges many requests concurrently; order of results follows order of requests."""

    def __init__(
        self,
        backend: JudgeBackend,
        cache: JudgeCache | None,
        concurrency: int = 16,
        max_retries: int = 4,
        *,
        request_timeout_seconds: float | None = None,
        backoff_initial_seconds: float = 0.5,
        backoff_max_seconds: float = 20.0,
    ):
        if concurrency < 1:
            raise ValueError(f"judge concurrency must be >= 1, got {concurrency}")
        if max_retries < 0:
            raise ValueError(f"judge max_retries must be >= 0, got {max_retries}")
        self.backend = backend
        self.cache = cache
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.request_timeout_seconds = request_timeout_seconds
        self.backoff_initial_seconds = backoff_initial_seconds
        self.backoff_max_seconds = backoff_max_seconds
        self._counters = _Counters()
        self._endpoint_error: PermanentJudgeError | None = None
        self._semaphore: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

    @property
    def model_name(self) -> str:
        return self.backend.model_name

    @property
    def stats(self) -> JudgeStats:
        counters = self._counters
        return JudgeStats(counters.requests_sent, counters.cache_hits, counters.retries,
                          counters.failures)

    async def judge_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeResult]:
        """One result per request, in order; identical prompts are judged once.

        Concurrent calls on one event loop share the engine's ``concurrency`` bound.
        """
        prompts = [render_prompt(request) for request in requests]
        unique = list(dict.fromkeys(prompts))
        if self.cache is not None:
            self.cache.open()
        semaphore = self._semaphore_for_this_loop()
        results = await asyncio.gather(*(self._judge(prompt, semaphore) for prompt in unique))
        by_prompt = dict(zip(unique, results, strict=True))
        return [by_prompt[prompt] for prompt in prompts]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_semaphore"] = None  # bound to a loop; rebuilt on first use
        return state

    def _semaphore_for_this_loop(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._semaphore[0] is not loop:
            self._semaphore = (loop, asyncio.Semaphore(self.concurrency))
        return self._semaphore[1]

    async def judge_one(self, request: JudgeRequest) -> JudgeResult:
        return (await self.judge_many([request]))[0]

    def judge_many_sync(self, requests: Sequence[JudgeRequest]) -> list[JudgeResult]:
        """Blocking form for callers without an event loop (lm-eval's aggregation step).

        Called from a thread whose loop is running, it judges on a helper thread instead.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._judge_many_then_close(requests))
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self._judge_many_then_close(requests)).result()

    async def _judge_many_then_close(self, requests: Sequence[JudgeRequest]) -> list[JudgeResult]:
        # Clients are bound to the loop that created them; this loop ends with the call.
        try:
            return await self.judge_many(requests)
        finally:
            close = getattr(self.backend, "aclose", None)
            if close is not None:
                await close()

    async def _judge(self, prompt: str, semaphore: asyncio.Semaphore) -> JudgeResult:
        key = cache_key(self.backend.model_name, prompt)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self._counters.cache_hits += 1
                return _result(hit, cached=True)
        if self._endpoint_error is not None:
            return self._failed(str(self._endpoint_error))
        try:
            judgement = await self._ask_with_retries(prompt, semaphore)
        except PermanentJudgeError as error:
            if error.affects_all_requests:
                self._endpoint_error = error
            return self._failed(str(error) or type(error).__name__)
        except TransientJudgeError as error:
            return self._failed(str(error) or type(error).__name__)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a backend bug must not take down the whole run
            return self._failed(f"{type(error).__name__}: {error}")
        if self.cache is not None:
            try:
                self.cache.put(key, self.backend.model_name, judgement)
            except (OSError, sqlite3.Error) as error:  # keep the judgement; only resuming suffers
                logger.warning("judge cache %s: could not store a result: %s",
                               self.cache.path, error)
        return _result(judgement, cached=False)

    async def _ask_with_retries(self, prompt: str, semaphore: asyncio.Semaphore) -> CachedJudgement:
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait_exponential(multiplier=self.backoff_initial_seconds,
                                  max=self.backoff_max_seconds)
            + wait_random(0, self.backoff_initial_seconds),
            retry=retry_if_exception_type(TransientJudgeError),
            before_sleep=self._count_retry,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                async with semaphore:  # held per attempt, not while backing off
                    if self._endpoint_error is not None:
                        raise self._endpoint_error
                    return await self._ask_once(prompt)
        raise AssertionError("unreachable: tenacity re-raises the last error")

    async def _ask_once(self, prompt: str) -> CachedJudgement:
        self._counters.requests_sent += 1
        try:
            if self.request_timeout_seconds is None:
                completion = await self.backend.complete(prompt)
            else:
                completion = await asyncio.wait_for(
                    self.backend.complete(prompt), self.request_timeout_seconds
                )
        except asyncio.TimeoutError as error:
            raise TransientJudgeError(
                f"judge request timed out after {self.request_timeout_seconds} s"
            ) from error
        judgement = judge_reply(completion)  # UnparseableReplyError is retried
        return CachedJudgement(judgement.raw_score, judgement.weighted, judgement.reason)

    def _count_retry(self, state: RetryCallState) -> None:
        self._counters.retries += 1
        error = state.outcome.exception() if state.outcome is not None else None
        logger.debug("judge attempt %d failed (%s); retrying", state.attempt_number, error)

    def _failed(self, error: str) -> JudgeResult:
        self._counters.failures += 1
        if self._counters.failures <= _FAILURES_LOGGED:
            logger.warning("judge %s: judgement failed: %s%s", self.backend.model_name, error,
                           " (further failures are logged at debug level)"
                           if self._counters.failures == _FAILURES_LOGGED else "")
        else:
            logger.debug("judge %s: judgement failed: %s", self.backend.model_name, error)
        return JudgeResult.failure(error)


def _result(judgement: CachedJudgement, cached: bool) -> JudgeResult:
    return JudgeResult(
        score=judgement.raw_score / SCORE_MAX, raw_score=judgement.raw_score,
        weighted=judgement.weighted, failed=False, error=None, cached=cached,
        reason=judgement.reason,
    )


def summarize(results: Sequence[JudgeResult]) -> dict[str, int]:
    """How many judgements succeeded and how many failed (failures are excluded from means)."""
    failed = sum(1 for result in results if result.failed)
    return {"judged": len(results) - failed, "judge_failed": failed}
