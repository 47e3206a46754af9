"""Inspect task ``condambig/ambignq``: closed-book AmbigNQ, every plausible answer with a
disambiguated question, scored as the official AmbigQA script (see the lm-eval task README).

    inspect eval condambig/ambignq --model openai/gpt-4o-mini [-T hub_revision=<commit>]
"""

from __future__ import annotations

from inspect_ai import Task

from condambig._factory import benchmark_task
from condambig.task_options import task
from condambig_tasks.ambignq.benchmark import AmbigNQOptions

_DEFAULT = AmbigNQOptions()


@task
def ambignq(hub_revision: str | None = _DEFAULT.hub_revision,
            max_tokens: int | None = None) -> Task:
    """AmbigNQ light development set (2,002 questions), closed book.

    Args:
        hub_revision: commit of ``sewon/ambig_qa`` on the hub (ignored with CONDAMBIG_DATA_DIR).
        max_tokens: generation budget (default 512; raise it for reasoning models).
    """
    return benchmark_task("ambignq", {"hub_revision": hub_revision}, max_tokens=max_tokens)
