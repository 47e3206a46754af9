"""A circuit breaker for a judge endpoint that stops accepting connections.

A judge that dies mid-run (its process killed, its port closed) refuses every connection,
and each refusal comes back in microseconds: retried per judgement, thousands of requests
go to the dead port within seconds, and each judgement fails only after its own retries.
The breaker counts connection failures (refused, reset, closed unanswered) across all
requests. After :data:`TRIP_AFTER` in a row, no request is sent but one probe at a time,
spaced out (1, 2, 4 s by default); a probe that gets any answer closes the breaker again,
and when :data:`PROBES` probes in a row fail too the endpoint is declared gone: every
waiting and later request fails at once as an endpoint failure, without being sent.

Only connection failures count. Any answer (an HTTP error, a 429, a malformed body) or a
timeout (a slow judge) resets the count, so a slow or rate-limiting judge never trips it;
but only an answer to a request sent after the latest connection failure: one that was
sent before says nothing of the endpoint now (a slow answer from before the death would
otherwise reopen the gate for another round of failures).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from condambig_metrics.judge.errors import PermanentJudgeError

logger = logging.getLogger(__name__)

TRIP_AFTER = 5  # connection failures in a row, across requests
PROBES = 3  # probes in a row that fail before the endpoint is declared gone


class ConnectionBreaker:
    """Admission of requests while an endpoint refuses connections; rebinds itself to the
    running event loop."""

    def __init__(self, trip_after: int = TRIP_AFTER, probes: int = PROBES,
                 probe_seconds: float = 1.0):
        self.trip_after = trip_after
        self.probes = probes
        self.probe_seconds = probe_seconds
        self.consecutive = 0  # connection failures in a row
        self.probes_sent = 0  # probes sent since the breaker opened
        self.gone: PermanentJudgeError | None = None
        self._probing = False
        self._next_probe = 0.0
        self._opened_at = 0.0
        self._failed_at = float("-inf")  # when the latest connection failure came back
        self._event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def open(self) -> bool:
        return self.consecutive >= self.trip_after

    async def admit(self) -> bool:
        """Wait until a request may be sent; True when it goes as the probe (report its
        outcome with :meth:`report`). Raises the endpoint failure once the endpoint is gone."""
        while True:
            if self.gone is not None:
                raise self.gone
            if not self.open:
                return False
            now = time.monotonic()
            if not self._probing and now >= self._next_probe:
                self._probing = True
                self.probes_sent += 1
                return True
            timeout = None if self._probing else self._next_probe - now
            try:
                await asyncio.wait_for(self._changed().wait(), timeout)
            except asyncio.TimeoutError:
                pass

    def report(self, probe: bool, connected: bool | None, error: str = "",
               sent_at: float | None = None) -> None:
        """The outcome of a request: ``connected`` False for a connection failure, True for
        anything else that came back (an answer, a timeout), None when it was not sent;
        ``sent_at`` (``time.monotonic()`` when it was sent) tells a stale answer apart."""
        now = time.monotonic()
        if connected is False:
            self.consecutive += 1
            self._failed_at = now
            if self.consecutive == self.trip_after:
                self._opened_at, self._next_probe = now, now + self.probe_seconds
                logger.debug("judge endpoint: %d connections failed in a row (%s); "
                               "sending only probes until it answers", self.consecutive, error)
            elif probe:
                if self.probes_sent >= self.probes:
                    self.gone = PermanentJudgeError(
                        f"the judge went away mid-run: {self.consecutive} connections in a "
                        f"row failed ({error}), {self.probes_sent} of them probes over "
                        f"{now - self._opened_at:.0f} s; the remaining judgements were not "
                        "sent", affects_all_requests=True)
                else:
                    self._next_probe = now + self.probe_seconds * 2 ** self.probes_sent
        elif connected is None and probe:
            self.probes_sent -= 1  # not sent: the next request probes instead
        elif connected and sent_at is not None and sent_at < self._failed_at:
            pass  # sent before the latest failure: no news of the endpoint now
        elif connected:
            if self.open:
                logger.debug("judge endpoint: answering again")
            self.consecutive, self.probes_sent = 0, 0
        if probe:
            self._probing = False
            self._wake()

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_event": None, "_loop": None, "_probing": False}

    def _changed(self) -> asyncio.Event:
        loop = asyncio.get_running_loop()
        if self._event is None or self._loop is not loop:
            self._event, self._loop = asyncio.Event(), loop
        return self._event

    def _wake(self) -> None:
        if self._event is not None:
            self._event.set()
            self._event = None
