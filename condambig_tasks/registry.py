"""The benchmarks every front end offers: name -> its :class:`~condambig_tasks.benchmark.Benchmark`.

Adding a benchmark is one line here (plus its folder and its Inspect ``@task``; the lm-eval
task files are generated from the spec: docs/adding-a-benchmark.md); a benchmark outside this package is named in ``CONDAMBIG_EXTRA_BENCHMARKS``
(``name=module:Class``, comma-separated). Modules are imported on first use, so the CLI's start-up stays cheap.
"""

from __future__ import annotations

import importlib
from functools import cache

from condambig_tasks.benchmark import Benchmark, Variant, find_variant
from condambig_tasks.errors import ConfigurationError

# the lm-eval group of the whole suite: each benchmark's ``suite_member``, unweighted
SUITE = "condambig"
SUITE_VERSION = "1-C"  # N-X (benchmark.TaskVersion); its lines in CHANGELOG.md
# how Inspect names the tasks: the package's ``inspect_ai`` entry point (pyproject.toml)
INSPECT_PREFIX = "condambig/"

BENCHMARKS: dict[str, str] = {
    "condambigqa": "condambig_tasks.condambigqa.benchmark:CondAmbigQA",
    "hotpot_flm": "condambig_tasks.hotpot_flm.benchmark:HotpotFLM",
    "conditionalqa": "condambig_tasks.conditionalqa.benchmark:ConditionalQA",
    "ambignq": "condambig_tasks.ambignq.benchmark:AmbigNQ",
    "abg_coqa": "condambig_tasks.abg_coqa.benchmark:AbgCoQA",
}


def available() -> dict[str, str]:
    """The built-in benchmarks plus those named in ``CONDAMBIG_EXTRA_BENCHMARKS``."""
    from condambig_tasks import settings

    return {**BENCHMARKS, **settings.extra_benchmarks()}


@cache
def get(name: str) -> Benchmark:
    known = available()
    if name not in known:
        raise ConfigurationError(
            f"unknown benchmark {name!r}; known: {', '.join(known)}")
    module_name, _, class_name = known[name].partition(":")
    return getattr(importlib.import_module(module_name), class_name)()


def task_variant(task: str) -> tuple[Benchmark, Variant] | None:
    """The benchmark and variant a framework task name stands for (an lm-eval task name,
    an Inspect dataset name), or None when no benchmark declares it."""
    for name in available():
        benchmark = get(name)
        try:
            return benchmark, find_variant(benchmark, task)
        except KeyError:
            continue
    return None
