"""A run's corpus values from Inspect's scores, as the scorer's metric computes them and as
the task-end hook (:mod:`condambig.null_reasons`) recomputes them to log why a metric is
withheld: what the two share, below both."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from condambig_tasks import settings
from condambig_tasks.benchmark import Benchmark, ScoredSample
from condambig_tasks.errors import CondambigError
from condambig_tasks.run import BenchmarkRun, RunResult, judge_cache_assignment, retry_hint

STDERR_SUFFIX = "_stderr"  # `<metric>_stderr`, as lm-eval names a metric's standard error


class JudgeFailedError(CondambigError):
    """The grader refuses every request (HTTP 401/403/404 while judging)."""


# a sample's store: how many of its judgements failed when it ended in a JudgeFailedError
ERRORED_JUDGEMENTS_KEY = "condambig_failed_judgements"


def scored_samples(
    scores: Sequence[tuple[Any, Any, dict[str, Any] | None]],
) -> list[ScoredSample]:
    """The :class:`ScoredSample` of each ``(sample_id, value, metadata)`` Inspect score."""
    return [ScoredSample(id=str(sample_id), values=value if isinstance(value, dict) else {},
                         details=metadata or {})
            for sample_id, value, metadata in scores]


def run_summary(benchmark: Benchmark, options: Any, judged: bool, max_failed: int,
                samples: Sequence[ScoredSample], unscored: int = 0) -> RunResult:
    """The corpus values of the scored samples, judged metrics withheld past
    ``max_failed`` failed judgements (failures counted from the samples' ``judge_calls``,
    plus ``unscored``: failed judgements the scores do not show, such as those of samples
    that ended in error)."""
    failed = sum(failed_judgements(sample.details) for sample in samples)
    return BenchmarkRun(benchmark, options, judged).summarise(
        samples, failed=failed + unscored, max_failed=max_failed,
        retry_hint=rescore_hint(benchmark.name))


def failed_judgements(details: dict[str, Any] | None) -> int:
    """How many of the judge calls in a score's details (``judge_calls``) failed."""
    calls = (details or {}).get("judge_calls") or []
    return sum(1 for call in calls if isinstance(call, dict) and call.get("failed"))


def rescore_hint(benchmark_name: str) -> str:
    """:func:`condambig_tasks.run.retry_hint` with the ways to judge a finished log's stored
    outputs again, generating nothing: with the grader role (``condambig-inspect-score``:
    ``inspect score`` with the scorer and its arguments from the log) or with
    ``condambig-score``'s judge."""
    cache = settings.judge_cache_choice()
    # the judgements already made are in the cache this run used: name it when not default
    prefix = judge_cache_assignment(
        cache, bool(settings.environment_value(settings.JUDGE_CACHE_VARIABLE)))
    return retry_hint(
        f"rescore the stored outputs with `{prefix}condambig-inspect-score <log>` (the run's "
        f"grader role; --model-role grader=... for another) or `{prefix}condambig-score "
        f"{benchmark_name} --from-log <log>` (the judge set by CONDAMBIG_JUDGE_MODEL / "
        "CONDAMBIG_JUDGE_BASE_URL / CONDAMBIG_JUDGE_API_KEY)", cache_enabled=cache is not None)
