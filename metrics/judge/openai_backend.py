"""OpenAI-compatible chat completions as a judge backend (OpenAI, vLLM ``serve``, ...).

The engine makes one kind of call, ``POST {base_url}/chat/completions``, so it is sent with
one pooled aiohttp session per event loop rather than through the OpenAI SDK: the SDK's
request building and httpx's pool cost 2-3 ms of CPU per call, which caps a fast local
judge at a few hundred calls per second (``benchmarks/judge_throughput.py``). The wire
format is OpenAI's chat-completions API
(https://platform.openai.com/docs/api-reference/chat/create); errors are read as the
SDK reads them (``{"error": {"message", "code"}}``). Nothing is retried here, redirects
included: every retry goes through the engine and is counted once, so one ``complete``
call is one HTTP request, and the API key only ever goes to the configured base URL.
Errors are sorted into transient (retried), rate limits and permanent.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import time
import urllib.request
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

from condambig_metrics.judge.cache import JudgeCache
from condambig_metrics.judge.engine import JudgeEngine
from condambig_metrics.judge.errors import (
    ConnectionFailedError,
    JudgeError,
    LogprobsRefusedError,
    PermanentJudgeError,
    RateLimitedError,
    TransientJudgeError,
    redact_secrets,
)
from condambig_metrics.judge.preflight import (
    ENVIRONMENT_SETTINGS,
    PREFLIGHT_MAX_TOKENS,
    JudgeSettings,
)
from condambig_metrics.judge.records import (
    DEFAULT_BASE_URL,
    ENDPOINT_STATUS,
    JudgeCompletion,
    JudgeConfig,
    judge_settings,
    normalized_base_url,
)
from condambig_metrics.judge.scoring import token_logprobs

# Key sent when the endpoint needs none (a local vLLM server), as the OpenAI SDK does.
_PLACEHOLDER_API_KEY = "EMPTY"
_RETRYABLE_STATUS = {408, 409, 425, 429}
_MESSAGE_CHARACTERS = 300  # of an error body quoted in a message
# Headers the OpenAI SDK adds from these variables (organisation and project of the key).
_ACCOUNT_HEADERS = {"OpenAI-Organization": "OPENAI_ORG_ID", "OpenAI-Project": "OPENAI_PROJECT_ID"}


class OpenAIJudgeBackend:
    """One chat-completions call per prompt: temperature 0, top logprobs requested.

    ``names``: the judge settings as the front end spells them, for what its errors advise."""

    def __init__(self, config: JudgeConfig, names: JudgeSettings = ENVIRONMENT_SETTINGS):
        try:
            import aiohttp  # noqa: F401
        except ImportError as error:  # pragma: no cover - depends on the environment
            raise ImportError(
                "the LLM judge needs the aiohttp package: pip install 'condambig[judge]'"
            ) from error
        if normalized_base_url(config.base_url) == DEFAULT_BASE_URL and not config.api_key:
            raise ValueError(
                f"the judge {config.model!r} at the OpenAI API needs a key: set {names.key}, "
                f"or point {names.base_url} at a server that needs none (e.g. vllm serve)")
        self.config = config
        self.names = names
        self.model_name = config.model
        self._url = normalized_base_url(config.base_url) + "/chat/completions"
        self._session: Any = None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._proxy: str | None = None
        self._logprobs_supported = config.top_logprobs > 0

    @property
    def cache_settings(self) -> dict[str, str]:
        """:func:`~condambig_metrics.judge.records.judge_settings` as they are now
        (``top_logprobs`` 0 after the endpoint refused log-probabilities)."""
        return self._settings(self._logprobs_supported)

    def _settings(self, with_logprobs: bool) -> dict[str, str]:
        return judge_settings(self.config.base_url,
                              self.config.top_logprobs if with_logprobs else 0,
                              self.config.max_tokens)

    async def check(self, prompt: str) -> JudgeCompletion:
        """The check request before any generation: as a judgement, but a few tokens."""
        return await self.complete(prompt, max_tokens=PREFLIGHT_MAX_TOKENS)

    async def complete(self, prompt: str, max_tokens: int | None = None) -> JudgeCompletion:
        """One chat-completions request. When the endpoint refuses log-probabilities, they
        are switched off for this backend and :class:`LogprobsRefusedError` asks the engine
        to send the prompt again (so does every request that was in flight with them)."""
        import aiohttp

        arguments: dict[str, Any] = {
            "model": self.config.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0,
            "max_tokens": self.config.max_tokens if max_tokens is None else max_tokens,
        }
        with_logprobs = self._logprobs_supported
        if with_logprobs:
            arguments.update(logprobs=True, top_logprobs=self.config.top_logprobs)
        session, proxy = self._session_for_this_loop()
        try:
            async with session.post(self._url, data=json.dumps(arguments).encode(),
                                    allow_redirects=False, proxy=proxy) as response:
                status, headers = response.status, response.headers
                body = await response.read()
        except asyncio.TimeoutError as error:  # aiohttp's own timeouts included
            raise TransientJudgeError(
                f"judge request timed out after {self.config.timeout_seconds:g} s"
                + _timeout_hint(self.config.concurrency)) from error
        except aiohttp.ClientConnectionError as error:  # refused, reset, closed unanswered
            raise ConnectionFailedError(
                f"cannot reach the judge endpoint: {_one_line(error)}") from error
        except aiohttp.ClientError as error:  # a broken response (truncated body, bad header)
            raise TransientJudgeError(
                f"judge request failed: {type(error).__name__}: {_one_line(error)}") from error
        if not 200 <= status < 300:
            message, code = _error_message(body)
            # an endpoint may quote the key it was sent ("Incorrect API key provided: ...")
            message = redact_secrets(message, [self.config.api_key])
            if status == 400 and with_logprobs and "logprob" in message.lower():
                # Some models/servers refuse logprobs: judge with the parsed integer instead.
                self._logprobs_supported = False
                raise LogprobsRefusedError(
                    f"judge endpoint refused log-probabilities: {message}")
            raise classify_status(status, message, code, headers, self.names)
        try:
            reply = json.loads(body)
        except ValueError as error:  # also a body that is not UTF-8
            raise TransientJudgeError(f"malformed judge response body: {error}") from error
        return _completion(reply, self._settings(with_logprobs))

    async def aclose(self) -> None:
        if self._session is not None:
            session, loop = self._session, self._session_loop
            self._session, self._session_loop = None, None
            if loop is asyncio.get_running_loop():
                await session.close()
            else:  # its loop has ended: its connections went with it
                _abandon(session)

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config, "names": self.names}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"], state.get("names", ENVIRONMENT_SETTINGS))

    def _session_for_this_loop(self) -> tuple[Any, str | None]:
        """The aiohttp session bound to the running loop (a new loop needs a new session),
        and the proxy for the endpoint.

        The pool has no limit of its own: the engine bounds the requests in flight, and
        every finished request leaves its connection open for the next one. Proxies come
        from the ``*_PROXY`` / ``NO_PROXY`` variables, as the SDK's httpx client read them;
        they are looked up once here, not per request.
        """
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._session_loop is not loop:
            if self._session is not None:
                _abandon(self._session)
            headers = {"Authorization": f"Bearer {self.config.api_key or _PLACEHOLDER_API_KEY}",
                       "Content-Type": "application/json", "Accept": "application/json"}
            for header, variable in _ACCOUNT_HEADERS.items():
                if os.environ.get(variable):
                    headers[header] = os.environ[variable]
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0),
                timeout=aiohttp.ClientTimeout(total=self.config.timeout_seconds),
                headers=headers,
            )
            self._session_loop = loop
            self._proxy = _proxy_for(self._url)
        return self._session, self._proxy


def openai_judge_engine(
    config: JudgeConfig, progress_factory: Callable[[str, int], Any] | None = None,
    names: JudgeSettings = ENVIRONMENT_SETTINGS,
) -> JudgeEngine:
    """OpenAI-compatible backend plus the sqlite cache named by ``config`` (when enabled);
    ``progress_factory`` as in :class:`JudgeEngine`, ``names`` as in the backend."""
    if config.cache_enabled and not config.cache_file:
        raise ValueError(
            f"judge {config.model!r}: the cache is enabled but neither cache_path nor "
            "default_cache_path is set (or set cache_enabled=False)"
        )
    return JudgeEngine(
        OpenAIJudgeBackend(config, names),
        JudgeCache(config.cache_file) if config.cache_file else None,
        concurrency=config.concurrency,
        max_retries=config.max_retries,
        request_timeout_seconds=config.timeout_seconds * 1.5,  # safety net over the session's own
        retry_budget_seconds=config.retry_budget_seconds,
        progress_factory=progress_factory,
    )


def classify_status(status: int, message: str, code: str | None, headers: Mapping[str, str],
                    names: JudgeSettings = ENVIRONMENT_SETTINGS) -> JudgeError:
    """An HTTP error answer as a transient, rate-limit or permanent judge error (``message``
    and ``code``: the body's ``error.message`` and ``error.code``); a permanent one says
    what to do, naming the settings as ``names`` spell them."""
    retry_after = retry_after_seconds(headers)
    waited = "" if retry_after is None else f" (Retry-After {retry_after:g} s)"
    quota = status == 429 and code == "insufficient_quota"
    if not quota and (status == 429 or (status == 503 and retry_after is not None)):
        return RateLimitedError(f"judge endpoint returned HTTP {status}{waited}: {message}",
                                retry_after=retry_after)
    if not quota and (status in _RETRYABLE_STATUS or status >= 500):
        return TransientJudgeError(f"judge endpoint returned HTTP {status}{waited}: {message}",
                                   retry_after=retry_after)
    if 300 <= status < 400:
        message = f"a redirect to {headers.get('location') or 'an unnamed address'}"
    separator = ", " if 300 <= status < 400 else ": "
    return PermanentJudgeError(
        f"judge endpoint returned HTTP {status}{separator}{message}. "
        f"{names.advice(status)}",
        affects_all_requests=quota or 300 <= status < 400 or status in ENDPOINT_STATUS,
    )


def _error_message(body: bytes) -> tuple[str, str | None]:
    """The message and code of an error answer: ``error.message`` / ``error.code`` of a JSON
    body (OpenAI), or its top-level ``message`` / ``code`` (vLLM), else the body's text."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            message, code = error.get("message"), error.get("code")
            if isinstance(message, str) and message.strip():
                return _one_line(message), None if code is None else str(code)
    return _one_line(text) or "(no message)", None


def _timeout_hint(concurrency: int) -> str:
    """What to change after a timeout: a local server that answers one request at a time
    keeps the others in flight waiting, each against its own timeout."""
    if concurrency > 1:
        return (f" ({concurrency} requests in flight: a server that answers one at a time "
                "keeps the others waiting; lower CONDAMBIG_JUDGE_CONCURRENCY / --metadata "
                "judge_concurrency, or raise CONDAMBIG_JUDGE_TIMEOUT / --metadata "
                "judge_timeout)")
    return " (raise CONDAMBIG_JUDGE_TIMEOUT / --metadata judge_timeout for a slow judge)"


def _one_line(text: object) -> str:
    """``text`` on one line, cut to a readable length."""
    line = " ".join(str(text).split())
    return line if len(line) <= _MESSAGE_CHARACTERS else line[:_MESSAGE_CHARACTERS] + "…"


def _proxy_for(url: str) -> str | None:
    """The proxy the ``*_PROXY`` / ``NO_PROXY`` variables name for ``url``; None: direct."""
    parts = urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


def _abandon(session: Any) -> None:
    """Let go of a session whose event loop has ended without closing it: mark its
    connector closed, so that collecting it logs no "Unclosed client session" error (the
    sockets, which only that loop could close, are closed when collected)."""
    connector = session.connector
    if connector is not None and not connector.closed:
        connector._close()  # the synchronous part of ``close()``; the loop to await it is gone


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


def _completion(reply: Any, settings: Mapping[str, str]) -> JudgeCompletion:
    """Text and top logprobs of the first choice; a body without them is malformed."""
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not choices or not isinstance(choices, list):
        raise TransientJudgeError("malformed judge response: no choices")
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message")
    text = message.get("content") if isinstance(message, dict) else None
    if not isinstance(text, str):
        raise TransientJudgeError("malformed judge response: the first choice has no text")
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not content:
        return JudgeCompletion(text=text, token_logprobs=None, cache_settings=settings)
    try:
        tokens = [
            token_logprobs(entry["token"], entry.get("logprob"),
                           ((alternative["token"], alternative.get("logprob"))
                            for alternative in (entry.get("top_logprobs") or [])))
            for entry in content
        ]
    except (KeyError, TypeError, AttributeError) as error:
        raise TransientJudgeError(
            f"malformed judge response: unreadable log-probabilities ({error!r})") from error
    return JudgeCompletion(text=text, token_logprobs=tokens, cache_settings=settings)
