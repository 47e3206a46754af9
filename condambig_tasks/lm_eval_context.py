"""What the lm-eval glue learns about the running evaluation from lm-eval's call stack.

lm-eval 0.4.13 hands a task's hooks only their arguments: ``custom_dataset`` its metadata
(called from ``ConfigurableTask.download``, whose ``self.config`` is the task config written
to ``configs.<task>`` of the results JSON), an aggregation function its items (called from
``evaluator_utils._compute_task_aggregations`` with the ``task`` in its locals, under
``_collect_results`` with the run's ``groups`` and ``simple_evaluate`` with the
``evaluation_tracker`` holding ``--output_path``). Each lookup walks a bounded number of
frames and returns None when lm-eval is not the caller (or has changed): the glue then
logs instead of recording.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_MAX_DEPTH = 40


def _find_local(name: str, accept: Callable[[Any], bool]) -> Any:
    frame = sys._getframe(1)
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return None
        value = frame.f_locals.get(name)
        if value is not None and accept(value):
            return value
        frame = frame.f_back
    return None


def calling_task_config() -> Any:
    """The config of the task whose ``custom_dataset`` is running (``config.metadata`` is
    written to the results JSON), or None."""
    task = _find_local("self", lambda value: hasattr(getattr(value, "config", None),
                                                     "custom_dataset"))
    config = None if task is None else task.config
    if config is not None and getattr(config, "metadata", None) is None:
        config.metadata = {}
    return config if config is not None and hasattr(config, "metadata") else None


def aggregating_task() -> Any:
    """The lm-eval task whose metrics are being aggregated (``task.task_name``,
    ``task.config``), or None."""
    return _find_local("task", lambda value: hasattr(value, "task_name")
                       and hasattr(value, "config"))


def run_groups() -> dict[str, Any]:
    """The run's groups by name (lm-eval ``Group`` objects), empty when unknown."""
    groups = _find_local("groups", lambda value: isinstance(value, dict))
    return dict(groups) if groups else {}


@dataclass(frozen=True)
class RunOutput:
    """Where lm-eval writes this run: ``--output_path`` (None: nothing is written) and
    whether ``--log_samples`` keeps every output (what ``--from-log`` needs)."""

    output_path: str | None
    log_samples: bool


def run_output() -> RunOutput | None:
    """``--output_path`` / ``--log_samples`` of the run (from ``simple_evaluate``), or None."""
    frame = sys._getframe(1)
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return None
        tracker = frame.f_locals.get("evaluation_tracker")
        if tracker is not None and hasattr(tracker, "output_path") \
                and "log_samples" in frame.f_locals:
            path = tracker.output_path
            return RunOutput(str(path) if path else None, bool(frame.f_locals["log_samples"]))
        frame = frame.f_back
    return None


def running_lm_eval_command() -> bool:
    """This process is the ``lm_eval`` command (its console script, ``python -m lm_eval``
    or ``accelerate launch -m lm_eval``), not a program calling ``simple_evaluate``."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", "") or ""
    return "lm_eval.__main__" in sys.modules or name in {"lm_eval", "lm_eval.__main__"}
