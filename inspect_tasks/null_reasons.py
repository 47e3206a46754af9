"""Why each NaN metric of a condambig task is NaN, in the Inspect log and on stderr.

Inspect's metrics are numbers only, and a metric has no way to add text to the log while
the results are computed. A task-end hook (run once per task, after Inspect has written
the log) computes the reasons from the log's own scores, exactly as the metric computed
the values, and writes them to the benchmark score's metadata::

    read_eval_log(path).results.scores[0].metadata["null_reasons"]   # {metric: reason}

It also prints one line per null headline (the headline metric and ``suite_score``).
``inspect score`` builds new results without running task hooks, so a log scored again
carries no ``null_reasons`` (its NaN metrics keep their meaning: see the samples).
"""

from __future__ import annotations

import logging
from typing import Any

from inspect_ai.hooks import Hooks, TaskEnd, hooks
from inspect_ai.log import EvalLog, read_eval_log_async, write_eval_log_async

from condambig_tasks import registry
from condambig_tasks.benchmark import SUITE_SCORE

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
    from condambig._factory import run_summary

    arguments = metric_arguments(log)
    if arguments is None or log.reductions is None:
        return {}
    benchmark = registry.get(arguments["benchmark_name"])
    options = benchmark.options(arguments["options"])
    scores = [(score.sample_id, score.value, score.metadata)
              for reduction in log.reductions if reduction.scorer.endswith("benchmark_scorer")
              for score in reduction.samples]
    summary = run_summary(benchmark, options, bool(arguments["judged"]),
                          int(arguments.get("judge_max_failed") or 0), scores)
    return {name: reason for name, reason in summary.reasons.items()
            if summary.values.get(name) is None}


async def add_null_reasons(log: EvalLog) -> dict[str, str]:
    """Write the null reasons into the log file at ``log.location``; return them."""
    if log.results is None or metric_arguments(log) is None or not log.location:
        return {}
    full = log if log.reductions is not None else await read_eval_log_async(log.location)
    reasons = null_reasons_of(full)
    if not reasons or full.results is None:
        return reasons
    for score in full.results.scores:
        if score.scorer.endswith("benchmark_scorer"):
            score.metadata = {**(score.metadata or {}), NULL_REASONS_KEY: reasons}
    await write_eval_log_async(full, log.location)
    return reasons


def headline_lines(log: EvalLog, reasons: dict[str, str]) -> list[str]:
    """One line per null headline (the headline metric, ``suite_score``)."""
    headline = (log.eval.metadata or {}).get("headline_metric")
    where = log.location or "<log>"
    return [f"{log.eval.task}: {name} is NaN: {reasons[name]}".replace("<log>", where)
            for name in (headline, SUITE_SCORE) if name in reasons]


@hooks(name="condambig_null_reasons",
       description="Writes why each NaN condambig metric is NaN into the log (null_reasons).")
class NullReasons(Hooks):
    async def on_task_end(self, data: TaskEnd) -> None:
        reasons = await add_null_reasons(data.log)
        for line in headline_lines(data.log, reasons):
            logger.warning("%s", line)
