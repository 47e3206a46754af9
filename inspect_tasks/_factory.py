"""The Inspect side of every benchmark, built from its :class:`~condambig_tasks.benchmark.Benchmark`.

A benchmark's ``@task`` function declares its ``-T`` options as keyword parameters (Inspect
reads them from the signature) and returns :func:`benchmark_task`. The scorer puts only
per-sample numbers in ``Score.value`` (so Inspect's epoch reducers average them correctly)
and the details (judge results, parsed pairs, texts for corpus metrics) in
``Score.metadata``; one metric per benchmark computes the corpus values from them with the
benchmark's own ``summarise``.

The run sequence is :class:`condambig_tasks.run.BenchmarkRun`'s; the judge is the
``grader`` role, resolved in the scorer as ``get_model(role="grader", default=<the paper's
judge>)`` so a grader bound with ``task_with(task, model_roles=...)`` is used. The grader in
effect is checked once before any generation (:mod:`condambig.grader_preflight`); a grader that refuses every request later (HTTP
401/403/404) ends the run as an error, and past ``judge_max_failed`` failed judgements the judged metrics are withheld
(NaN, their reasons in the log: :mod:`condambig.null_reasons`).
"""

from __future__ import annotations

import logging
import math
from typing import Any

from inspect_ai import Epochs, Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import HeadlineMetric
from inspect_ai.model import GenerateConfig, model_roles
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import Solver, TaskState, generate

import condambig.null_reasons  # noqa: F401  (registers the hook that logs null_reasons)
from condambig.context_check import check_prompts_fit
from condambig.epochs import judged_mean
from condambig.grader_preflight import (
    check_grader,
    forget_grader,
    grader_guard,
    require_default_grader,
)
from condambig.judge_backend import GRADER_ROLE, grader_judge_engine
from condambig.live_metrics import for_progress_display
from condambig.run_summary import (
    ERRORED_JUDGEMENTS_KEY,
    STDERR_SUFFIX,
    JudgeFailedError,
    run_summary,
    scored_samples,
)
from condambig.task_items import TaskItems, remember
from condambig_metrics.judge import record_judgements
from condambig_metrics.judge.preflight import judge_returns
from condambig_tasks import registry, settings, uncertainty
from condambig_tasks.benchmark import (
    Runtime,
    ScoredSample,
    default_grader,
    find_variant,
    options_to_json,
    reported_metrics,
    task_version,
)
from condambig_tasks.errors import ConfigurationError
from condambig_tasks.progress import show_project_logs
from condambig_tasks.run import (
    BenchmarkRun,
    GraderRole,
    check_judge_cache,
    judge_wanted,
)

logger = logging.getLogger("condambig")


def inspect_task_name(benchmark_name: str, dataset_name: str) -> str:
    """The task as the user names it on the command line, for messages: a dataset named as
    one of the benchmark's declared tasks (``abg_coqa_detection``,
    ``condambigqa_gold_conditions``) is that task, another (``condambigqa_main``,
    ``conditionalqa_dev``) is its benchmark's general task. Only this benchmark's tasks are
    looked at: the others' modules are not imported for a name."""
    try:
        find_variant(registry.get(benchmark_name), dataset_name)
    except KeyError:
        return registry.INSPECT_PREFIX + benchmark_name
    return registry.INSPECT_PREFIX + dataset_name


