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

The grader is resolved as inspect_evals resolves its graders (its issue #2039):
``get_model(role="grader", default=<the paper's judge>)``. A grader bound with
``task_with(task, model_roles=...)`` is known only once the eval runs, so the task's
``setup`` step (:func:`grader_guard`, run before any sample's solver) resolves the grader
in effect and checks it once per process; a grader bound on the command line and the
missing default are checked when the task is built, where a failure is one line.
"""

from __future__ import annotations

import re
from typing import Any

from inspect_ai.model import (
    ChatMessageUser,
    GenerateConfig,
    Model,
    get_model,
    model_roles,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver

from condambig.judge_backend import (
    GRADER_ROLE,
    JUDGE_GENERATE_CONFIG,
    error_summary,
    status_code,
)
from condambig_metrics.judge import (
    PermanentJudgeError,
    RateLimitedError,
    TransientJudgeError,
    normalized_base_url,
)
from condambig_metrics.judge.preflight import (
    PREFLIGHT_MAX_TOKENS,
    JudgeSettings,
    JudgeUnavailableError,
    check_judge,
    forget_judge,
)
from condambig_tasks.errors import CondambigError

IN_PROCESS_PROVIDERS = frozenset({"hf", "transformer_lens", "nnterp", "llama-cpp-python",
                                  "mockllm", "none"})
CHECK_TIMEOUT_SECONDS = 20.0
# a judgement's request, capped at a few tokens: the reply is never scored
CHECK_GENERATE_CONFIG = JUDGE_GENERATE_CONFIG.merge(GenerateConfig(max_tokens=PREFLIGHT_MAX_TOKENS))


class GraderUnavailableError(CondambigError):
    """The grader role's model cannot be reached or refuses requests (one-line message)."""


class ProviderCheck:
    """The grader as the judge check reaches it: a fresh client of the same provider, model,
    base URL and key, made at the first check, sending the check prompt directly (no
    Inspect retries) and sorting its errors the way the provider does (retryable:
    transient, else: permanent, saying what to set: ``names``)."""

    def __init__(self, grader: Model):
        self.grader = grader
        self.names = _names(grader)
        self.api: Any = None

    async def check(self, prompt: str) -> None:
        """Send the check prompt; any answer passes (the reply is never read)."""
        grader = self.grader
        if self.api is None:
            self.api = get_model(str(grader), base_url=getattr(grader.api, "base_url", None),
                                 api_key=getattr(grader.api, "api_key", None), memoize=False,
                                 **_model_args(grader)).api
        try:
            result = await self.api.generate(
                input=[ChatMessageUser(content=prompt)], tools=[], tool_choice="none",
                config=CHECK_GENERATE_CONFIG)
        except Exception as error:  # the provider SDK's own exception types
            raise self._classified(error) from error
        output = result[0] if isinstance(result, tuple) else result
        if isinstance(output, Exception):
            raise self._classified(output)

    async def aclose(self) -> None:
        """Close the client on the check's own event loop (it is bound to that loop)."""
        if self.api is not None:
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
        return PermanentJudgeError(
            f"{text.rstrip('.')}. {self.names.advice(status_code(error))}")


def check_grader(grader: Model, default_for: str | None = None) -> None:
    """Raise :class:`GraderUnavailableError` when ``grader`` cannot judge: the judge check
    (:func:`~condambig_metrics.judge.preflight.check_judge`, once per process and grader:
    again after it failed, or failed mid-run since, :func:`forget_grader`).

    ``default_for``: the task whose default grader this is (no grader role bound), so the
    message says so instead of naming a role the user did not bind."""
    if str(grader).split("/", 1)[0] in IN_PROCESS_PROVIDERS:
        return
    where = grader_where(grader)
    # the default grader is nobody's bound role: say so, and how to bind one
    subject = (f"{default_for}: no grader role is bound and the default grader {where}"
               if default_for else f"the judge --model-role grader={where}")
    try:
        check_judge(ProviderCheck(grader), where, once=True,
                    timeout_seconds=CHECK_TIMEOUT_SECONDS, subject=subject)
    except JudgeUnavailableError as error:
        message = str(error)
        if default_for:
            message += (" Or bind another grader (--model-role grader=<model>), or run "
                        "judge-free on purpose with -T judge=false.")
        raise GraderUnavailableError(message) from None


def grader_where(grader: Model) -> str:
    """The grader and its endpoint, as the check names (and remembers) it."""
    base_url = getattr(grader.api, "base_url", None)
    return f"{grader} at {normalized_base_url(base_url)}" if base_url else str(grader)


def forget_grader(grader: Model) -> None:
    """``grader`` refused every request or went away mid-run: check it again before it
    judges again in this process (``inspect eval-set`` retries the task at once: the
    task's setup step then ends the retry at the check, before any generation, while the
    grader is down)."""
    forget_judge(grader_where(grader))


def no_grader_message(task: str, default: str | None, why: str | None = None) -> str:
    """What to do when a task that judges has no grader it can reach."""
    if why:  # Inspect's provider messages carry console markup ([bold]...[/bold])
        why = re.sub(r"\[/?[a-z ]+\]", "", why).rstrip(".")
    missing = (f"no grader role is bound and the default grader {default} cannot be used "
               f"({why})" if default else "no grader role is bound")
    return (f"{task}: this task is judged by the `grader` model role, but {missing}. Bind "
            "one (--model-role grader=<model>), or run judge-free on purpose with "
            "-T judge=false.")


def require_default_grader(task: str, default: str | None) -> None:
    """At build time with no grader bound: the default grader can be built (its
    provider's key is set), else one line now, before any generation. Its endpoint is
    checked when the eval runs (``task_with`` may bind another grader)."""
    if default is None:
        raise GraderUnavailableError(no_grader_message(task, None))
    try:
        get_model(default, memoize=False)
    except Exception as error:
        raise GraderUnavailableError(
            no_grader_message(task, default, error_summary(error))) from None


def grader_in_effect(task: str, default: str | None) -> Model:
    """Inside a running eval: the grader role (``task_with`` roles included) or the
    default, checked once; :class:`GraderUnavailableError` when neither can judge."""
    bound = model_roles().get(GRADER_ROLE) is not None
    try:
        grader = get_model(role=GRADER_ROLE, default=default) if bound or default else None
    except Exception as error:
        raise GraderUnavailableError(
            no_grader_message(task, default, error_summary(error))) from None
    if grader is None:
        raise GraderUnavailableError(no_grader_message(task, default))
    check_grader(grader, default_for=None if bound else task)
    return grader


@solver
def grader_guard(task: str, judged: bool, default: str | None) -> Solver:
    """The task's ``setup`` step: before a sample is generated, the grader in effect can
    judge (``judged``), or no grader was bound after a judge-free build (a grader that
    would be silently ignored)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if judged:
            grader_in_effect(task, default)
        elif model_roles().get(GRADER_ROLE) is not None:
            raise GraderUnavailableError(
                f"{task}: a grader was bound after the task was built without one "
                "(task_with); the task's metrics were fixed judge-free, so it would be "
                "ignored. Bind it for the eval instead (--model-role grader=<model> or "
                "eval(..., model_roles={'grader': ...})), or run with -T judge=false.")
        return state

    return solve


def _model_args(grader: Model) -> dict[str, Any]:
    return {key: value for key, value in (getattr(grader, "model_args", None) or {}).items()
            if key not in {"base_url", "api_key"}}


def _names(grader: Model) -> JudgeSettings:
    """The grader's settings as its provider reads them, for what a failed check advises."""
    variables = list(getattr(grader.api, "api_key_vars", None) or [])
    provider, _, rest = str(grader).partition("/")
    base_url = "the provider's base URL"
    if provider == "openai-api" and "/" in rest:
        base_url = rest.split("/", 1)[0].upper().replace("-", "_") + "_BASE_URL"
    return JudgeSettings(base_url=base_url, model=f"the grader's model name ({grader})",
                         key=" or ".join(variables) or "the provider's API key")
