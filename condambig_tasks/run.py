"""One run of a benchmark: the sequence lm-eval, Inspect and ``condambig-score`` all follow.

options -> which judge (one decision, :func:`resolve_judge`) -> run notes -> items with
provenance and, before any generation, :meth:`BenchmarkRun.before_generation` (``prepare``,
then the judge and its cache checked; lm-eval loads its docs first, Inspect after) -> score (the corpus step with a
:class:`~condambig_tasks.benchmark.Runtime`) -> after scoring
(:meth:`BenchmarkRun.after_scoring`: summary, null reasons, judged metrics withheld past
``judge_max_failed``, endpoint failure) -> :class:`RunResult`.

A front end only adapts it: where its options and judge come from (lm-eval ``--metadata``
and the environment, CLI flags and the environment, Inspect ``-T`` values and the
``grader`` model role) and how it reports (results JSON, Inspect log, printed JSON).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from condambig_tasks import settings
from condambig_tasks.benchmark import (
    SUITE_SCORE,
    SUM,
    Benchmark,
    Runtime,
    ScoredSample,
    default_grader,
    headline_metric,
    reported_values,
    score_run,
    uses_judge,
)
from condambig_tasks.errors import CondambigError
from condambig_tasks.provenance import load_records_with_provenance

# ---------------------------------------------------------------------- the judge


@dataclass(frozen=True)
class EnvironmentJudge:
    """The judge of lm-eval and ``condambig-score``: ``judge_*`` settings (lm-eval
    ``--metadata`` keys, or the CLI's ``--judge-*`` flags under those keys) over the
    ``CONDAMBIG_JUDGE_*`` variables; no judge model named, no judge."""

    settings: Mapping[str, Any] = field(default_factory=dict)
    enabled: bool = True

    def configured(self, benchmark: Benchmark) -> Any:
        """The :class:`~condambig_metrics.judge.JudgeConfig`, or None."""
        return settings.judge_config_from_environment(dict(self.settings))


@dataclass(frozen=True)
class GraderRole:
    """The judge of Inspect: the ``grader`` model role as bound when the task is built
    (``--model-role grader=...``, ``eval(model_roles=...)``), else the benchmark's
    default grader (the paper's judge); ``-T judge=false`` turns it off.

    A grader bound later with ``task_with(task, model_roles=...)`` replaces the default
    when the scorer resolves the role (``get_model(role="grader", default=...)``)."""

    enabled: bool = True
    bound: Any = None

    def configured(self, benchmark: Benchmark) -> Any:
        """The bound model(s), else the default grader's name, else None."""
        return self.bound if self.bound is not None else default_grader(benchmark)


def judge_wanted(benchmark: Benchmark, options: Any, source: Any) -> bool:
    """A judge applies to the benchmark with these options and the front end has not
    turned it off (whether one is configured is :func:`resolve_judge`'s question)."""
    return uses_judge(benchmark) and benchmark.judge_applies(options) and \
        bool(getattr(source, "enabled", True))


def resolve_judge(benchmark: Benchmark, options: Any, source: Any) -> Any:
    """The judge this run uses, or None for a judge-free run: a judge applies to the
    benchmark with these options, the front end has not turned it off, and its source
    names one. The one decision every front end makes (``judged`` is ``is not None``)."""
    if not judge_wanted(benchmark, options, source):
        return None
    return source.configured(benchmark)


# ---------------------------------------------------------------------- the result


@dataclass(frozen=True)
class RunResult:
    """A run's corpus values, why each null one is null, and its headline;
    ``judge_failed``: judged numbers were withheld or left without judgements because the
    judge failed (the run must not look finished)."""

    values: dict[str, float | None]
    reasons: dict[str, str]
    headline: str | None = None
    judge_failed: bool = False


# ---------------------------------------------------------------------- the run


@dataclass
class BenchmarkRun:
    """One run: the benchmark, its typed options and whether a judge scores it."""

    benchmark: Benchmark
    options: Any
    judged: bool = False

    @classmethod
    def start(cls, benchmark: Benchmark, values: Mapping[str, Any] | None = None, *,
              strict: bool = True, judge_source: Any = None) -> tuple[BenchmarkRun, Any]:
        """The run of ``values`` (validated once, by the options type) and its judge."""
        options = benchmark.options(values or {}, strict=strict)
        return cls.with_options(benchmark, options, judge_source)

    @classmethod
    def with_options(cls, benchmark: Benchmark, options: Any,
                     judge_source: Any = None) -> tuple[BenchmarkRun, Any]:
        judge = None if judge_source is None else resolve_judge(benchmark, options,
                                                                judge_source)
        return cls(benchmark, options, judge is not None), judge

    # before generation
    def notes(self) -> list[str]:
        """One-line notices the run shows once (e.g. what is skipped without a judge)."""
        return self.benchmark.run_notes(self.options, self.judged)

    def before_generation(self, runtime: Runtime | None = None, *,
                          check_judge: Callable[[], None] | None = None) -> None:
        """What the run needs before the first generation, in one order: the benchmark's
        own checks (``prepare``: e.g. agent models; ``runtime``: the bound Inspect roles),
        then, when judged, ``check_judge``: the front end's judge check (one request
        through its own client, and the judge cache)."""
        self.benchmark.prepare(self.options, runtime or Runtime())
        if self.judged and check_judge is not None:
            check_judge()

    def load(self, *, judge: str | None = None, judge_base_url: str | None = None,
             roles: Mapping[str, Any] | None = None,
             ) -> tuple[list[Any], list[dict[str, Any]], dict[str, Any]]:
        """Items, their JSON records and the provenance block (``judge``: its model,
        ``judge_base_url``: its endpoint when one was set)."""
        return load_records_with_provenance(self.benchmark, self.options, judge=judge,
                                            judge_base_url=judge_base_url, roles=roles)

    @property
    def headline(self) -> str | None:
        return headline_metric(self.benchmark, self.options, self.judged)

    @property
    def needs_corpus_step(self) -> bool:
        return self.benchmark.needs_corpus_step(self.options, self.judged)

    # scoring
    async def score(self, batch: Sequence[tuple[Any, Any]],
                    runtime: Runtime) -> list[ScoredSample]:
        """The whole batch: the corpus step when the run needs it, else ``score``."""
        if self.needs_corpus_step:
            return await score_run(self.benchmark, batch, self.options, runtime)
        return [self.benchmark.score(item, output, self.options) for item, output in batch]

    # after scoring
    def after_scoring(self, samples: Sequence[ScoredSample], engine: Any = None, *,
                      max_failed: int = 0, rerun: str = "") -> RunResult:
        """The run's result once ``engine`` (None: judge-free) has judged: its failed
        judgements and endpoint failure, the hint naming ``rerun`` (the front end's way
        to judge the same outputs again)."""
        if engine is None:
            return self.summarise(samples)
        return self.summarise(samples, failed=engine.stats.failures, max_failed=max_failed,
                              retry_hint=engine_retry_hint(engine, rerun),
                              endpoint_failure=engine.endpoint_failure)

    def summarise(self, samples: Sequence[ScoredSample], *, failed: int = 0,
                  max_failed: int = 0, retry_hint: str = "",
                  endpoint_failure: str | None = None) -> RunResult:
        """Summary and null reasons; past ``max_failed`` failed judgements the judged
        metrics are withheld with ``retry_hint``; after an endpoint failure a judged metric
        left without any judgement says why (the hint), even within ``max_failed``."""
        benchmark, options, judged = self.benchmark, self.options, self.judged
        summary = reported_values(benchmark, samples, options, judged)
        reasons = explain_nulls(benchmark, samples, options, judged, summary)
        values, reasons = withhold_judged_metrics(
            benchmark, summary, reasons, options, judged, failed=failed, max_failed=max_failed,
            retry_hint=retry_hint)
        judge_failed = judged and failed > max_failed
        if judged and endpoint_failure is not None and not judge_failed:
            for spec in benchmark.metric_specs:
                if spec.judge and spec.name in reasons:
                    reasons[spec.name] = retry_hint
                    judge_failed = True
            headline = self.headline
            if headline in reasons and SUITE_SCORE in reasons:
                reasons[SUITE_SCORE] = f"the headline {headline} is null: {reasons[headline]}"
        return RunResult(values, reasons, self.headline, judge_failed)


def explain_nulls(
    benchmark: Benchmark, samples: Sequence[ScoredSample], options: Any, judged: bool,
    summary: Mapping[str, float | None],
) -> dict[str, str]:
    """The benchmark's ``null_reasons``, with ``suite_score`` explained by its headline's reason."""
    reasons = benchmark.null_reasons(samples, options, judged, summary)
    headline = headline_metric(benchmark, options, judged)
    if SUITE_SCORE in reasons and headline is not None:
        why = reasons.get(headline, "it has no value")
        reasons[SUITE_SCORE] = f"the headline {headline} is null: {why}"
    return reasons


def withhold_judged_metrics(
    benchmark: Benchmark, summary: Mapping[str, float | None], reasons: Mapping[str, str],
    options: Any, judged: bool, *, failed: int, max_failed: int, retry_hint: str,
) -> tuple[dict[str, float | None], dict[str, str]]:
    """``summary`` and its null reasons with the judged metrics withheld when more than
    ``max_failed`` judgements finally failed.

    A judged mean over the judgements that happened to succeed is biased (the failed
    ones are not a random sample: long outputs time out, rate limits hit bursts), so
    past the limit the judged quality metrics, and the headline and ``suite_score``
    when the headline is judged, are null with the reason: how many failed, the limit,
    and ``retry_hint`` (how to judge only the failed ones again; the cache keeps the
    rest). Judge counts (SUM) and direction-less diagnostics stay reported.
    """
    values, why = dict(summary), dict(reasons)
    if not judged or failed <= max_failed:
        return values, why
    reason = (f"{failed} judgement(s) failed (judge_max_failed={max_failed}); "
              f"{retry_hint}")
    specs = {spec.name: spec for spec in benchmark.metric_specs}
    for name in list(values):
        spec = specs.get(name)
        if spec is not None and spec.judge and spec.aggregation != SUM and \
                spec.higher_is_better is not None:
            values[name], why[name] = None, reason
    headline = headline_metric(benchmark, options, judged)
    if headline is not None and values.get(headline) is None and SUITE_SCORE in values:
        values[SUITE_SCORE] = None
        why[SUITE_SCORE] = f"the headline {headline} is null: {why.get(headline, reason)}"
    return values, why


def retry_hint(rerun: str, *, cache_enabled: bool = True, endpoint_failure: str | None = None,
               refused: bool = False) -> str:
    """What to do after failed judgements: one template for every front end, each giving
    ``rerun``, its own way to judge the same outputs again (``condambig-score``: the same
    command; lm-eval: ``condambig-score`` on its samples; Inspect: rescoring its log).
    ``refused``: the endpoint refused every request (a wrong URL, key or model, named in
    ``endpoint_failure``), so that is fixed first."""
    why = (f"the judge endpoint failed ({endpoint_failure.rstrip('.')}); "
           if endpoint_failure else "")
    then = "fix that setting, then " if refused else ""
    cached = ("the judgements already made are cached and only the missing judgements are "
              "sent" if cache_enabled else
              f"the judge cache is off, so every judgement is sent again (set "
              f"{settings.JUDGE_CACHE_VARIABLE} to a file to send only the missing ones)")
    return f"{why}{then}{rerun}: {cached}"


def engine_retry_hint(engine: Any, rerun: str) -> str:
    """:func:`retry_hint` after ``engine``'s judging: its endpoint failure, whether the
    endpoint refused every request, whether it had a cache."""
    return retry_hint(rerun, cache_enabled=engine.cache is not None,
                      endpoint_failure=engine.endpoint_failure, refused=engine.endpoint_refused)


def judge_cache_assignment(path: Any, chosen: bool) -> str:
    """``CONDAMBIG_JUDGE_CACHE=<path> `` before a command that must use the cache this run
    used (``chosen``: set by the user, not the default one), else nothing."""
    if path is None or not chosen:
        return ""
    return f"{settings.JUDGE_CACHE_VARIABLE}={shlex.quote(str(path))} "


def check_judge_cache(benchmark: Benchmark, path: Any) -> None:
    """Open the judge cache before any generation: an unusable path (a folder, read-only,
    a full disk) is one line now, not an error at every judgement (None: no cache)."""
    from condambig_metrics.judge import JudgeCache

    if path is None:
        return
    try:
        JudgeCache.check(path)
    except ValueError as error:  # JudgeCacheError: names the path and what to set
        raise CondambigError(f"{benchmark.name}: {error}") from None
