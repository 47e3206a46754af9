"""OpenAI-compatible chat completions as a judge backend (OpenAI, vLLM ``serve``, ...).

The SDK's own retries are switched off (``max_retries=0``) so every retry goes through the
engine and is counted once: one ``complete`` call is one HTTP request. Errors are sorted
into transient (retried) and permanent.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from condambig_metrics.judge.cache import JudgeCache
from condambig_metrics.judge.engine import JudgeEngine
from condambig_metrics.judge.errors import (
    LogprobsRefusedError,
    PermanentJudgeError,
    RateLimitedError,
    TransientJudgeError,
)
from condambig_metrics.judge.records import JudgeCompletion, JudgeConfig
from condambig_metrics.judge.scoring import token_logprobs

# Key sent when the endpoint needs none (a local vLLM server); the SDK insists on one.
_PLACEHOLDER_API_KEY = "EMPTY"
_RETRYABLE_STATUS = {408, 409, 425, 429}
_ENDPOINT_STATUS = {401, 403, 404}
# The endpoint the SDK uses when no base URL is given.
DEFAULT_BASE_URL = "https://api.openai.com/v1"
_DEFAULTS = JudgeConfig(model="defaults")


class OpenAIJudgeBackend:
    """One chat-completions call per prompt: temperature 0, top logprobs requested."""

    def __init__(self, config: JudgeConfig):
        try:
            import openai  # noqa: F401
        except ImportError as error:  # pragma: no cover - depends on the environment
            raise ImportError(
                "the LLM judge needs the openai package: pip install 'condambig[judge]'"
            ) from error
        if config.base_url is None and not config.api_key:
            raise ValueError(
                f"judge {config.model!r}: no API key for api.openai.com. Set "
                "CONDAMBIG_JUDGE_API_KEY or OPENAI_API_KEY, or "
                "point CONDAMBIG_JUDGE_BASE_URL at a server that needs none (e.g. vllm serve)."
            )
        self.config = config
        self.model_name = config.model
        self._client: Any = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._logprobs_supported = config.top_logprobs > 0

    @property
    def cache_settings(self) -> dict[str, str]:
        """The settings that change a judgement and differ from their defaults: the endpoint
        (two servers may serve one model name differently), ``top_logprobs`` (0: no
        log-probabilities, so no weighting; also after the endpoint refused them) and
        ``max_tokens``. Temperature is always 0."""
        return self._settings(self._logprobs_supported)

    def _settings(self, with_logprobs: bool) -> dict[str, str]:
        settings: dict[str, str] = {}
        endpoint = normalized_base_url(self.config.base_url)
        if endpoint != DEFAULT_BASE_URL:
            settings["endpoint"] = endpoint
        top_logprobs = self.config.top_logprobs if with_logprobs else 0
        if top_logprobs != _DEFAULTS.top_logprobs:
            settings["top_logprobs"] = str(top_logprobs)
        if self.config.max_tokens != _DEFAULTS.max_tokens:
            settings["max_tokens"] = str(self.config.max_tokens)
        return settings

    async def complete(self, prompt: str) -> JudgeCompletion:
        """One chat-completions request. When the endpoint refuses log-probabilities, they
        are switched off for this backend and :class:`LogprobsRefusedError` asks the engine
        to send the prompt again (so does every request that was in flight with them)."""
        import openai

        arguments: dict[str, Any] = {
            "model": self.config.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0,
            "max_tokens": self.config.max_tokens,
        }
        with_logprobs = self._logprobs_supported
        if with_logprobs:
            arguments.update(logprobs=True, top_logprobs=self.config.top_logprobs)
        try:
            response = await self._client_for_this_loop().chat.completions.create(**arguments)
        except openai.BadRequestError as error:
            if with_logprobs and "logprob" in str(error).lower():
                # Some models/servers refuse logprobs: judge with the parsed integer instead.
                self._logprobs_supported = False
                raise LogprobsRefusedError(
                    f"judge endpoint refused log-probabilities: {error.message}") from error
            raise _classify(error) from error
        except openai.OpenAIError as error:
            raise _classify(error) from error
        except (json.JSONDecodeError, ValueError, TypeError) as error:
            raise TransientJudgeError(f"malformed judge response body: {error}") from error
        return _completion(response, self._settings(with_logprobs))

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client, self._client_loop = self._client, None, None
            await client.close()

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"])

    def _client_for_this_loop(self) -> Any:
        """An AsyncOpenAI client bound to the running loop (a new loop needs a new client)."""
        import openai

        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = openai.AsyncOpenAI(
                api_key=self.config.api_key or _PLACEHOLDER_API_KEY,
                base_url=self.config.base_url,
                timeout=self.config.timeout_seconds,
                max_retries=0,
            )
            self._client_loop = loop
        return self._client


def normalized_base_url(base_url: str | None) -> str:
    """The endpoint a base URL names, written one way (no base URL: api.openai.com)."""
    if base_url is None or not base_url.strip():
        return DEFAULT_BASE_URL
    parts = urlsplit(base_url.strip())
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"),
                       parts.query, ""))


def openai_judge_engine(
    config: JudgeConfig, progress_factory: Callable[[str, int], Any] | None = None,
) -> JudgeEngine:
    """OpenAI-compatible backend plus the sqlite cache named by ``config`` (when enabled);
    ``progress_factory`` as in :class:`JudgeEngine`."""
    cache = None
    if config.cache_enabled:
        cache_path = config.cache_path or config.default_cache_path
        if not cache_path:
            raise ValueError(
                f"judge {config.model!r}: the cache is enabled but neither cache_path nor "
                "default_cache_path is set (or set cache_enabled=False)"
            )
        cache = JudgeCache(cache_path)
    return JudgeEngine(
        OpenAIJudgeBackend(config), cache, concurrency=config.concurrency,
        max_retries=config.max_retries,
        request_timeout_seconds=config.timeout_seconds * 1.5,  # safety net over the SDK's own
        retry_budget_seconds=config.retry_budget_seconds,
        progress_factory=progress_factory,
    )


def _classify(error: Exception) -> Exception:
    """Map an SDK error to a transient or permanent judge error with an actionable message."""
    import openai

    if isinstance(error, openai.APITimeoutError):
        return TransientJudgeError(f"judge request timed out: {error}")
    if isinstance(error, openai.APIConnectionError):
        return TransientJudgeError(f"cannot reach the judge endpoint: {error}")
    if isinstance(error, openai.APIResponseValidationError):
        return TransientJudgeError(f"malformed judge response body: {error}")
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        retry_after = retry_after_seconds(getattr(error.response, "headers", None) or {})
        waited = "" if retry_after is None else f" (Retry-After {retry_after:g} s)"
        if status == 429 and error.code == "insufficient_quota":
            return PermanentJudgeError(
                f"judge endpoint returned HTTP 429: {error.message}. What to do: the account "
                "has no quota left; add credit or use another key", affects_all_requests=True)
        if status == 429 or (status == 503 and retry_after is not None):
            return RateLimitedError(
                f"judge endpoint returned HTTP {status}{waited}: {error.message}",
                retry_after=retry_after)
        if status in _RETRYABLE_STATUS or status >= 500:
            return TransientJudgeError(f"judge endpoint returned HTTP {status}{waited}: "
                                       f"{error.message}", retry_after=retry_after)
        hint = {
            401: "check the key in CONDAMBIG_JUDGE_API_KEY or OPENAI_API_KEY",
            403: "the key is not allowed to use this model",
            404: "check CONDAMBIG_JUDGE_MODEL and CONDAMBIG_JUDGE_BASE_URL, which should end in /v1",
        }.get(status, "the endpoint rejected the request")
        return PermanentJudgeError(
            f"judge endpoint returned HTTP {status}: {error.message}. What to do: {hint}",
            affects_all_requests=status in _ENDPOINT_STATUS,
        )
    return TransientJudgeError(f"judge request failed: {type(error).__name__}: {error}")


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a response asks for: ``retry-after-ms`` (milliseconds, as OpenAI sends), else
    ``Retry-After`` as delta-seconds or an HTTP date (RFC 9110, section 10.2.3); None when
    absent or unreadable. A date in the past is a wait of 0."""
    milliseconds = _finite(headers.get("retry-after-ms"))
    if milliseconds is not None and milliseconds >= 0:
        return milliseconds / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _finite(value)
    if seconds is not None:
        return seconds if seconds >= 0 else None
    try:
        moment = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:  # an HTTP date is GMT
        return None
    return max(0.0, moment.timestamp() - time.time())


def _finite(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _completion(response: Any, settings: Mapping[str, str]) -> JudgeCompletion:
    """Text and top logprobs of the first choice; a body without them is malformed."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise TransientJudgeError("malformed judge response: no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    text = getattr(message, "content", None)
    if not isinstance(text, str):
        raise TransientJudgeError("malformed judge response: the first choice has no text")
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return JudgeCompletion(text=text, token_logprobs=None, cache_settings=settings)
    tokens = [
        token_logprobs(
            entry.token, entry.logprob,
            ((alternative.token, alternative.logprob)
             for alternative in (getattr(entry, "top_logprobs", None) or [])),
        )
        for entry in content
    ]
    return JudgeCompletion(text=text, token_logprobs=tokens, cache_settings=settings)
