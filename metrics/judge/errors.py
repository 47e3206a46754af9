"""Judge errors, split by what the engine should do with them."""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[redacted]"
_MIN_SECRET_CHARACTERS = 8  # shorter "keys" (test stubs) would blank ordinary words
# a bearer token, or a provider key spelled the usual way (sk-..., sk-proj-..., masked ****)
_BEARER = re.compile(r"(?i)\b(bearer)\s+[^\s,;\"'}]+")
_KEY_LIKE = re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_*.\-]{6,}")


class JudgeError(Exception):
    """Base class of errors raised by judge backends."""


class TransientJudgeError(JudgeError):
    """Worth retrying: timeouts, 408/429, 5xx, dropped connections, malformed bodies.

    ``retry_after``: seconds the endpoint asked to wait before the next request (its
    ``Retry-After`` header), None when it named none.
    """

    def __init__(self, message: str = "", retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class RateLimitedError(TransientJudgeError):
    """The endpoint asked to slow down: HTTP 429, or 503 with a ``Retry-After`` header.

    The whole engine then waits ``retry_after`` seconds (a backoff when None) and sends
    fewer requests at once. Such a wait is bounded by the retry budget in time, not by
    ``max_retries``, which counts the other transient errors.
    """


class ConnectionFailedError(TransientJudgeError):
    """The endpoint refused or dropped the connection (refused, reset, closed unanswered):
    retried, and counted by the engine's breaker, which stops sending to an endpoint that
    keeps doing this (:mod:`condambig_metrics.judge.breaker`). A slow reply is not one."""


class UnparseableReplyError(TransientJudgeError):
    """The judge answered but no 0-10 score could be read from its reply."""


class LogprobsRefusedError(TransientJudgeError):
    """The endpoint refused a request because it asked for log-probabilities.

    The backend has already switched log-probabilities off when it raises this; the engine
    asks again at once (no backoff, not counted as a retry), so every request that was in
    flight when the first refusal came back follows the same fallback.
    """


class PermanentJudgeError(JudgeError):
    """Retrying cannot help (bad key, unknown model, rejected request): fail at once.

    ``affects_all_requests`` marks errors of the endpoint rather than of one prompt (401,
    403, 404): the engine then fails the remaining requests without sending them.
    """

    def __init__(self, message: str, affects_all_requests: bool = False):
        super().__init__(message)
        self.affects_all_requests = affects_all_requests


class RequestNotSentError(PermanentJudgeError):
    """The backend refused a request without sending it (its endpoint already failed the
    check before generation): the engine does not count it as a request sent."""

    def __init__(self, message: str):
        super().__init__(message, affects_all_requests=True)


class JudgeCacheError(ValueError):
    """The judge cache file cannot be used (a folder, read-only, a full disk, another
    program's database): the message names the path and what to set instead. A
    ``ValueError`` so that the front ends print it as one line."""


def redact_secrets(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` (an error message an endpoint wrote) with the configured keys, bearer
    tokens and anything spelled like a provider key replaced by ``[redacted]``: such
    messages are copied into per-sample files, results and logs."""
    for secret in secrets:
        if secret and len(secret.strip()) >= _MIN_SECRET_CHARACTERS:
            text = text.replace(secret.strip(), REDACTED)
    text = _BEARER.sub(lambda match: f"{match.group(1)} {REDACTED}", text)
    return _KEY_LIKE.sub(REDACTED, text)
