"""How the work of a call grows with its input, for tests that a scan or a parse is linear.

Wall-clock seconds grow with the machine's load; the CPU seconds of this process
(``time.process_time``) measure the work itself. The growth is the CPU time at the large
input over the time at the small one, each the least of a few tries, measured side by
side: about the size ratio when linear, its square when quadratic.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def cpu_seconds(call: Callable[[], Any], tries: int = 3) -> float:
    """The least CPU time of ``tries`` calls."""
    best = float("inf")
    for _ in range(tries):
        started = time.process_time()
        call()
        best = min(best, time.process_time() - started)
    return best


def growth(run: Callable[[Any], Any], small: Any, large: Any, tries: int = 3) -> float:
    """CPU time of ``run(large)`` over that of ``run(small)`` (inputs built beforehand)."""
    run(small)  # imports and caches outside the measure
    return cpu_seconds(lambda: run(large), tries) / max(cpu_seconds(lambda: run(small), tries),
                                                       1e-4)
