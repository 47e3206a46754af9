"""Why each NaN metric of a condambig task is NaN, and which outputs were scored: the
benchmark score's metadata in the Inspect log, written once the run is over.

Inspect's metrics are numbers only, and a metric has no way to add text to the log while
the results are computed; the task's metadata is fixed before generation. A task-end hook
(run once per task, after Inspect has written the log) reads the log's own scores and
outputs and writes to the benchmark score's metadata::

    read_eval_log(path).results.scores[0].metadata["null_reasons"]    # {metric: reason}
    read_eval_log(path).results.scores[0].metadata["outputs_sha256"]  # the outputs scored

``null_reasons`` are computed from the scores exactly as the metric computed the values;
``outputs_sha256`` is :func:`condambig_tasks.provenance.outputs_sha256` of each scored
sample's completion by sample id, so ``condambig-score`` on the same outputs records the
same digest and ``condambig-score --from-log`` can tell an edited log. The hook also prints
one line per null headline (the headline metric and ``suite_score``), and the line of a
task that ended because its grader failed, with the log's path in its command. ``inspect score``
builds new results without running task hooks, so a log scored again carries neither (its
NaN metrics keep their meaning: see the samples).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.hooks import Hooks, RunEnd, TaskEnd, hooks
from inspect_ai.log import EvalLog, read_eval_log_async, write_eval_log_async

from condambig.run_summary import (
    ERRORED_JUDGEMENTS_KEY,
    STDERR_SUFFIX,
    JudgeFailedError,
    failed_judgements,
    run_summary,
    scored_samples,
)
from condambig_tasks import registry, settings
from condambig_tasks.benchmark import SUITE_SCORE
from condambig_tasks.errors import CondambigError
from condambig_tasks.inspect_samples import LoggedSample, LoggedScore, read_samples
from condambig_tasks.provenance import (
    OUTPUTS_SHA256_KEY,
    SCORING_SHA256_KEY,
    outputs_sha256,
    scoring_sha256,
)

logger = logging.getLogger("condambig")

NULL_REASONS_KEY = "null_reasons"
_METRIC_NAME = "benchmark_metrics"
_SCORER_NAME = "benchmark_scorer"


def metric_arguments(log: EvalLog) -> dict[str, Any] | None:
    """The ``benchmark_metrics`` arguments a condambig task recorded in its log."""
    for scorer in log.eval.scorers or []:
        for definition in scorer.metrics if isinstance(scorer.metrics, list) else []:
            if not isinstance(definition, dict) and \
                    definition.name.split("/")[-1] == _METRIC_NAME:
                return dict(definition.options or {})
    return None


def log_summary(log: EvalLog, samples: Sequence[LoggedSample]) -> Any:
    """The benchmark's :class:`~condambig_tasks.run.RunResult` over the log's reduced
    scores, counting also the failed judgements the metric could not see in the logged
    ``samples`` (None: not a condambig log, or no reductions)."""

    arguments = metric_arguments(log)
    if arguments is None or log.reductions is None:
        return None
    benchmark = registry.get(arguments["benchmark_name"])
    options = benchmark.options(arguments["options"])
    reduced = [reduction for reduction in log.reductions
               if reduction.scorer.endswith(_SCORER_NAME)]
    # one reduction view (several reducers: each view holds the same samples)
    reduced_scores = reduced[0].samples if reduced else []
    scores = [(score.sample_id, score.value, score.metadata) for score in reduced_scores]
    counted = sum(failed_judgements(score.metadata) for score in reduced_scores)
    return run_summary(benchmark, options, bool(arguments["judged"]),
                       int(arguments.get("judge_max_failed") or 0), scored_samples(scores),
                       unscored=unseen_failures(samples, counted))


def unseen_failures(samples: Sequence[LoggedSample], counted: int) -> int:
    """Failed judgements the benchmark metric was not given (from the logged samples):
    those of samples that ended in error because of the grader, which Inspect leaves out
    of the metrics under ``--no-fail-on-error`` or ``--fail-on-error N``, and those of
    epochs another ``--epochs-reducer`` dropped (it keeps one epoch's metadata);
    ``counted``: the failures the metric saw."""

    errored, scored = 0, 0
    for sample in samples:
        if sample.failed:
            failed = sample.store.get(ERRORED_JUDGEMENTS_KEY)
            if isinstance(failed, int) and not isinstance(failed, bool) and failed > 0:
                errored += failed
            continue
        for name, score in sample.scores.items():
            if name.endswith(_SCORER_NAME):
                scored += failed_judgements(score.metadata)
    return errored + max(0, scored - counted)


def withhold(results: Any, values: dict[str, float | None]) -> None:
    """Set the benchmark metrics (and their stderr) the summary withholds to NaN in
    ``results`` (an ``EvalResults``), in place."""

    for score in results.scores if results is not None else []:
        if not score.scorer.endswith(_SCORER_NAME):
            continue
        for name, metric in score.metrics.items():
            base = name.removesuffix(STDERR_SUFFIX)
            if base in values and values[base] is None:
                metric.value = math.nan


def scored_outputs_sha256(log: EvalLog, samples: Sequence[LoggedSample]) -> str | None:
    """The digest of the completions the benchmark scorer scored (samples that ended in an
    error have none; with several epochs each epoch's output counts, ``<id>@<epoch>``);
    None when the log holds no samples (``--no-log-samples``)."""
    if not samples:
        return None
    epochs = log.eval.config.epochs or 1
    return outputs_sha256(
        (sample.id if epochs == 1 else f"{sample.id}@{sample.epoch}", sample.completion)
        # the samples condambig-score --from-log rescores: every one without an error
        for sample in samples if not sample.failed)


async def add_results_metadata(log: EvalLog) -> dict[str, str]:
    """Write the null reasons and the outputs digest into the log at ``log.location`` (its
    header only: the samples stay as written); return the reasons."""
    if log.results is None or metric_arguments(log) is None or not log.location:
        return {}
    if log.location.endswith(".eval") and Path(log.location).is_file():
        # the header (with the reductions) through Inspect; the samples' outputs, scores
        # and stores through the project's reader (Inspect's streams every sample through
        # ijson: 1.3 s against 0.15 s for 1,000 AmbigNQ samples, far worse as logs grow)
        full = await read_eval_log_async(log.location, header_only=True)
        samples = await anyio.to_thread.run_sync(read_samples, log.location)
    else:  # a .json log (rewritten whole, samples included) or a remote one
        full = await read_eval_log_async(log.location, exclude_fields={"events", "messages"})
        samples = _logged_samples(full)
    summary = log_summary(full, samples)
    reasons = {} if summary is None else {
        name: reason for name, reason in summary.reasons.items()
        if summary.values.get(name) is None}
    if summary is not None:
        # failures the metric could not see withhold what it computed: in the log written
        # and in the results Inspect shows and returns
        withhold(full.results, summary.values)
        withhold(log.results, summary.values)
    added: dict[str, Any] = {NULL_REASONS_KEY: reasons} if reasons else {}
    digest = scored_outputs_sha256(full, samples)
    if digest is not None:
        added[OUTPUTS_SHA256_KEY] = digest
        recorded = full.eval.metadata or {}
        if isinstance(recorded.get("options"), dict) and recorded.get("benchmark"):
            # what --from-log recomputes from the log: options or version edited since fail it
            added[SCORING_SHA256_KEY] = scoring_sha256(
                recorded["benchmark"], recorded.get("full_task_version"), recorded["options"],
                digest)
    if not added or full.results is None:
        return reasons
    for score in full.results.scores:
        if score.scorer.endswith(_SCORER_NAME):
            score.metadata = {**(score.metadata or {}), **added}
    await write_eval_log_async(full, log.location, header_only=True)
    return reasons


def _logged_samples(full: EvalLog) -> list[LoggedSample]:
    """The samples of a log Inspect has read, as the project's reader gives them."""
    return [LoggedSample(
        id=str(sample.id), epoch=sample.epoch, failed=sample.error is not None,
        completion=sample.output.completion if sample.output else "",
        scores={name: LoggedScore(score.value, dict(score.metadata or {}), score.explanation)
                for name, score in (sample.scores or {}).items()},
        error=None if sample.error is None else sample.error.message,
        store=dict(sample.store or {})) for sample in full.samples or []]


def headline_lines(log: EvalLog, reasons: dict[str, str]) -> list[str]:
    """One line per null headline (the headline metric, ``suite_score``)."""
    headline = (log.eval.metadata or {}).get("headline_metric")
    where = log.location or "<log>"
    return [f"{log.eval.task}: {name} is NaN: {reasons[name]}".replace("<log>", where)
            for name in (headline, SUITE_SCORE) if name in reasons]


@hooks(name="condambig_null_reasons",
       description="Writes why each NaN condambig metric is NaN (null_reasons) and the "
                   "digests of the outputs scored and of the scoring (outputs_sha256, "
                   "scoring_sha256) into the log.")
class NullReasons(Hooks):
    async def on_task_end(self, data: TaskEnd) -> None:
        reasons = await add_results_metadata(data.log)
        for line in headline_lines(data.log, reasons):
            logger.warning("%s", line)
        if settings.record_dir() is not None and data.log.location:
            await anyio.to_thread.run_sync(write_record, data.log)

    async def on_run_end(self, data: RunEnd) -> None:
        # a task ended by an error gets no task-end call: its log is among the run's
        for log in data.logs:
            line = grader_failed_line(log)
            if line is not None:
                logger.warning("%s", line)


def write_record(log: EvalLog) -> None:
    """The task's run record in ``$CONDAMBIG_RECORD_DIR``, from the log as written (one
    line instead when the log cannot give one, e.g. a run of several epochs)."""
    from condambig_tasks import run_logs, run_record

    try:
        record = run_logs.record_of_log(Path(log.location))
    except CondambigError as error:
        logger.warning("%s: no run record: %s", log.eval.task, error)
        return
    path = settings.record_dir() / run_record.file_name(
        log.eval.task.removeprefix(registry.INSPECT_PREFIX), record.get("model"))
    try:
        run_record.write(path, record)
    except OSError as error:
        logger.warning("%s: no run record: cannot write %s (%s)", log.eval.task, path, error)
        return
    logger.info("%s: run record written to %s", log.eval.task, path)


def grader_failed_line(log: EvalLog) -> str | None:
    """The line of a task that ended because its grader refused every request or went away
    mid-run (Inspect shows the error with its traceback; this is the line to act on), with
    the log's path in the command it gives; None for any other log."""

    error = log.error
    if log.status != "error" or error is None:
        return None
    lines = [line for line in (error.traceback or "").splitlines() if line.strip()]
    mark = f"{JudgeFailedError.__name__}: "
    if not lines or mark not in lines[-1]:
        return None
    return lines[-1].split(mark, 1)[1].replace("<log>", log.location or "<log>")
