"""The scale of each reported metric, from its spec, so that a paper's number is converted
once (in the benchmark's ``paper_numbers.yaml``) and every table header says which scale
its column is on: ``count`` (SUM metrics and ``MetricSpec.count``), ``percent`` (a spec
``scale`` of 100) or ``fraction`` (a score in [0, 1]).
"""

from __future__ import annotations

from condambig_tasks import registry
from condambig_tasks.benchmark import SUM, MetricSpec, metric_spec
from condambig_tasks.errors import ConfigurationError

FRACTION = "fraction"
PERCENT = "percent"
COUNT = "count"
SCALES = (FRACTION, PERCENT, COUNT)

_HEADER = {FRACTION: "0–1", PERCENT: "%", COUNT: "count"}
_DECIMALS = {FRACTION: 4, PERCENT: 2, COUNT: 2}
AXIS_LABELS = {FRACTION: "score (0–1)", PERCENT: "percent", COUNT: "count"}  # a figure's y-axis


def spec_scale(spec: MetricSpec) -> str:
    if spec.count or spec.aggregation == SUM:
        return COUNT
    return PERCENT if spec.scale == 100 else FRACTION


def metric_scale(benchmark: str, metric: str) -> str:
    """The scale of one of our metrics (a score, ``fraction``, for one the spec lacks)."""
    try:
        spec = metric_spec(registry.get(benchmark), metric)
    except (ConfigurationError, KeyError):
        return FRACTION
    return spec_scale(spec)


def header(benchmark: str, metric: str) -> str:
    """A column title naming the scale: ``<metric> (%)``, ``<metric> (0–1)``, ``<metric> (count)``."""
    return f"{metric} ({_HEADER[metric_scale(benchmark, metric)]})"


def format_value(value: float | None, benchmark: str, metric: str, *,
                 signed: bool = False) -> str:
    """A number as the tables print it: 4 decimals for fractions, 2 for percent and counts,
    whole counts without decimals; ``—`` for no value."""
    if value is None:
        return "—"
    scale = metric_scale(benchmark, metric)
    if scale == COUNT and float(value).is_integer() and not signed:
        return str(int(value))
    return f"{value:+.{_DECIMALS[scale]}f}" if signed else f"{value:.{_DECIMALS[scale]}f}"
