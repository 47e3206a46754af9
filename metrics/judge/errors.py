"""Judge errors, split by what the engine should do with them."""

from __future__ import annotations


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


class JudgeCacheError(ValueError):
    """The judge cache file cannot be used (a folder, read-only, a full disk, another
    program's database): the message names the path and what to set instead. A
    ``ValueError`` so that the front ends print it as one line."""