def benchmark_task(
    benchmark_name: str,
    option_values: dict[str, Any],
    *,
    judge: bool = True,
    max_tokens: int | None = None,
    solver: Solver | None = None,
    dataset_name: str | None = None,
    metadata: dict[str, Any] | None = None,
    judge_max_failed: int | None = None,
    length_hint: str = "",
) -> Task:
    """The Inspect task of one benchmark with the given options (``-T`` values).

    The judge is the ``grader`` role, else the benchmark's default grader (the paper's
    judge); ``judge=False`` runs judge-free. ``judge_max_failed``: how many judgements may
    finally fail before the judged metrics are withheld (None:
    ``CONDAMBIG_JUDGE_MAX_FAILED``, else 0). ``length_hint``: the task's own way to shorten
    a prompt too long for an in-process model (``" or lower -T max_document_words"``).
    """
    show_project_logs()
    max_failed = max_failed_option(judge_max_failed)
    benchmark = registry.get(benchmark_name)
    bound = model_roles().get(GRADER_ROLE)
    source = GraderRole(enabled=bool(judge), bound=bound)
    run, grader = BenchmarkRun.start(
        benchmark, {k: v for k, v in option_values.items() if v is not None},
        judge_source=source)
    task_name = dataset_name or benchmark_name
    said_as = inspect_task_name(benchmark_name, task_name)
    if isinstance(grader, list):
        raise ConfigurationError(
            f"{benchmark_name}: the grader role is bound to {len(grader)} models "
            f"({', '.join(map(str, grader))}); the judge scores with one model, as the papers' "
            "G-Eval protocol does. Bind one (--model-role grader=<model>) and run once per "
            "judge to compare judges.")
    for note in run.notes():
        logger.warning("%s", note)

    def check_judge() -> None:  # a bound grader is asked now; the default one when it runs
        if bound is not None:
            check_grader(bound)
        else:
            require_default_grader(said_as, default_grader(benchmark))
        check_judge_cache(benchmark, settings.judge_cache_choice())

    run.before_generation(Runtime(roles=dict(model_roles())), check_judge=check_judge)
    options = run.options
    options_json = options_to_json(benchmark, options)
    items, records, provenance = run.load(judge=str(grader) if run.judged else None,
                                          roles=dict(model_roles()))
    headline = run.headline
    # a sample carries its record's digest; the scorer finds its item by it (task_items)
    metadata_of = remember(benchmark_name, records)
    samples = [Sample(id=benchmark.item_id(item), input=benchmark.prompt(item, options),
                      target=benchmark.target(item, options) or "", metadata=sample_metadata)
               for item, sample_metadata in zip(items, metadata_of, strict=True)]
    check_prompts_fit(task_name, [(sample.id, sample.input) for sample in samples],
                      length_hint)
    return Task(
        dataset=MemoryDataset(samples, name=task_name),
        setup=(grader_guard(said_as, run.judged, default_grader(benchmark))
               if judge_wanted(benchmark, options, source) else None),
        solver=solver or generate(),
        scorer=benchmark_scorer(benchmark_name, options_json, run.judged),
        # with --epochs N: every epoch's failed judgements are counted
        epochs=Epochs(1, judged_mean()),
        metrics=[benchmark_metrics(benchmark_name, options_json, run.judged, max_failed,
                                   settings.bootstrap_resamples())],
        # no temperature here: providers differ (Inspect's hf provider rejects 0.0); set
        # --temperature on the command line
        config=GenerateConfig(max_tokens=max_tokens or benchmark.max_tokens(options)),
        version=task_version(benchmark).comparability,
        headline_metric=None if headline is None else HeadlineMetric(metric=headline),
        metadata={"benchmark": benchmark_name, **task_version(benchmark).to_metadata(),
                  "options": options_json, "judged": run.judged,
                  "headline_metric": headline,
                  "metrics": [spec.name
                              for spec in reported_metrics(benchmark, options, run.judged)],
                  **({"judge_max_failed": max_failed} if run.judged else {}),
                  "provenance": provenance, **(metadata or {})},
    )


@scorer(metrics=[])  # the task sets benchmark_metrics(...)
def benchmark_scorer(benchmark_name: str, options: dict[str, Any], judged: bool) -> Scorer:
    """Score one output the way every front end does (the judge: the ``grader`` role)."""
    benchmark = registry.get(benchmark_name)
    typed_options = benchmark.options(options)
    corpus_step = benchmark.needs_corpus_step(typed_options, judged)
    judge_metrics = {spec.name for spec in benchmark.metric_specs if spec.judge}
    task_items = TaskItems(benchmark_name, options)
    # one judge engine for the whole eval (one cache, one concurrency bound), made again
    # when a grader that had failed answers again (a retry of the task: eval-set)
    engines: dict[int, Any] = {}

    def judge_engine():
        if not judged:
            return None
        returns = judge_returns()
        if returns not in engines:
            engines.clear()
            engines[returns] = grader_judge_engine(default=default_grader(benchmark))
        return engines[returns]

    async def score(state: TaskState, target: Target) -> Score:
        item = task_items.item(state.sample_id, state.metadata)
        output = state.output.completion
        transcript: list[dict[str, Any]] = []
        if corpus_step:
            # Inspect's own progress display counts the samples scored, judge included
            runtime = Runtime(judge=judge_engine(), roles=dict(model_roles()))
            with record_judgements() as transcript:
                [sample] = await benchmark.score_batch([(item, output)], typed_options,
                                                       runtime)
            failure = grader_failure(benchmark_name, runtime.judge)
            failed = sum(1 for entry in transcript if entry["failed"])
            if failure and failed:
                # a sample error: Inspect ends the task (status error) and
                # `inspect eval-retry` scores this sample again once the grader is fixed;
                # where Inspect is told to go on without it, the task-end hook still
                # counts its failed judgements (from the sample's store)
                state.store.set(ERRORED_JUDGEMENTS_KEY, failed)
                # checked again before a retry (eval-set): still down, the set ends there
                forget_grader(runtime.judge.backend.model)
                raise JudgeFailedError(failure)
        else:
            sample = benchmark.score(item, output, typed_options)
        return sample_score(sample, output, transcript, judge_metrics)

    return score


