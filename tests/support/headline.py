"""The check every real Inspect run makes: the log's headline is the benchmark's, first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from condambig_tasks import registry
from condambig_tasks.benchmark import SUITE_SCORE


def assert_headline_first(eval_metadata: Mapping[str, Any], headline_metric: Any,
                          metric_names: Sequence[str]) -> str:
    """``eval_metadata``: the log's ``eval.metadata``; ``headline_metric``: its
    ``eval.headline_metric`` (dict or model); ``metric_names``: the scorer's metrics in
    log order (their ``<metric>_stderr`` aside). Returns the headline."""
    benchmark = registry.get(eval_metadata["benchmark"])
    options = benchmark.options(eval_metadata["options"])
    expected = headline_metric(benchmark, options, bool(eval_metadata["judged"]))
    declared = (headline_metric.get("metric") if isinstance(headline_metric, Mapping)
                else getattr(headline_metric, "metric", None))
    assert declared == expected, (declared, expected)
    names = [name for name in metric_names if not name.endswith("_stderr")]  # each one's se
    assert names[0] == expected, names[:3]
    assert names[-1] == SUITE_SCORE
    return expected
