"""Inspect task ``toy``: name the capital (the toy benchmark of the contract tests).

    inspect eval tests/support/toy_benchmark/inspect_task.py@toy --model hf/<model>
"""

from __future__ import annotations

from inspect_ai import Task, task

from condambig._factory import benchmark_task


@task
def toy(ignore_case: bool = True, max_tokens: int | None = None) -> Task:
    """Four capitals; ``ignore_case`` compares answers without regard to case."""
    return benchmark_task("toy", {"ignore_case": ignore_case}, max_tokens=max_tokens)
