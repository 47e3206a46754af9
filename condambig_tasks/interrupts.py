"""Stopping a run on Ctrl-C (SIGINT) or SIGTERM without losing what it has computed.

Long steps keep their results as they arrive — each judgement in the judge cache, each
batch of HotpotQA-FLM agent work in the agent cache (:mod:`condambig_tasks.hotpot_flm.resumable`)
— so a stopped run resumes on the next run. What is left is a clean stop:

- SIGTERM is handled as SIGINT (:func:`sigterm_as_sigint`): under :func:`asyncio.run` the
  run's task is cancelled and stops at its next ``await``; outside it ``KeyboardInterrupt``
  is raised as for Ctrl-C.
- A batch running in a worker thread cannot be stopped part-way (a forward pass is one
  call); it finishes and is stored. :func:`batch_in_flight` marks such work and
  :func:`settle` waits for it, so the summary counts it.
- :func:`interrupted_line` is the one line the user sees: what is cached, and to run again.
- :func:`exit_now` ends the process without the interpreter's teardown, which takes a
  second or more once torch and transformers are loaded: everything kept is already
  committed to the sqlite caches, so nothing is lost by skipping it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator

from condambig_tasks.progress import tally

EXIT_CODE = 130  # 128 + SIGINT, the shells' convention for a run stopped by Ctrl-C

_in_flight = 0
_in_flight_changed = threading.Condition()


@contextlib.contextmanager
def sigterm_as_sigint() -> Iterator[None]:
    """Within the block SIGTERM does what SIGINT does (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigterm(signum, frame) -> None:
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):  # asyncio's runner (cancels the run) or default_int_handler
            handler(signal.SIGINT, frame)
        else:  # SIGINT ignored (a background job): stop anyway, as SIGTERM asks
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def batch_in_flight() -> Iterator[None]:
    """Marks a batch being computed and stored in a worker thread (see :func:`settle`)."""
    global _in_flight
    with _in_flight_changed:
        _in_flight += 1
    try:
        yield
    finally:
        with _in_flight_changed:
            _in_flight -= 1
            _in_flight_changed.notify_all()


def settle(timeout: float | None = None) -> bool:
    """Wait until no batch is in flight; False when ``timeout`` seconds passed first."""
    with _in_flight_changed:
        return _in_flight_changed.wait_for(lambda: _in_flight == 0, timeout)


def cached_summary() -> str:
    """What the run's steps finished (and so cached), e.g. ``judge m 12/28``."""
    parts = [f"{label} {done}/{total}" for label, (done, total) in tally().items() if total]
    return ", ".join(parts)


def interrupted_line(prefix: str) -> str:
    """The one line shown for an interrupted run, after in-flight batches are stored."""
    try:
        settle()
    except KeyboardInterrupt:  # a second Ctrl-C: do not wait for the batch in progress
        pass
    summary = cached_summary()
    if not summary:
        return f"{prefix}: interrupted before anything was cached."
    return f"{prefix}: interrupted; cached: {summary}; run again to resume."


def exit_now(code: int = EXIT_CODE) -> None:
    """Flush the output and logs, then end the process at once with ``code``."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
