"""Compute a run's corpus result once in lm-eval's aggregation step.

lm-eval calls one aggregation function per metric, each with the same items; the corpus
work behind them (judge calls, agent models) must happen once. A small bounded memo keyed
by a digest of what the result depends on serves every metric of a run (a process may
evaluate a few tasks, hence more than one entry).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

Result = TypeVar("Result")


class RunMemo(Generic[Result]):
    def __init__(self, size: int = 4) -> None:
        self._results: OrderedDict[str, Result] = OrderedDict()
        self._size = size

    def get_or_compute(self, depends_on: Any, compute: Callable[[], Result]) -> Result:
        """``depends_on``: JSON-serialisable; everything the result depends on."""
        digest = hashlib.sha256(json.dumps(depends_on, sort_keys=True).encode()).hexdigest()
        if digest not in self._results:
            self._results[digest] = compute()
            while len(self._results) > self._size:
                self._results.popitem(last=False)
        return self._results[digest]
