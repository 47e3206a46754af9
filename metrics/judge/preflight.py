"""The judge check: one minimal judge request before any generation, so a wrong URL, key or
model name ends a run at once instead of after hours of generation.

Every front end calls :func:`check_judge` (or, for a check at the first judgement,
:class:`CheckedBackend`) with its way to reach the judge: a backend whose ``check(prompt)``
sends one short request and whose ``names`` (:class:`JudgeSettings`) spell the settings the
way the front end's users type them. What counts as a working judge: any HTTP answer that
shows the endpoint is there, accepts the key and knows the model — a reply (readable or
not), a refusal of log-probabilities, or a rate limit (429: the endpoint is there and busy;
the engine will wait for it). What ends the run: 401 / 403 / 404 and any other permanent
rejection, and an endpoint that cannot be reached or only fails (connection refused, DNS,
timeouts, 5xx) after as many tries as the engine would make for one judgement (1 + its
``max_retries``), so a judge the engine would reach passes.
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
    """How a front end spells the judge's three settings, so that an error names the one to
    fix: the one advice table of every judge error (:meth:`advice`)."""

    base_url: str
    model: str
    key: str

    def advice(self, status: int | None, reachable: bool = True) -> str:
        """What to do after the endpoint answered HTTP ``status``, or after it could not be
        reached (``reachable`` False: refused, reset, timed out or 5xx)."""
        if not reachable:
            return f"Check {self.base_url}, and that the server there is running"
        if status == 429:  # only a 429 that says the quota is spent is permanent
            return "The account has no quota left; add credit or use another key"
        if status is not None and 300 <= status < 400:
            return (f"Set {self.base_url} to the address it names (redirects are not "
                    "followed, so the API key only goes to the configured base URL)")
        return {401: f"Check the key in {self.key}",
                403: f"Check the key in {self.key}: it may not use the model {self.model}",
                404: f"Check {self.model} and {self.base_url}"}.get(
                    status, "The endpoint rejected the request: check "
                    f"{self.base_url}, {self.model} and the key in {self.key}")


# the judge settings as the CONDAMBIG_JUDGE_* variables name them (any front end's default)
ENVIRONMENT_SETTINGS = JudgeSettings(
    base_url="CONDAMBIG_JUDGE_BASE_URL (it ends in /v1)", model="CONDAMBIG_JUDGE_MODEL",
    key="CONDAMBIG_JUDGE_API_KEY or OPENAI_API_KEY")


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


_ANSWERED: set[str] = set()  # judges (their ``where``) that answered a check in this process
_FORGOTTEN: set[str] = set()  # judges that failed mid-run after answering
_RETURNS = [0]  # how many times a forgotten judge answered a check again


def check_judge(backend: Any, where: str, *, once: bool = False, **keywords: Any) -> None:
    """The judge check, from synchronous code before any generation: :func:`check_async`
    on its own event loop (the backend's client bound to that loop is closed afterwards).

    ``once``: a judge that answered is not asked again in this process unless it failed
    mid-run since (:func:`forget_judge`); one that failed is (its key or endpoint may have
    been fixed since, e.g. between ``eval_set`` retries)."""
    from concurrent.futures import ThreadPoolExecutor

    if once and where in _ANSWERED:
        return

    async def run() -> None:
        try:
            await check_async(backend, where, **keywords)
        finally:
            close = getattr(backend, "aclose", None)
            if close is not None:
                await close()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(run())
    else:
        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(asyncio.run, run()).result()
    if once:
        _ANSWERED.add(where)
        if where in _FORGOTTEN:
            _FORGOTTEN.discard(where)
            _RETURNS[0] += 1


def forget_judge(where: str) -> None:
    """The judge ``where`` refused every request or went away mid-run: check it again before
    it judges again in this process."""
    if where in _ANSWERED:
        _ANSWERED.discard(where)
        _FORGOTTEN.add(where)


def judge_returns() -> int:
    """How many times a judge that had failed mid-run answered a check again (a scorer whose
    engine gave up on its judge then makes a new one)."""
    return _RETURNS[0]


async def check_async(backend: Any, where: str, *, attempts: int | None = None,
                      timeout_seconds: float = 30.0, moment: str = "before any generation",
                      subject: str | None = None) -> int:
    """Send one minimal request through ``backend.check``; raise
    :class:`JudgeUnavailableError` when the judge cannot be used. Returns the number of
    requests sent (for request counts that must equal what the endpoint received).

    ``where`` describes the judge for the message (model and endpoint); ``subject`` names it
    (default ``the judge <where>``); ``moment`` says when the check ran. A permanent error's
    message already says what to set (the backend's ``names``); an unreachable judge's gets
    the advice here. ``attempts`` None: :func:`check_attempts`.
    """
    subject = subject or f"the judge {where}"
    when = f" {moment}" if moment else ""
    attempts = check_attempts(backend) if attempts is None else max(1, attempts)
    last: BaseException | None = None
    for attempt in range(attempts):
        try:
            await asyncio.wait_for(backend.check(PREFLIGHT_PROMPT), timeout_seconds)
            return attempt + 1
        except (LogprobsRefusedError, UnparseableReplyError, RateLimitedError):
            # it answered: the backend has switched log-probabilities off, the reply had no
            # score (the engine handles that per judgement), or it is there and busy
            return attempt + 1
        except PermanentJudgeError as error:
            raise JudgeUnavailableError(
                f"{subject} refused the check request{when}: {str(error).rstrip('.')}.",
                attempt + 1) from None
        except (TransientJudgeError, asyncio.TimeoutError, OSError) as error:
            last = error
        if attempt + 1 < attempts:
            await asyncio.sleep(_PAUSE_SECONDS)
    if isinstance(last, asyncio.TimeoutError):
        # connected (or still connecting) but silent: too slow or stuck, not absent
        state = "did not answer the check request"
        detail = (f"no answer to a {PREFLIGHT_MAX_TOKENS}-token request within "
                  f"{timeout_seconds:g} s (too slow or stuck)")
    else:
        state, detail = "cannot be reached", str(last).rstrip(".")
    advice = getattr(backend, "names", ENVIRONMENT_SETTINGS).advice(None, reachable=False)
    raise JudgeUnavailableError(f"{subject} {state}{when}: {detail}. {advice}.", attempts)


class CheckedBackend:
    """A backend whose endpoint is checked once, just before the first request that reaches
    it (a run whose judgements are all cached sends nothing).

    When the check fails, that request and every later one fail with a
    :class:`RequestNotSentError` (a permanent error that affects all requests), so the
    engine sends nothing more, counts none of them as sent, and reports the endpoint
    failure with the check's one-line message.
    """

    def __init__(self, backend: Any, where: str):
        self.backend = backend
        self.where = where
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
        if not self._checked:
            loop = asyncio.get_running_loop()
            if self._lock is None or self._lock[0] is not loop:
                self._lock = (loop, asyncio.Lock())
            async with self._lock[1]:
                if not self._checked:
                    try:
                        self.check_requests += await check_async(
                            self.backend, self.where, moment="at the first judgement")
                    except JudgeUnavailableError as error:
                        self.check_requests += error.requests
                        self._failure = str(error)
                    self._checked = True
        if self._failure is not None:
            raise RequestNotSentError(self._failure)
