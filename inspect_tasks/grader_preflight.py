"""One request to the ``grader`` role before any sample is generated.

Inspect binds the roles before it calls the ``@task`` function, and its model client
retries a refused connection for minutes with the default ``max_retries`` / ``timeout``;
a grader answering 401 fails every judgement only after generation. The task function
therefore sends one minimal judge request through a fresh client of the same provider,
model, base URL and key (its own event loop, a short timeout, no Inspect-level retries:
:func:`condambig_metrics.judge.preflight.check_judge`) and ends the run with one line
naming the grader and what to set when the grader cannot be used.

Graders that run in this process (``hf/``, ``transformer_lens/``, ...) have no endpoint
to get wrong and were loaded when the role was bound; they are not checked.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessageUser, Model, ModelOutput, get_model

from condambig.judge_backend import JUDGE_GENERATE_CONFIG
from condambig_metrics.judge import (
    JudgeCompletion,
    PermanentJudgeError,
    RateLimitedError,
    TransientJudgeError,
    normalized_base_url,
)
from condambig_metrics.judge.preflight import JudgeUnavailableError, check_judge
from condambig_tasks.errors import CondambigError

IN_PROCESS_PROVIDERS = frozenset({"hf", "transformer_lens", "nnterp", "llama-cpp-python",
                                  "mockllm", "none"})
CHECK_TIMEOUT_SECONDS = 20.0


class GraderUnavailableError(CondambigError):
    """The grader role's model cannot be reached or refuses requests (one-line message)."""


class ProviderCheck:
    """Sends the check prompt through a provider client directly (no Inspect retries) and
    sorts its errors the way the provider does (retryable: transient, else: permanent)."""

    def __init__(self, model: Model):
        self.api = model.api

    async def complete(self, prompt: str) -> JudgeCompletion:
        try:
            result = await self.api.generate(
                input=[ChatMessageUser(content=prompt)], tools=[], tool_choice="none",
                config=JUDGE_GENERATE_CONFIG)
        except Exception as error:  # the provider SDK's own exception types
            raise self._classified(error) from error
        output = result[0] if isinstance(result, tuple) else result
        if isinstance(output, Exception):
            raise self._classified(output)
        assert isinstance(output, ModelOutput)
        return JudgeCompletion(text=output.completion, token_logprobs=None)

    async def aclose(self) -> None:
        """Close the client on the check's own event loop (it is bound to that loop)."""
        await self.api.aclose()

    def _classified(self, error: BaseException) -> Exception:
        text = f"{type(error).__name__}: {error}"
        try:
            decision = self.api.should_retry(error)
        except Exception:
            decision = isinstance(error, (TimeoutError, OSError))
        if decision:
            if getattr(decision, "kind", None) == "rate_limit":
                return RateLimitedError(f"rate limit: {text}")
            return TransientJudgeError(text)
        return PermanentJudgeError(text)


def check_grader(grader: Model) -> None:
    """Raise :class:`GraderUnavailableError` when ``grader`` cannot judge (one request)."""
    provider = str(grader).split("/", 1)[0]
    if provider in IN_PROCESS_PROVIDERS:
        return
    base_url = getattr(grader.api, "base_url", None)
    where = f"--model-role grader={grader}" + (
        f" at {normalized_base_url(base_url)}" if base_url else "")
    checker = get_model(str(grader), base_url=base_url,
                        api_key=getattr(grader.api, "api_key", None), memoize=False,
                        **_model_args(grader))
    try:
        check_judge(ProviderCheck(checker), where, timeout_seconds=CHECK_TIMEOUT_SECONDS,
                    what_to_set=_what_to_set(grader))
    except JudgeUnavailableError as error:
        raise GraderUnavailableError(str(error)) from None


def _model_args(grader: Model) -> dict[str, Any]:
    return {key: value for key, value in (getattr(grader, "model_args", None) or {}).items()
            if key not in {"base_url", "api_key"}}


def _what_to_set(grader: Model) -> str:
    variables = list(getattr(grader.api, "api_key_vars", None) or [])
    provider, _, rest = str(grader).partition("/")
    if provider == "openai-api" and "/" in rest:
        service = rest.split("/", 1)[0].upper().replace("-", "_")
        variables = [f"{service}_BASE_URL", *variables]
    settings = " and ".join(variables) if variables else "the provider's base URL and API key"
    return f"the grader's model name, {settings}"
