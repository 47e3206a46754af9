"""The scale of each reported metric, so that a paper's number is converted once (in
``paper_numbers.yaml``) and every table header says which scale its column is on.

Scores are fractions in [0, 1], except HotpotQA-FLM's recoveries (percent, as Toles et al.
print them) and Abg-CoQA's corpus BLEU (0-100, sacreBLEU's scale); SUM metrics and the
CondAmbigQA pair counts are counts.
"""

from __future__ import annotations

from condambig_tasks.benchmark import SUM

FRACTION = "fraction"
PERCENT = "percent"
COUNT = "count"
SCALES = (FRACTION, PERCENT, COUNT)

# per-question means of counts (MEAN metrics that are not scores)
_MEAN_COUNTS = {"condambigqa": {"answer_count", "count_difference", "count_error"}}

_HEADER = {FRACTION: "0–1", PERCENT: "%", COUNT: "count"}
_DECIMALS = {FRACTION: 4, PERCENT: 2, COUNT: 2}


def metric_scale(benchmark: str, metric: str) -> str:
    """``fraction``, ``percent`` (the spec's scale is 100) or ``count`` (SUM metrics and
    per-question counts) for one of our metrics."""
    if metric in _MEAN_COUNTS.get(benchmark, ()):
        return COUNT
    try:
        from condambig_tasks import registry

        spec = registry.get(benchmark).metric_spec(metric)
    except Exception:  # an unknown benchmark or metric: treated as a score
        return FRACTION
    if spec.aggregation == SUM:
        return COUNT
    return PERCENT if spec.scale == 100 else FRACTION


def header(benchmark: str, metric: str) -> str:
    """A column title naming the scale: ``f1_recovery (%)``, ``f1_response (0–1)``."""
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


