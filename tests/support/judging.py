"""The judge engine from synchronous code (tests and benchmark scripts): its judgements on
an event loop of their own, the backend's client (bound to that loop) closed with it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from condambig_tasks.benchmark import run_blocking


async def _judge_then_close(engine: Any, requests: Sequence[Any]) -> list[Any]:
    try:
        return await engine.judge_many(requests)
    finally:
        close = getattr(engine.backend, "aclose", None)
        if close is not None:
            await close()


def judge_blocking(engine: Any, requests: Sequence[Any]) -> list[Any]:
    """``engine.judge_many(requests)`` run to completion, even inside a running loop."""
    return run_blocking(_judge_then_close(engine, requests))
