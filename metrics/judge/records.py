"""The judge's typed vocabulary: what is asked, what comes back, how it is configured.

Kept free of any client library so both frameworks (and pickling under lm-eval's data
parallelism) can pass these values around.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol, get_args, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

# How a reply's score is weighted by the judge's token probabilities (``scoring.judge_reply``):
# "condambig": expectation over the 0..10 alternatives at the token carrying the parsed score;
# "deepeval": DeepEval's G-Eval rule (first token equal to the score's text, alternatives
# under 1 % dropped, decimal tokens only), the judge of Li et al., CondAmbigQA.
JudgeWeighting = Literal["condambig", "deepeval"]
JUDGE_WEIGHTINGS: tuple[str, ...] = get_args(JudgeWeighting)
WEIGHTING_CONDAMBIG, WEIGHTING_DEEPEVAL = JUDGE_WEIGHTINGS
DEFAULT_JUDGE_WEIGHTING = WEIGHTING_CONDAMBIG
# Judge requests in flight at once, for every front end: a fast local judge is limited by
# the judge, not the client, well past this (``benchmarks/judge_throughput.py``), and a
# rate-limited endpoint is slowed down by the engine (``judge.throttle``).
DEFAULT_JUDGE_CONCURRENCY = 32
# Retries of one judgement after a transient error (timeouts, 5xx, dropped connections),
# for every front end; the check before generation tries as often (1 + this).
DEFAULT_JUDGE_MAX_RETRIES = 4
SCORE_MIN, SCORE_MAX = 0, 10  # the scale the judge is asked for
# The endpoint the OpenAI SDK uses when no base URL is given.
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TOP_LOGPROBS = 20
DEFAULT_MAX_TOKENS = 256
ENDPOINT_STATUS = frozenset({401, 403, 404})
"""HTTP statuses that refuse every request (key, permission, model or URL), not one."""


def normalized_base_url(base_url: str | None) -> str:
    """The endpoint a base URL names, written one way (no base URL: api.openai.com)."""
    if base_url is None or not base_url.strip():
        return DEFAULT_BASE_URL
    parts = urlsplit(base_url.strip())
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"),
                       parts.query, ""))


def judge_settings(base_url: str | None, top_logprobs: int = DEFAULT_TOP_LOGPROBS,
                   max_tokens: int = DEFAULT_MAX_TOKENS) -> dict[str, str]:
    """A backend's settings that change a judgement and differ from their defaults, for the
    cache key: the endpoint (two servers may serve one model name differently),
    ``top_logprobs`` (0: no log-probabilities, so no weighting) and ``max_tokens``.
    Temperature is always 0."""
    settings: dict[str, str] = {}
    endpoint = normalized_base_url(base_url)
    if endpoint != DEFAULT_BASE_URL:
        settings["endpoint"] = endpoint
    if top_logprobs != DEFAULT_TOP_LOGPROBS:
        settings["top_logprobs"] = str(top_logprobs)
    if max_tokens != DEFAULT_MAX_TOKENS:
        settings["max_tokens"] = str(max_tokens)
    return settings


@dataclass(frozen=True)
class JudgeCriterion:
    """One G-Eval metric definition: what to judge and the steps the judge follows."""

    name: str
    criteria: str
    evaluation_steps: tuple[str, ...]


@dataclass(frozen=True)
class JudgeRequest:
    """One judgement: the model's input, its output and the reference output.

    ``weighting`` names the rule that turns the reply into a score (one of
    ``JUDGE_WEIGHTINGS``); it is part of the cache key.
    """

    criterion: JudgeCriterion
    input: str
    actual_output: str
    expected_output: str
    weighting: str = DEFAULT_JUDGE_WEIGHTING

    def __post_init__(self) -> None:
        if self.weighting not in JUDGE_WEIGHTINGS:
            raise ValueError(f"judge weighting must be one of {', '.join(JUDGE_WEIGHTINGS)}; "
                             f"got {self.weighting!r}")


@dataclass(frozen=True)
class JudgeResult:
    """A judgement: what a reply yields (the 0..10 ``raw_score``, maybe weighted, and the
    stated reason; what the cache stores), or a failure. ``score`` (``raw_score`` / 10) is
    None when it failed: callers exclude it, never count it as 0."""

    score: float | None
    raw_score: float | None
    weighted: bool
    failed: bool
    error: str | None
    cached: bool
    reason: str

    @classmethod
    def failure(cls, error: str) -> JudgeResult:
        return cls(score=None, raw_score=None, weighted=False, failed=True, error=error,
                   cached=False, reason="")

    @classmethod
    def judged(cls, raw_score: float, weighted: bool, reason: str,
               cached: bool = False) -> JudgeResult:
        return cls(score=raw_score / SCORE_MAX, raw_score=raw_score, weighted=weighted,
                   failed=False, error=None, cached=cached, reason=reason)


@dataclass(frozen=True)
class JudgeConfig:
    """How to reach an OpenAI-compatible judge, and where to cache its judgements.

    With the cache enabled, the sqlite file is ``cache_path`` when set, else
    ``default_cache_path`` (the caller's default location); one of them must be set.
    ``retry_budget_seconds`` bounds how long one judgement may keep being retried (rate
    limits included) after its first failed attempt; ``max_retries`` counts the transient
    errors other than rate limits.
    """

    model: str
    base_url: str | None = None
    api_key: str | None = None
    concurrency: int = DEFAULT_JUDGE_CONCURRENCY
    max_retries: int = DEFAULT_JUDGE_MAX_RETRIES
    timeout_seconds: float = 60.0
    cache_path: str | None = None  # sqlite file chosen by the user
    top_logprobs: int = DEFAULT_TOP_LOGPROBS
    cache_enabled: bool = True
    max_tokens: int = DEFAULT_MAX_TOKENS
    default_cache_path: str | None = None  # sqlite file used when cache_path is None
    # judgements allowed to fail finally before the judged metrics are withheld (null with
    # the reason): a mean over the judgements that happened to succeed is biased
    max_failed: int = 0
    retry_budget_seconds: float = 600.0

    @property
    def cache_file(self) -> str | None:
        """The sqlite file of its judgements (None: the cache is off)."""
        return (self.cache_path or self.default_cache_path) if self.cache_enabled else None

    def __post_init__(self) -> None:
        if not self.model.strip():
            raise ValueError("JudgeConfig.model must name the judge model (e.g. gpt-4o-mini)")
        if self.concurrency < 1:
            raise ValueError(f"judge concurrency must be >= 1, got {self.concurrency}")
        if self.max_retries < 0:
            raise ValueError(f"judge max_retries must be >= 0, got {self.max_retries}")
        for name, value, where in (
            ("timeout", self.timeout_seconds, "CONDAMBIG_JUDGE_TIMEOUT / --metadata judge_timeout"),
            ("retry budget", self.retry_budget_seconds,
             "CONDAMBIG_JUDGE_RETRY_BUDGET / --metadata judge_retry_budget"),
        ):
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"judge {name} ({where}) must be a finite number of seconds "
                                 f"> 0, got {value!r}")
        if self.base_url is not None and self.base_url.strip():
            parts = urlsplit(self.base_url.strip())
            if parts.scheme.lower() not in {"http", "https"} or not parts.hostname:
                raise ValueError(
                    "judge base URL (CONDAMBIG_JUDGE_BASE_URL / --metadata judge_base_url) must "
                    f"be an http(s) URL such as http://localhost:8000/v1, got {self.base_url!r}")
        if self.max_failed < 0:
            raise ValueError(f"judge max_failed must be >= 0, got {self.max_failed}")
        if not 0 <= self.top_logprobs <= 20:
            raise ValueError(f"judge top_logprobs must be in 0..20, got {self.top_logprobs}")


@dataclass(frozen=True)
class TokenLogprobs:
    """One generated token and the log-probabilities of its top alternatives.

    ``top`` maps each decoded alternative to its log-probability (alternatives decoding to
    the same text merged, the generated token added when missing); ``alternatives`` keeps
    the backend's list as returned, in order (empty when only ``top`` is known).
    """

    token: str
    top: Mapping[str, float]
    alternatives: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class JudgeCompletion:
    """A judge reply: the text and, when the backend returned them, per-token top logprobs.

    ``cache_settings``: the backend's settings this reply was obtained with (see
    :class:`JudgeBackend`), when they may differ from the ones it had when the request was
    queued (log-probabilities switched off after a refusal); None: those.
    """

    text: str
    token_logprobs: list[TokenLogprobs] | None = None
    cache_settings: Mapping[str, str] | None = None


@dataclass
class JudgeStats:
    """Counters over an engine's lifetime.

    ``requests_sent`` counts every request handed to the backend, one per HTTP request for
    the OpenAI backend: first attempts, ``retries`` and ``logprob_fallbacks`` (requests
    asked again without log-probabilities after the endpoint refused them) included.
    """

    requests_sent: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    logprob_fallbacks: int = 0


@runtime_checkable
class JudgeBackend(Protocol):
    """Anything that can send one prompt to a judge model and return its completion.

    Raise :class:`~condambig_metrics.judge.errors.TransientJudgeError` for what a retry may
    fix and :class:`~condambig_metrics.judge.errors.PermanentJudgeError` for what it cannot.
    A backend may also define ``async def aclose()`` to release connections, and
    ``cache_settings``: its settings that change a judgement and differ from their defaults
    (the endpoint, log-probabilities, ...) as they are now, which the cache key then
    includes; a judgement is stored under the settings it was obtained with. One
    ``complete`` call should send one request, so the engine counts what the endpoint sees.
    """

    model_name: str

    async def complete(self, prompt: str) -> JudgeCompletion: ...
