"""The throttle's state under refusals that name no wait, on a fake clock (no seconds are
measured): intermittent refusals neither collapse the pace nor the concurrency, a pace
lowered by them comes back within a few successes, and refusals that dominate still slow
the engine down."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from condambig_metrics.judge import throttle as throttle_module
from condambig_metrics.judge.throttle import EndpointThrottle

CLEAN_RATE = 100.0  # requests per second of the simulated endpoint (one every 10 ms)
CONCURRENCY = 32


@pytest.fixture
def clock(monkeypatch):
    fake = SimpleNamespace(now=1000.0)
    monkeypatch.setattr(throttle_module, "time", SimpleNamespace(monotonic=lambda: fake.now))
    return fake


def _throttle(clock) -> EndpointThrottle:
    throttle = EndpointThrottle(CONCURRENCY, backoff_initial_seconds=0.001,
                                backoff_max_seconds=0.01)
    throttle._period_start = throttle._start = clock.now  # as the first acquire() sets them
    return throttle


def _answer(throttle: EndpointThrottle, clock, outcomes) -> None:
    """Each outcome, one request every 1 / CLEAN_RATE s: True answered, False a 429 that
    names no wait."""
    for answered in outcomes:
        sent = clock.now
        clock.now += 1 / CLEAN_RATE
        if answered:
            throttle.succeeded()
        else:
            throttle.rate_limited(None, sent)


def test_a_judge_answering_half_the_requests_keeps_its_pace_and_concurrency(clock):
    throttle = _throttle(clock)
    draw = random.Random(7)
    _answer(throttle, clock, [draw.random() < 0.5 for _ in range(400)])
    # the engine may still send at (about) the clean rate, half of it answered
    assert throttle.pace is None or throttle.pace >= CLEAN_RATE / 2, throttle.pace
    assert throttle.limit >= CONCURRENCY / 2, throttle.limit


def test_a_pace_lowered_by_refusals_comes_back_within_a_few_successes(clock):
    throttle = _throttle(clock)
    _answer(throttle, clock, [True] * 20 + [False] * 30)  # refusals come to dominate
    lowered = throttle.pace
    assert lowered is not None and lowered < CLEAN_RATE / 100
    _answer(throttle, clock, [True] * 12)
    assert throttle.pace >= CLEAN_RATE


def test_refusals_that_dominate_still_slow_the_engine_down(clock):
    throttle = _throttle(clock)
    _answer(throttle, clock, [True] * 10 + [False, False, False, True] * 20)
    assert throttle.pace is not None and throttle.pace < CLEAN_RATE / 2
    assert throttle.limit < CONCURRENCY / 2
