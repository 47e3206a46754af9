"""The judge engine on Inspect's ``grader`` model role (any Inspect provider, local or API).

``inspect eval condambig/<task> --model ... --model-role grader=openai/gpt-4o-mini`` makes
the grader the judge; Inspect's own client handles the provider, rate limits and its
retries, and :class:`~condambig_metrics.judge.JudgeEngine` adds the G-Eval scoring, the
shared sqlite cache and judge-failed accounting.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from inspect_ai.model import GenerateConfig, Model, ModelOutput, get_model, model_roles

from condambig_metrics.judge import (
    JudgeCache,
    JudgeCompletion,
    JudgeEngine,
    PermanentJudgeError,
    TransientJudgeError,
    token_logprobs,
)

GRADER_ROLE = "grader"


class InspectJudgeBackend:
    """Sends judge prompts through an Inspect ``Model`` at temperature 0 with top logprobs."""

    def __init__(self, model: Model, top_logprobs: int = 20, max_tokens: int = 256):
        self.model = model
        self.model_name = str(model)
        self.config = GenerateConfig(
            temperature=0, logprobs=True, top_logprobs=top_logprobs, max_tokens=max_tokens
        )

    async def complete(self, prompt: str) -> JudgeCompletion:
        try:
            output = await self.model.generate(prompt, config=self.config)
        except (asyncio.TimeoutError, TimeoutError, ConnectionError) as error:
            raise TransientJudgeError(f"grader {self.model_name}: {error}") from error
        except Exception as error:
            # Inspect has already retried what its provider considers transient.
            raise PermanentJudgeError(
                f"grader {self.model_name} failed: {type(error).__name__}: {error}"
            ) from error
        return completion_from_output(output)


def completion_from_output(output: ModelOutput) -> JudgeCompletion:
    """Adapt an Inspect ``ModelOutput`` (text + ``choices[0].logprobs``) to a completion."""
    if output.empty or output.error:
        raise TransientJudgeError(
            f"grader returned no usable completion{': ' + output.error if output.error else ''}"
        )
    logprobs = output.choices[0].logprobs
    if logprobs is None or not logprobs.content:
        return JudgeCompletion(text=output.completion, token_logprobs=None)
    tokens = [
        token_logprobs(
            entry.token, entry.logprob,
            ((alternative.token, alternative.logprob) for alternative in entry.top_logprobs or []),
        )
        for entry in logprobs.content
    ]
    return JudgeCompletion(text=output.completion, token_logprobs=tokens)


def grader_judge_engine(
    cache_path: str | Path | None = None,
    *,
    concurrency: int = 16,
    max_retries: int = 4,
    use_cache: bool = True,
) -> JudgeEngine | None:
    """The engine on the ``grader`` role, or None when the eval set no grader.

    Call it inside a running eval (a scorer), where Inspect has bound the roles.
    ``cache_path`` None means :func:`condambig_tasks.settings.judge_cache_file` (shared
    with lm-eval).
    """
    if model_roles().get(GRADER_ROLE) is None:
        return None
    model = get_model(role=GRADER_ROLE)
    cache = None
    if use_cache:
        if cache_path is None:
            from condambig_tasks import settings

            cache_path = settings.judge_cache_file()
        cache = JudgeCache(cache_path)
    return JudgeEngine(InspectJudgeBackend(model), cache, concurrency=concurrency,
                       max_retries=max_retries)
