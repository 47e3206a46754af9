"""Progress of the long steps (judge calls, agent models) and the project's log output.

lm-eval and Inspect configure their own loggers, not ours, so without
:func:`show_project_logs` the project's INFO lines never appear. :class:`Progress` logs
"label: done/total (rate/s, ETA)" at most every ``interval`` seconds and once at the end,
the way the frameworks show generation progress.
"""

from __future__ import annotations

import logging
import sys
import threading
import time

LOGGER_NAME = "condambig"
# the project's logger trees (module loggers are named after their import packages)
PROJECT_LOGGERS = ("condambig", "condambig_tasks", "condambig_metrics")
logger = logging.getLogger(LOGGER_NAME)

# done / total / failed per step label over the whole process (what an interrupted run
# has finished)
_TALLY: dict[str, list[int]] = {}
_TALLY_LOCK = threading.Lock()


def tally() -> dict[str, tuple[int, int]]:
    """Units done and kept (a failed unit, such as a failed judgement, is not: a rerun
    does it again) and units to do per step label, over every :class:`Progress` so far."""
    with _TALLY_LOCK:
        return {label: (done - failed, total) for label, (done, total, failed) in _TALLY.items()}


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (test runners swap it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def show_project_logs(level: int = logging.INFO) -> None:
    """Print the project's log records (INFO and up) on stderr, once per process."""
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s [%(name)s] %(message)s",
                                           "%H:%M:%S"))
    for name in PROJECT_LOGGERS:
        tree = logging.getLogger(name)
        if any(getattr(h, "_condambig", False) for h in tree.handlers):
            continue
        handler._condambig = True  # type: ignore[attr-defined]
        tree.addHandler(handler)
        tree.setLevel(level)
        tree.propagate = False


class Progress:
    """Counts finished units of one step and logs the rate and the time left."""

    def __init__(self, label: str, total: int, *, interval: float = 10.0,
                 clock=time.monotonic, quiet_below: int = 0) -> None:
        self.label = label
        self.total = total
        # a step this small (e.g. one Inspect sample's candidates) logs nothing
        self.quiet = total < quiet_below
        self.done = 0
        self.failures = 0  # of those done: finished without a result
        self.interval = interval
        self._clock = clock
        self._start = clock()
        self._last = self._start
        self._lock = threading.Lock()
        with _TALLY_LOCK:
            _TALLY.setdefault(label, [0, 0, 0])[1] += total

    def failed(self, count: int = 1) -> None:
        """``count`` of the units advanced (or about to be) finished without a result to
        keep: the progress line counts them done, the tally of kept work does not."""
        with _TALLY_LOCK:
            _TALLY.setdefault(self.label, [0, 0, 0])[2] += count
        with self._lock:
            self.failures += count

    def advance(self, count: int = 1) -> None:
        with _TALLY_LOCK:
            _TALLY.setdefault(self.label, [0, 0, 0])[0] += count
        with self._lock:
            self.done += count
            now = self._clock()
            if self.quiet:
                return
            if self.done >= self.total or now - self._last >= self.interval:
                self._last = now
                logger.info("%s", self.line(now))

    def line(self, now: float | None = None) -> str:
        elapsed = max((self._clock() if now is None else now) - self._start, 1e-9)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        eta = "done" if self.done >= self.total else (
            f"ETA {_duration(left)}" if left != float("inf") else "ETA unknown")
        if not self.failures:
            return (f"{self.label}: {self.done}/{self.total} ({rate:.1f}/s, "
                    f"{_duration(elapsed)} elapsed, {eta})")
        # failed units are finished but not done: never "N/N done" over failures
        eta = "ended" if self.done >= self.total else eta
        return (f"{self.label}: {self.done - self.failures}/{self.total}, {self.failures} "
                f"failed ({rate:.1f}/s, {_duration(elapsed)} elapsed, {eta})")


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s"
