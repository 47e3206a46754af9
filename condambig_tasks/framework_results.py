"""Reading the numbers lm-eval and Inspect wrote: shared by ``condambig-score --from-log``
(``run_logs``) and ``condambig-report`` (``report.inputs``), so both read a run alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from condambig_tasks.benchmark import finite_number

LM_EVAL_FILTER = "none"  # our tasks define no filters: every metric key ends in ",none"


def lm_eval_task_metrics(
    values: Mapping[str, Any],
) -> tuple[dict[str, float | None], dict[str, float]]:
    """One task's entry of lm-eval's ``results``: metric -> value (None: NaN) and
    metric -> standard error (only where lm-eval gave a number, not ``"N/A"``)."""
    metrics: dict[str, float | None] = {}
    stderr: dict[str, float] = {}
    for key, value in values.items():
        name, _, filter_name = key.partition(",")
        if filter_name != LM_EVAL_FILTER:
            continue
        if name.endswith("_stderr"):
            number = finite_number(value)
            if number is not None:
                stderr[name[: -len("_stderr")]] = number
        else:
            metrics[name] = finite_number(value)
    return metrics, stderr
