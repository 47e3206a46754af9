"""Whether a metric is being computed for Inspect's progress display, not for the results.

Inspect recomputes every metric of a task while its samples finish, to show them as the run
goes (inspect_ai 0.3.x: ``_eval/task/run.py``, the ``compute`` closure that
``update_metrics_display_fn`` returns, run at most every 0.9 s or ten times its own last
duration), then once more for the results. The benchmark metric's standard errors are a
cluster bootstrap (1,000 resamples, :mod:`condambig_tasks.uncertainty`): dozens of them in a
run whose model answers quickly, for numbers the display drops a second later. So the
display gets the values and the results get the values and their standard errors.

This reads a framework internal (the display's function, found on the call stack by its
qualified name); ``tests/test_inspect_stderr.py`` fails when Inspect changes it.
"""

from __future__ import annotations

import sys

DISPLAY_MODULE = "inspect_ai/_eval/task/run.py"
DISPLAY_COMPUTE = "update_metrics_display_fn.<locals>.compute"


def for_progress_display() -> bool:
    """Whether the caller runs inside Inspect's progress-display computation."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_qualname == DISPLAY_COMPUTE and _is_display_module(code.co_filename):
            return True
        frame = frame.f_back
    return False


def _is_display_module(filename: str) -> bool:
    return filename.replace("\\", "/").endswith(DISPLAY_MODULE)
