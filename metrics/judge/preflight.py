"""One minimal judge request before any generation, so a wrong URL, key or model name ends
a run at once instead of after hours of generation.

Every front end calls :func:`check_judge` (blocking) or :func:`check_judge_async` on the
backend it will judge with. What counts as a working judge: any HTTP answer that shows the
endpoint is there, accepts the key and knows the model — a reply (readable or not), a
refusal of log-probabilities, or a rate limit (429: the endpoint is there and busy; the
engine will wait for it). What ends the run: 401 / 403 / 404 and any other permanent
rejection, and an endpoint that cannot be reached or only fails (connection refused, DNS,
timeouts, 5xx) after as many tries as the engine would make for one judgement (1 +
its ``max_retries``), so a judge the engine would reach passes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from condambig_metrics.judge.errors import (
    LogprobsRefusedError,
    PermanentJudgeError,
    RateLimitedError,
    RequestNotSentError,
    TransientJudgeError,
    UnparseableReplyError,
)
from condambig_metrics.judge.records import DEFAULT_JUDGE_MAX_RETRIES

PREFLIGHT_PROMPT = ('This is a connection check. Reply with exactly this JSON and nothing '
                    'else: {"score": 0, "reason": "ok"}')
# The check's reply is never scored (any answer shows the judge works), so it asks for a few
# tokens rather than a judgement's budget: a slow local judge then answers it in seconds.
PREFLIGHT_MAX_TOKENS = 16
_PAUSE_SECONDS = 0.5


@dataclass(frozen=True)
class JudgeSettings:
    """How a front end spells the judge's three settings, so that a failed check names the
    one to fix, once: the endpoint's own advice (``What to do: ...``) is replaced by it."""

    base_url: str
    model: str
    key: str

    def advice(self, status: int | None, unreachable: bool) -> str | None:
        """What to check after a failed check (None: the error's own advice stands, e.g. a
        quota or a redirect)."""
        if unreachable:  # refused, reset, timed out or 5xx: the address, or a server down
            return f"{self.base_url}, and that the server there is running"
        if status is not None and status not in (400, 401, 403, 404):
            return None
        return {401: f"the key in {self.key}",
                403: f"the key in {self.key}: it may not use the model {self.model}",
                404: f"{self.model} and {self.base_url}"}.get(
                    status, f"{self.base_url}, {self.model} and the key in {self.key}")


ADVICE_MARK = ". What to do: "  # how a backend's error says what to do (openai_backend)


class JudgeUnavailableError(ValueError):
    """The judge cannot be used: the message names the model, the endpoint and what to set.

    A ``ValueError`` so every front end's one-line error handling reports it as it reports
    a bad option. ``requests``: how many check requests were sent."""

    def __init__(self, message: str, requests: int = 1):
        super().__init__(message)
        self.requests = requests


def check_attempts(backend: Any) -> int:
    """Tries the check makes: one judgement's, 1 + the ``max_retries`` of the backend's
    configuration (the engine is built from the same one), else of the engine's default."""
    retries = getattr(getattr(backend, "config", None), "max_retries", None)
    return 1 + (retries if isinstance(retries, int) and retries >= 0
                else DEFAULT_JUDGE_MAX_RETRIES)