def grader_failure(benchmark_name: str, judge: Any) -> str | None:
    """Why no judgement of the run can succeed any more (None: some still can): the grader
    refuses every request (HTTP 401/403/404), or it went away mid-run (its connections
    failed past the engine's breaker). The message says what to run; ``inspect eval-retry``
    runs the samples that ended in this error again, with the judgements made cached."""
    if judge is None:
        return None
    refused = judge.endpoint_failure if judge.endpoint_refused else None
    gone = judge.breaker.gone
    retry = ("run `inspect eval-retry <log>`: the finished samples stay in the log and "
             "the judge cache keeps every judgement already made.")
    if refused:
        return (f"{benchmark_name}: the grader refuses every request ({refused}); judged "
                "metrics cannot be computed. Fix --model-role grader=... (its key, model "
                f"name or base URL), then {retry}")
    if gone is not None:
        return (f"{benchmark_name}: {gone}; judged metrics cannot be computed. Once the "
                f"grader answers again, {retry}")
    return None


def sample_score(sample: ScoredSample, output: str, transcript: list[dict[str, Any]],
                 judge_metrics: set[str]) -> Score:
    """One sample's Inspect ``Score``: numbers in ``value``, details and the judge's prompts
    and replies in ``metadata``.

    A judge metric whose judgement failed is NaN, Inspect's unscored sentinel (the
    benchmark counts the failure in its judge_failed metric); a sample with no number at
    all is ``Score.unscored`` with reason ``grader_failed`` when the judge failed.
    """
    failed = [entry for entry in transcript if entry["failed"]]
    values = {name: float(value) for name, value in sample.values.items()
              if value is not None and not math.isnan(float(value))}
    if failed:
        values.update({name: math.nan for name, value in sample.values.items()
                       if name in judge_metrics and name not in values})
    metadata = dict(sample.details)
    if transcript:
        metadata["judge_calls"] = transcript
    reason = "grader_failed" if failed else None
    if not any(not math.isnan(value) for value in values.values()):
        return Score.unscored(reason=reason, answer=output[:2000],
                              explanation=sample.explanation, metadata=metadata)
    return Score(value=values, answer=output[:2000], explanation=sample.explanation,
                 reason=reason, metadata=metadata)


def max_failed_option(value: Any) -> int:
    """``-T judge_max_failed`` as a count (None: the environment's default)."""
    if value is None:
        return settings.judge_max_failed()
    return settings.checked_number(value, int, "-T judge_max_failed", "a whole number >= 0",
                                   lambda number: number >= 0)


@metric
def benchmark_metrics(benchmark_name: str, options: dict[str, Any], judged: bool,
                      judge_max_failed: int = 0,
                      bootstrap_resamples: int = uncertainty.DEFAULT_RESAMPLES) -> Metric:
    """Every corpus metric of the benchmark, from the per-sample values and details, and
    its standard error ``<metric>_stderr`` (:func:`condambig_tasks.uncertainty.uncertainty`
    on the same samples, seeded; none with ``bootstrap_resamples=0``); past
    ``judge_max_failed`` failed judgements the judged ones and their stderr are NaN (the
    reasons: :mod:`condambig.null_reasons`)."""
    benchmark = registry.get(benchmark_name)
    typed_options = benchmark.options(options)

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        samples = scored_samples(
            [(score.sample_id, score.score.value, score.score.metadata) for score in scores])
        summary = run_summary(benchmark, typed_options, judged, judge_max_failed, samples)
        if not bootstrap_resamples or for_progress_display():  # values only, while it runs
            return {name: _number(value) for name, value in summary.values.items()}
        estimates = uncertainty.uncertainty(benchmark, samples, typed_options, judged,
                                            resamples=bootstrap_resamples)
        stderr, _ = uncertainty.estimates_json(estimates, summary.values)
        values = {}
        for name, value in summary.values.items():  # each one's stderr right after it
            values[name] = _number(value)
            values[name + STDERR_SUFFIX] = _number(stderr[name])
        return values

    return compute


def _number(value: float | None) -> float:
    return math.nan if value is None else float(value)
