"""Agent work in batches, each stored in the agent cache as soon as it is computed.

A whole run's candidate scorings and downstream answers take minutes; computed in one call
they were lost to an interrupt, and the interrupt waited for the whole call. Here the
distinct inputs not yet cached are cut into the model's own batches (its ``plan``:
length-sorted, :mod:`condambig_tasks.hotpot_flm.batching`), and each batch is computed and
stored in one worker-thread call. So:

- a cancelled run (Ctrl-C under :func:`asyncio.run`, ``condambig-score``'s SIGTERM, an
  Inspect or lm-eval interrupt) stops after the batch in progress, which is still stored;
- a rerun computes only the rest, in the batches the interrupted run would have formed
  next: the plan packs the length-sorted inputs greedily from the longest, so removing the
  finished batches (a prefix of that order) leaves the same later batches, and every value
  comes from the very batch an uninterrupted run computes it in — the same numbers.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from condambig_tasks.interrupts import batch_in_flight
from condambig_tasks.progress import Progress

# a whole run's agent step shows progress; one Inspect sample's (~40 candidates) does not
PROGRESS_MIN_UNITS = 200
# inputs per stored batch for a model without a batch plan (an Inspect role, a test double)
UNPLANNED_BATCH = 16


class ResultStore(Protocol):
    def get_many(self, prompts: Sequence[str]) -> dict[str, Any]: ...

    def put_many(self, values: Mapping[str, Any]) -> None: ...


@dataclass(frozen=True)
class Step:
    """One resumable agent step: ``compute`` maps a batch of inputs to their values (a
    blocking function or a coroutine function); ``plan`` cuts inputs into batches."""

    label: str
    compute: Callable[[Sequence[str]], Any]
    store: ResultStore
    plan: Callable[[Sequence[str]], list[list[str]]] | None = None


@dataclass(frozen=True)
class StepResult:
    values: dict[str, Any]
    computed: tuple[str, ...]  # the inputs this run computed (not found in the store)


async def in_worker_thread(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` in a worker thread of the running event loop."""
    try:
        import anyio
    except ImportError:  # pragma: no cover - anyio comes with every async client installed
        return await asyncio.to_thread(function, *args)
    return await anyio.to_thread.run_sync(function, *args)


async def run_step(step: Step, inputs: Sequence[str]) -> StepResult:
    """Every distinct input's value: from the store, else computed batch by batch."""
    unique = list(dict.fromkeys(inputs))
    values: dict[str, Any] = await in_worker_thread(step.store.get_many, unique)
    missing = [item for item in unique if item not in values]
    if not missing:
        return StepResult(values, ())
    progress = Progress(step.label, len(missing), quiet_below=PROGRESS_MIN_UNITS)
    if step.plan is not None:
        batches = await in_worker_thread(step.plan, missing)
    else:
        batches = [missing[start:start + UNPLANNED_BATCH]
                   for start in range(0, len(missing), UNPLANNED_BATCH)]
    for batch in batches:
        if inspect.iscoroutinefunction(step.compute):
            fresh = dict(zip(batch, await step.compute(batch), strict=True))
            await in_worker_thread(_keep, step.store, fresh, progress)
        else:
            fresh = await in_worker_thread(_compute_and_keep, step, batch, progress)
        values.update(fresh)
    return StepResult(values, tuple(missing))


def _compute_and_keep(step: Step, batch: list[str], progress: Progress) -> dict[str, Any]:
    """One batch computed and stored in the same thread call: a run cancelled meanwhile
    still keeps it (the thread is never killed part-way)."""
    with batch_in_flight():
        fresh = dict(zip(batch, step.compute(batch), strict=True))
        _keep(step.store, fresh, progress)
    return fresh


def _keep(store: ResultStore, fresh: Mapping[str, Any], progress: Progress) -> None:
    store.put_many(fresh)
    progress.advance(len(fresh))
