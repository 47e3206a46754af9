"""The check every real Inspect run makes: the log's headline is the benchmark's, first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from condambig_tasks import registry
from condambig_tasks.benchmark import SUITE_SCORE, headline_metric


def assert_headline_first(eval_metadata: Mapping[str, Any], logged_headline: Any,
                          metric_names: Sequence[str]) -> str:
    """``eval_metadata``: the log's ``eval.metadata``; ``logged_headline``: its
    ``eval.headline_metric`` (dict or model); ``metric_names``: the scorer's metrics in
    log order (their ``<metric>_stderr`` aside). Returns the headline."""
    benchmark = registry.get(eval_metadata["benchmark"])
    options = benchmark.options(eval_metadata["options"])
    expected = headline_metric(benchmark, options, bool(eval_metadata["judged"]))
    declared = (logged_headline.get("metric") if isinstance(logged_headline, Mapping)
                else getattr(logged_headline, "metric", None))
    assert declared == expected, (declared, expected)
    names = [name for name in metric_names if not name.endswith("_stderr")]  # each one's se
    assert names[0] == expected, names[:3]
    assert names[-1] == SUITE_SCORE
    return expected
