"""The standard error of every condambig metric in lm-eval's results (``<metric>_stderr,none``).

lm-eval 0.4.13 computes a task's standard errors in
``lm_eval.evaluator_utils._compute_task_aggregations``: per metric,
``stderr_for_metric(aggregation, bootstrap_iters)`` (``lm_eval/api/metrics.py``), which knows
lm-eval's own aggregation functions only (``mean`` -> ``mean_stderr``; ``bleu``, ``f1_score``
and a few more -> ``bootstrap_stderr`` over the per-document items) and gives every other
aggregation ``"N/A"``. No supported route gives a task's own numbers there:

- a task's ``aggregation()`` gives one function per metric, called with that metric's
  items only, and lm-eval looks its stderr up by the function's identity;
- ``process_results`` keys are metrics: an extra ``<metric>_stderr`` metric would be
  written, but beside a ``<metric>_stderr_stderr: "N/A"`` of its own, as a pseudo-metric in
  every logged sample and in ``higher_is_better``, and without ``bootstrap_iters``;
- our standard errors need the whole run, not one metric's items: the resampling unit (an
  Abg-CoQA conversation, a ConditionalQA document: :mod:`condambig_tasks.uncertainty`) and
  the corpus metrics recomputed on each resample, while a MEAN metric's items are numbers.

So the least invasive route is taken: ``_compute_task_aggregations`` as
``evaluator_utils`` looks it up (a module global, called by ``_collect_results``) is
wrapped. The wrapper runs lm-eval's own function unchanged, then, for a task that has a
``standard_errors(raw_metrics, bootstrap_iters)`` method
(:class:`~condambig_tasks.lm_eval_task.CondambigTask`), replaces the ``"N/A"`` of each metric
that has a number; every other task's result is untouched, and ``bootstrap_iters`` 0 or None
keeps lm-eval's meaning (no standard errors). lm-eval's group aggregation then combines the
leaves' numbers as for any task (``unweighted_mean_stderr`` for an unweighted group). If a
later lm-eval changes the function's signature, the wrapper is not installed and the
standard errors stay ``"N/A"`` (a warning says so).
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("condambig")

EXPECTED_PARAMETERS = ("task", "raw_metrics", "bootstrap_iters")
_MARK = "__condambig_standard_errors__"


def install() -> bool:
    """Wrap ``lm_eval.evaluator_utils._compute_task_aggregations`` once per process;
    whether the wrapper is in place."""
    from lm_eval import evaluator_utils

    original = getattr(evaluator_utils, "_compute_task_aggregations", None)
    if original is None:
        return _not_installed("lm_eval.evaluator_utils has no _compute_task_aggregations")
    if getattr(original, _MARK, False):
        return True
    parameters = tuple(inspect.signature(original).parameters)
    if parameters != EXPECTED_PARAMETERS:
        return _not_installed(f"_compute_task_aggregations{parameters} is not the "
                              f"lm-eval 0.4.13 signature {EXPECTED_PARAMETERS}")
    evaluator_utils._compute_task_aggregations = with_task_standard_errors(original)
    return True


def with_task_standard_errors(original: Callable[..., tuple[dict[str, Any], int]],
                              ) -> Callable[..., tuple[dict[str, Any], int]]:
    @functools.wraps(original)
    def compute(task: Any, raw_metrics: Any, bootstrap_iters: int | None = 100000,
                ) -> tuple[dict[str, Any], int]:
        metrics, sample_len = original(task, raw_metrics, bootstrap_iters)
        own = getattr(task, "standard_errors", None)
        if callable(own) and isinstance(bootstrap_iters, int) and bootstrap_iters > 0:
            try:
                metrics.update(own(raw_metrics, bootstrap_iters))
            except Exception as error:  # the generations and numbers are written regardless
                logger.warning("condambig: %s: the standard errors stay N/A (%s: %s)",
                               getattr(task, "task_name", task), type(error).__name__, error)
        return metrics, sample_len

    setattr(compute, _MARK, True)
    return compute


@functools.cache  # said once per process: every task built tries to install
def _not_installed(why: str) -> bool:
    logger.warning("condambig: the tasks' standard errors stay N/A in lm-eval's results: %s",
                   why)
    return False
