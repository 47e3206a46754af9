"""Corpus metrics over one key of dict-valued scores, shared by the condambig Inspect tasks.

Each metric has its own registered name (``parse_rate``, ``citation_score``, ...) so the
log and the console show the benchmark's metric names. Samples whose score lacks the key
(a failed judgement, a non-applicable metric) are left out, never counted as 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from inspect_ai.scorer import Metric, SampleScore, metric

_FACTORIES: dict[tuple[str, str], Callable[..., Metric]] = {}


def _values(scores: list[SampleScore], key: str) -> list[float]:
    values = []
    for sample in scores:
        value = sample.score.value
        if isinstance(value, dict) and key in value and value[key] is not None:
            values.append(float(value[key]))
    return values


def _registered(kind: str, name: str, build: Callable[[str], Callable]) -> Callable[..., Metric]:
    if (kind, name) not in _FACTORIES:
        def factory(key: str) -> Metric:
            return build(key)

        factory.__name__ = name
        _FACTORIES[(kind, name)] = metric(name=name)(factory)
    return _FACTORIES[(kind, name)]


def _mean(key: str):
    def compute(scores: list[SampleScore]) -> float:
        values = _values(scores, key)
        return sum(values) / len(values) if values else math.nan

    return compute


def _total(key: str):
    def compute(scores: list[SampleScore]) -> float:
        return float(sum(_values(scores, key)))

    return compute


def mean_of_key(key: str, name: str | None = None) -> Metric:
    """Mean of ``score.value[key]`` over the samples that have it."""
    return _registered("mean", name or key, _mean)(key=key)


def total_of_key(key: str, name: str | None = None) -> Metric:
    """Sum of ``score.value[key]`` (counts such as judge failures)."""
    return _registered("total", name or key, _total)(key=key)
