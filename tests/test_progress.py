"""Progress lines of the long steps: counts, rate, ETA; throttled by a clock."""

from __future__ import annotations

import logging

from condambig_tasks.progress import Progress


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_logs_rate_and_eta_at_most_every_interval(caplog):
    clock = FakeClock()
    progress = Progress("judge", total=10, interval=5.0, clock=clock)
    with caplog.at_level(logging.INFO, logger="condambig"):
        clock.now += 2.0
        progress.advance(2)          # 2 s since start: under the interval, no line
        clock.now += 3.0
        progress.advance(3)          # 5 s: 5 done at 1.0/s, 5 left -> ETA 5 s
        clock.now += 1.0
        progress.advance(1)          # 1 s since the last line: throttled
        clock.now += 4.0
        progress.advance(4)          # the last unit always logs
    lines = [record.getMessage() for record in caplog.records]
    assert lines == [
        "judge: 5/10 (1.0/s, 0m05s elapsed, ETA 0m05s)",
        "judge: 10/10 (1.0/s, 0m10s elapsed, done)",
    ]


def test_small_steps_stay_quiet(caplog):
    progress = Progress("agent", total=40, interval=0.0, quiet_below=200)
    with caplog.at_level(logging.INFO, logger="condambig"):
        progress.advance(40)
    assert caplog.records == []
