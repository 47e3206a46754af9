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
one line per null headline (the headline metric and ``suite_score``). ``inspect score``
builds new results without running task hooks, so a log scored again carries neither (its
NaN metrics keep their meaning: see the samples).
"""

from __future__ import annotations

import logging
from typing import Any

from inspect_ai.hooks import Hooks, TaskEnd, hooks
from inspect_ai.log import EvalLog, read_eval_log_async, write_eval_log_async

from condambig_tasks import registry
from condambig_tasks.benchmark import SUITE_SCORE
from condambig_tasks.provenance import OUTPUTS_SHA256_KEY, outputs_sha256

logger = logging.getLogger("condambig")

NULL_REASONS_KEY = "null_reasons"
_METRIC_NAME = "benchmark_metrics"


def metric_arguments(log: EvalLog) -> dict[str, Any] | None:
    """The ``benchmark_metrics`` arguments a condambig task recorded in its log."""
    for scorer in log.eval.scorers or []:
        for definition in scorer.metrics if isinstance(scorer.metrics, list) else []:
            if not isinstance(definition, dict) and \
                    definition.name.split("/")[-1] == _METRIC_NAME:
                return dict(definition.options or {})
    return None


def null_reasons_of(log: EvalLog) -> dict[str, str]:
    """``{metric: reason}`` for every reported metric of ``log`` without a value."""
    from condambig._factory import run_summary, scored_samples

    arguments = metric_arguments(log)
    if arguments is None or log.reductions is None:
        return {}
    benchmark = registry.get(arguments["benchmark_name"])
    options = benchmark.options(arguments["options"])
    scores = [(score.sample_id, score.value, score.metadata)
              for reduction in log.reductions if reduction.scorer.endswith("benchmark_scorer")
              for score in reduction.samples]
    summary = run_summary(benchmark, options, bool(arguments["judged"]),
                          int(arguments.get("judge_max_failed") or 0),
                          scored_samples(scores))
    return {name: reason for name, reason in summary.reasons.items()
            if summary.values.get(name) is None}


def scored_outputs_sha256(log: EvalLog) -> str | None:
    """The digest of the completions the benchmark scorer scored (samples that ended in an
    error have none; with several epochs each epoch's output counts, ``<id>@<epoch>``);
    None when the log holds no samples (``--no-log-samples``)."""
    if not log.samples:
        return None
    epochs = log.eval.config.epochs or 1
    return outputs_sha256(
        (str(sample.id) if epochs == 1 else f"{sample.id}@{sample.epoch}",
         sample.output.completion if sample.output else "")
        # the samples condambig-score --from-log rescores: every one without an error
        for sample in log.samples if sample.error is None)


async def add_results_metadata(log: EvalLog) -> dict[str, str]:
    """Write the null reasons and the outputs digest into the log at ``log.location`` (its
    header only: the samples stay as written); return the reasons."""
    if log.results is None or metric_arguments(log) is None or not log.location:
        return {}
    # the samples' outputs and scores, not their transcripts (the header write keeps them)
    full = await read_eval_log_async(log.location, exclude_fields={"events", "messages"})
    reasons = null_reasons_of(full)
    added: dict[str, Any] = {NULL_REASONS_KEY: reasons} if reasons else {}
    digest = scored_outputs_sha256(full)
    if digest is not None:
        added[OUTPUTS_SHA256_KEY] = digest
    if not added or full.results is None:
        return reasons
    for score in full.results.scores:
        if score.scorer.endswith("benchmark_scorer"):
            score.metadata = {**(score.metadata or {}), **added}
    await write_eval_log_async(full, log.location, header_only=True)
    return reasons


def headline_lines(log: EvalLog, reasons: dict[str, str]) -> list[str]:
    """One line per null headline (the headline metric, ``suite_score``)."""
    headline = (log.eval.metadata or {}).get("headline_metric")
    where = log.location or "<log>"
    return [f"{log.eval.task}: {name} is NaN: {reasons[name]}".replace("<log>", where)
            for name in (headline, SUITE_SCORE) if name in reasons]


@hooks(name="condambig_null_reasons",
       description="Writes why each NaN condambig metric is NaN (null_reasons) and the "
                   "digest of the outputs scored (outputs_sha256) into the log.")
class NullReasons(Hooks):
    async def on_task_end(self, data: TaskEnd) -> None:
        reasons = await add_results_metadata(data.log)
        for line in headline_lines(data.log, reasons):
            logger.warning("%s", line)