async def check_judge_async(backend: Any, where: str, *, attempts: int | None = None,
                            timeout_seconds: float = 30.0,
                            what_to_set: str | JudgeSettings = "",
                            moment: str = "before any generation",
                            subject: str | None = None) -> int:
    """Send one minimal request through ``backend`` (its ``check(prompt)`` when it has one,
    capped at :data:`PREFLIGHT_MAX_TOKENS`, else ``complete(prompt)``); raise
    :class:`JudgeUnavailableError` when the judge cannot be used. Returns the number of
    requests sent (for request counts that must equal what the endpoint received).

    ``where`` describes the judge for the message (model and endpoint); ``what_to_set``
    names the settings the user changes to fix it (e.g. the variables or flags; a
    :class:`JudgeSettings` names only those that fit the failure); ``moment``
    says when the check ran, for the message. ``attempts`` None: :func:`check_attempts`.
    ``subject`` names the judge in the message (default ``the judge <where>``).
    """
    subject = subject or f"the judge {where}"
    if attempts is None:
        attempts = check_attempts(backend)
    last: Exception | None = None
    send = getattr(backend, "check", None) or backend.complete
    for attempt in range(max(1, attempts)):
        try:
            await asyncio.wait_for(send(PREFLIGHT_PROMPT), timeout_seconds)
            return attempt + 1
        except (LogprobsRefusedError, UnparseableReplyError):
            return attempt + 1  # it answered: the backend has switched log-probabilities
            # off, or the reply had no score, which the engine handles per judgement
        except PermanentJudgeError as error:
            raise JudgeUnavailableError(_message(subject, error, what_to_set, moment),
                                        attempt + 1) from None
        except (TransientJudgeError, asyncio.TimeoutError, OSError) as error:
            if isinstance(error, RateLimitedError):  # there and busy: the engine waits
                return attempt + 1
            last = error
        if attempt + 1 < attempts:
            await asyncio.sleep(_PAUSE_SECONDS)
    raise JudgeUnavailableError(_message(subject, last, what_to_set, moment, timeout_seconds,
                                         unreachable=True), max(1, attempts))


def check_judge(backend: Any, where: str, **keywords: Any) -> None:
    """:func:`check_judge_async` from synchronous code (its own event loop; the backend's
    client bound to that loop is closed afterwards)."""
    from concurrent.futures import ThreadPoolExecutor

    async def run() -> None:
        try:
            await check_judge_async(backend, where, **keywords)
        finally:
            close = getattr(backend, "aclose", None)
            if close is not None:
                await close()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(run())
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, run()).result()


def _message(subject: str, error: BaseException | None, what_to_set: str | JudgeSettings,
             moment: str, timeout_seconds: float = 0.0, unreachable: bool = False) -> str:
    if isinstance(error, asyncio.TimeoutError):
        # connected (or still connecting) but silent: too slow or stuck, not necessarily absent
        detail = (f"no answer to a {PREFLIGHT_MAX_TOKENS}-token request within "
                  f"{timeout_seconds:g} s (too slow or stuck)")
    else:
        detail = str(error).rstrip(".") if error is not None else "no answer"
    state = "cannot be reached" if unreachable else "refused the check request"
    if isinstance(error, asyncio.TimeoutError):
        state = "did not answer the check request"
    if isinstance(what_to_set, JudgeSettings):
        what_to_set = what_to_set.advice(getattr(error, "status", None), unreachable) or ""
    if what_to_set:  # said once: the front end's settings, not also the endpoint's advice
        detail = detail.split(ADVICE_MARK)[0].rstrip(".")
    hint = f" Check {what_to_set}." if what_to_set else ""
    when = f" {moment}" if moment else ""
    return f"{subject} {state}{when}: {detail}.{hint}"


class CheckedBackend:
    """A backend whose endpoint is checked once, just before the first request that reaches
    it (a run whose judgements are all cached sends nothing).

    When the check fails, that request and every later one fail with a
    :class:`RequestNotSentError` (a permanent error that affects all requests), so the
    engine sends nothing more, counts none of them as sent, and reports the endpoint
    failure with the check's one-line message.
    """

    def __init__(self, backend: Any, where: str, what_to_set: str | JudgeSettings = ""):
        self.backend = backend
        self.where = where
        self.what_to_set = what_to_set
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._checked = False
        self._failure: str | None = None
        self.check_requests = 0  # requests the check sent (the engine counts the others)

    def __getattr__(self, name: str) -> Any:  # model_name, cache_settings, aclose, ...
        if name == "backend":
            raise AttributeError(name)
        return getattr(self.backend, name)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_lock": None}

    async def complete(self, prompt: str) -> Any:
        await self._check_once()
        return await self.backend.complete(prompt)

    async def _check_once(self) -> None:
        if self._checked:
            if self._failure is not None:
                raise RequestNotSentError(self._failure)
            return
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        async with self._lock[1]:
            if not self._checked:
                try:
                    self.check_requests += await check_judge_async(
                        self.backend, self.where, what_to_set=self.what_to_set,
                        moment="at the first judgement")
                except JudgeUnavailableError as error:
                    self.check_requests += error.requests
                    self._failure = str(error)
                self._checked = True
        if self._failure is not None:
            raise RequestNotSentError(self._failure)
