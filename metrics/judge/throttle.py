"""How fast one judge endpoint may be asked: a shared gate, adaptive concurrency and a pace.

When the endpoint answers "slow down" (HTTP 429, or 503 with ``Retry-After``), every request
of the engine waits, not only the one that was refused:

- **Gate.** No request starts before the endpoint's ``Retry-After`` has passed (RFC 9110,
  section 10.2.3), or a shared exponential backoff when it named no time.
- **Concurrency (AIMD).** The number of requests in flight grows by one per success up to
  the configured bound and is halved once per rate-limit event, as TCP's congestion window
  does (Jacobson, "Congestion avoidance and control", SIGCOMM 1988).
- **Start.** An engine starts with one request in flight and, until the first rate-limit
  event, the number allowed also doubles every ``_START_DOUBLING_SECONDS`` (25 ms): the
  bound of 64 is reached after 0.15 s whatever the endpoint's latency, where growing per
  success alone takes six round trips (3 s at 500 ms per call, a third of a 500-judgement
  run at concurrency 64). A refusal for rate comes back without any generation, so an
  endpoint that rate-limits says so after a few requests; against a distant one, the
  first burst is at most the requests started within one round trip.
- **Pace.** With fast replies a bound on requests in flight does not bound requests per
  second, so after a rate-limit event requests are also spaced by the rate the endpoint
  let through since the previous event (successes over that time plus the wait it asked
  for); the pace grows by 5 % per success until the endpoint refuses again, and doubles per
  success when the slow-down came from refusals that named no wait (a guess: one success
  undoes one halving).
- **Intermittent refusals.** A refusal that names no wait, while no more than half of the
  last :data:`_RECENT_OUTCOMES` requests were refused, closes the gate for the shared
  backoff but slows nothing down: an endpoint that answers every other request whatever
  the pace is not asking for a lower one (each halving would be permanent, down to
  :data:`_MIN_PACE`), so such a judge runs at about half its clean speed. The tolerance
  is client-side adaptive throttling's (Beyer et al., "Site Reliability Engineering",
  O'Reilly 2016, chapter 21: requests up to twice the accepts).
- **Budget.** A request waiting at the gate carries the time its judgement's retry budget
  ends (a retry), or the whole budget (a first attempt, whose budget has not started); a
  gate closed past it (a ``Retry-After`` of decades, a date in 2100) fails that request at
  once with :class:`WaitBeyondBudget` instead of holding it forever.

Before the first rate-limit event nothing else is limited.
Requests that are retried go before requests not yet sent, so a judgement's wait depends
on the other retries, not on the length of the run.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections import deque
from typing import Any

_PACE_GROWTH = 1.05  # per success
_GUESSED_PACE_GROWTH = 2.0  # per success, after a slow-down no Retry-After asked for
_RECENT_OUTCOMES = 32  # requests whose outcome tells intermittent refusals from a limit
_MIN_PACE = 0.05  # requests per second
_START_DOUBLING_SECONDS = 0.025  # before the first rate-limit event


class WaitBeyondBudget(Exception):
    """The gate opens after the waiting request's retry budget ends (``wait`` seconds from
    now)."""

    def __init__(self, wait: float):
        super().__init__(f"the endpoint asked to wait {wait:g} s")
        self.wait = wait


class EndpointThrottle:
    """Admission of requests to one endpoint; rebinds itself to the running event loop."""

    def __init__(self, concurrency: int, backoff_initial_seconds: float,
                 backoff_max_seconds: float):
        self.max_concurrency = concurrency
        self.backoff_initial_seconds = backoff_initial_seconds
        self.backoff_max_seconds = backoff_max_seconds
        self.limit = 1.0  # requests allowed in flight
        self.pace: float | None = None  # requests per second; None: not paced
        self.open_at = 0.0  # time.monotonic() before which no request starts
        self._next_start = 0.0
        self._backoff = 0.0
        self._last_event: float | None = None
        self._period_start: float | None = None
        self._successes = 0
        self._start: float | None = None  # time.monotonic() of the first request; None
        self._starting = True  # until the first rate-limit event
        self._recent: deque[bool] = deque(maxlen=_RECENT_OUTCOMES)  # True: let through
        self._pace_named = True  # the last slow-down came with a wait the endpoint named
        self._bind(None)

    def _bind(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self._loop = loop
        self._in_flight = 0
        # (priority, order, future, (deadline: time.monotonic() its budget ends, or None;
        # budget: the seconds it may wait, or None))
        self._waiters: list[tuple[int, int, asyncio.Future[float],
                                  tuple[float | None, float | None]]] = []
        self._order = itertools.count()
        self._wake: asyncio.TimerHandle | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(_loop=None, _in_flight=0, _waiters=[], _order=None, _wake=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._start = None  # time.monotonic() is per process
        self._bind(None)

    async def acquire(self, retry: bool = False, deadline: float | None = None,
                      budget: float | None = None) -> float:
        """Wait for a slot; returns when the request started (``time.monotonic()``).
        Raises :class:`WaitBeyondBudget` when the gate stays closed past ``deadline``, or
        longer than ``budget`` seconds from when it closed.

        Call :meth:`release` when the request is done, whatever its outcome.
        """
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._bind(loop)
        if self._period_start is None:
            self._period_start = time.monotonic()
        if self._start is None:
            self._start = time.monotonic()
        future: asyncio.Future[float] = loop.create_future()
        heapq.heappush(self._waiters, (0 if retry else 1, next(self._order), future,
                                      (deadline, budget)))
        self._admit()
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # granted, but the caller is gone
            raise

    def release(self) -> None:
        self._in_flight -= 1
        self._admit()

    def succeeded(self) -> None:
        self._successes += 1
        self._recent.append(True)
        self._backoff = 0.0
        self.limit = min(float(self.max_concurrency), self.limit + 1)
        if self.pace is not None:
            self.pace *= _PACE_GROWTH if self._pace_named else _GUESSED_PACE_GROWTH

    def rate_limited(self, retry_after: float | None, sent_at: float) -> None:
        """The endpoint refused a request sent at ``sent_at`` for its rate: close the gate;
        slow down once per event (requests sent before the last slow-down do not count)."""
        now = time.monotonic()
        self._recent.append(False)
        if retry_after is None:
            self._backoff = (self.backoff_initial_seconds if not self._backoff
                             else min(self._backoff * 2, self.backoff_max_seconds))
            wait = self._backoff
        else:
            wait = retry_after
        self.open_at = max(self.open_at, now + wait)
        if retry_after is None and self.intermittent():
            self._admit()  # the gate's backoff only
            return
        if self._starting:  # the start's doubling ends; AIMD goes on from where it got
            self.limit = max(self.limit, self._started_limit(now))
            self._starting = False
        if self._last_event is None or sent_at >= self._last_event:
            elapsed = now - (self._period_start or now) + wait
            if self._successes and elapsed > 0:
                self.pace = max(_MIN_PACE, self._successes / elapsed)
            elif self.pace is not None:
                self.pace = max(_MIN_PACE, self.pace / 2)
            self.limit = max(1.0, self.limit / 2)
            self._pace_named = retry_after is not None
            self._last_event = now
            self._period_start = now
            self._successes = 0
        self._admit()

    def intermittent(self) -> bool:
        """No more than half of the recent requests were refused (the latest included)."""
        refused = self._recent.count(False)
        return 2 * refused <= len(self._recent)

    def _admit(self) -> None:
        """Start as many waiting requests as the gate, the limit and the pace allow."""
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None
        self._fail_past_budget()
        while self._waiters:
            if self._waiters[0][2].done():  # cancelled while waiting
                heapq.heappop(self._waiters)
                continue
            now = time.monotonic()
            limit = self.limit
            if self._starting:
                limit = max(limit, self._started_limit(now))
            if self._in_flight >= max(1, int(limit)):
                # a release admits the next one, or the start's next doubling step
                if self._starting and limit < self.max_concurrency and self._loop is not None:
                    step = self._start_step(self._in_flight + 1)
                    self._wake = self._loop.call_later(max(0.0, step - now), self._admit)
                return
            ready_at = max(self.open_at, self._next_start)
            if now < ready_at:
                if self._loop is not None:
                    self._wake = self._loop.call_later(ready_at - now, self._admit)
                return
            _, _, future, _ = heapq.heappop(self._waiters)
            self._in_flight += 1
            if self.pace is not None:
                self._next_start = max(now, self._next_start) + 1 / self.pace
            future.set_result(now)

    def _fail_past_budget(self) -> None:
        """Fail at once the waiting requests whose budget ends before the gate opens."""
        now = time.monotonic()
        late = [w for w in self._waiters if not w[2].done() and _ends_before(w[3], now,
                                                                           self.open_at)]
        if not late:
            return
        self._waiters = [w for w in self._waiters if w not in late]
        heapq.heapify(self._waiters)
        for _, _, future, _ in late:
            future.set_exception(WaitBeyondBudget(self.open_at - now))

    def _started_limit(self, now: float) -> float:
        """Requests allowed in flight by the start's doubling at ``now``."""
        if self._start is None:
            return 1.0
        doublings = (now - self._start) / _START_DOUBLING_SECONDS
        return min(float(self.max_concurrency), 2.0 ** min(doublings, 64.0))

    def _start_step(self, count: int) -> float:
        """When the start's doubling allows ``count`` requests in flight."""
        return (self._start or 0.0) + _START_DOUBLING_SECONDS * math.log2(count) + 1e-6


def _ends_before(limits: tuple[float | None, float | None], now: float, open_at: float) -> bool:
    """Whether a waiting request's budget ends before the gate opens."""
    deadline, budget = limits
    if deadline is not None:
        return deadline < open_at
    return budget is not None and now + budget < open_at
