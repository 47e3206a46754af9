"""Uncertainty of every reported metric, and the comparison of two runs on the same items.

One entry point per question a front end asks:

* :func:`uncertainty` — ``{metric: Estimate(stderr, ci95_low, ci95_high)}`` for everything
  :func:`~condambig_tasks.benchmark.reported_values` reports;
* :func:`compare` — Δ (B − A) of one metric with its 95 % interval and a two-sided p-value,
  paired when both runs cover the same units, else unpaired.

The unit resampled is the benchmark's :attr:`~condambig_tasks.benchmark.Benchmark.resampling_unit`
(:meth:`~condambig_tasks.benchmark.Benchmark.cluster` maps a sample to it): samples of one
unit (the turns of one Abg-CoQA conversation, the questions on one ConditionalQA document)
are drawn together, never apart.

Standard errors. A MEAN metric's is the cluster-robust standard error of a mean,
``sqrt(G/(G-1) · Σ_g (Σ_{i∈g} (y_i − ȳ))²) / N`` over the N samples with a value in G units
(Miller, *Adding Error Bars to Evals*, 2024, appendix A): Inspect's ``stderr(cluster=...)``
exactly, and when every unit is one sample it is ``s / √N`` with the sample standard
deviation (ddof 1), lm-eval 0.4.13's ``mean_stderr`` and Inspect's plain ``stderr()``. Every
other metric's (SUM, CORPUS: BLEU, P/R/F1, recoveries, ratios) is the standard deviation
(ddof 1, as lm-eval's ``bootstrap_stderr``) of the metric recomputed by the benchmark on
``resamples`` seeded bootstrap resamples of the units (Efron & Tibshirani, 1993).

Intervals. ``ci95`` is the 2.5 / 97.5 percentile interval of the same resamples for every
metric, means included (it stays inside a rate's [0, 1], unlike mean ± 1.96·se). ``suite_score``
is the headline divided by its scale, and so is its estimate.

Undefined resamples. A resample on which a metric is undefined (NaN: e.g. a HotpotQA-FLM
recovery whose gap R̄(x_c) − R̄(x_i) ties at 0) is left out of that metric's standard error,
interval and p-value, never turned into a number; :attr:`Estimate.undefined` and
:attr:`Comparison.undefined_resamples` count them, and :func:`describe` records the rule and
the counts in a result's provenance. Fewer than two units or two defined resamples give None.

Fast paths. Recomputing a metric per resample through :meth:`Benchmark.metric_values` is
Python work per sample per resample (HotpotQA-FLM's full split, 17 metrics: 70 s). Where a
metric is a function of per-sample totals, the resamples are drawn once as unit counts and
the totals of all resamples are one matrix product (the same HotpotQA-FLM run: 0.24 s;
``benchmarks/bootstrap.py``). A fast path is used only where it gives the run's own value
(checked on the whole run, with a warning and the slow path otherwise); the others:

* MEAN and SUM metrics of any benchmark: value sums and counts (:func:`_plain_statistics`);
* each benchmark's CORPUS metrics, beside them in its ``corpus_statistics``: HotpotQA-FLM's
  recoveries and rates, Abg-CoQA's detection counts, BLEU sufficient statistics and
  clarified-QA F1, CondAmbigQA's ``judge_weighted_rate`` (AmbigNQ's and ConditionalQA's
  metrics are all MEAN or SUM: the first path covers them).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from condambig_tasks.benchmark import (
    MEAN,
    SUITE_SCORE,
    SUM,
    Benchmark,
    ScoredSample,
    finite_number,
    headline_metric,
    metric_spec,
    reported_values,
)
from condambig_tasks.settings import DEFAULT_RESAMPLES

if TYPE_CHECKING:  # imported where used: condambig-score starts without numpy
    import numpy as np

logger = logging.getLogger(__name__)

DEFAULT_SEED = 1234


def add_bootstrap_arguments(parser: Any, what: str) -> None:
    """``--bootstrap-resamples N`` and ``--seed N`` of a command (``condambig-score``,
    ``condambig-report``): the same names, defaults and check in both; ``what``: what the
    resamples estimate, for the help."""
    parser.add_argument("--bootstrap-resamples", type=_resample_count, metavar="N",
                        default=DEFAULT_RESAMPLES,
                        help=f"bootstrap resamples of {what} (default {DEFAULT_RESAMPLES}; "
                             "0 leaves them out)")
    parser.add_argument("--seed", type=int, metavar="N", default=DEFAULT_SEED,
                        help=f"seed of the bootstrap (default {DEFAULT_SEED})")


def _resample_count(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value
_BLOCK = 100  # resamples drawn and evaluated at once (bounds the count matrix's memory)
# at most this many unit draws per block: 100 resamples of 100,000 units would hold 80 MB
# of indices and as much of counts; fewer resamples a block give the same draws
_BLOCK_DRAWS = 1_000_000


@dataclass(frozen=True)
class Estimate:
    """A metric's standard error and 95 % interval; None where undefined."""

    stderr: float | None
    ci95_low: float | None
    ci95_high: float | None
    undefined: int = 0  # resamples on which the metric was undefined (left out)

    @property
    def ci95(self) -> list[float] | None:
        if self.ci95_low is None or self.ci95_high is None:
            return None
        return [self.ci95_low, self.ci95_high]

    def scaled(self, factor: float) -> Estimate:
        return Estimate(*(None if value is None else value * factor
                          for value in (self.stderr, self.ci95_low, self.ci95_high)),
                        undefined=self.undefined)


NO_ESTIMATE = Estimate(None, None, None)


@dataclass(frozen=True)
class CorpusStatistics:
    """Additive per-sample numbers from which metrics are computed (a benchmark's fast path).

    ``rows[i]`` holds sample i's value of every column; ``metrics`` maps the column totals
    of R resamples (one array of R totals per column) to R values per metric it computes
    (NaN where undefined). It must give :meth:`Benchmark.metric_values` on every resample;
    :func:`uncertainty` checks it does on the full run and tests check it on resamples.
    """

    columns: tuple[str, ...]
    rows: Sequence[Sequence[float]]
    metrics: Callable[[Mapping[str, np.ndarray]], Mapping[str, np.ndarray]]


@dataclass(frozen=True)
class Comparison:
    """Δ = B − A of one metric, its 95 % interval and two-sided bootstrap p-value.

    ``paired``: both runs, on the same units, resampled on the same draws; otherwise each
    run on its own units (``shared_units`` counts the overlap).
    """

    metric: str
    delta: float | None
    ci95_low: float | None
    ci95_high: float | None
    p_value: float | None
    paired: bool
    shared_units: int
    units_a: int
    units_b: int
    resamples: int
    undefined_resamples: int = 0  # resamples where Δ is undefined on either side (left out)


# ---------------------------------------------------------------------- entry points


def uncertainty(
    benchmark: Benchmark, samples: Sequence[ScoredSample], options: Any, judged: bool, *,
    resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
) -> dict[str, Estimate]:
    """The estimate of every metric :func:`~condambig_tasks.benchmark.reported_values` reports, in its order."""
    import numpy as np

    _check_resamples(resamples)
    summary = reported_values(benchmark, samples, options, judged)
    names = [name for name in summary if name != SUITE_SCORE]
    units = Units.of(benchmark, samples)
    if len(units) < 2:
        return {name: NO_ESTIMATE for name in summary}
    resampler = _Resampler(benchmark, samples, units, options, judged, names, whole=summary)
    values = resampler.run(_draws(len(units), resamples, np.random.default_rng(seed)))
    specs = {name: metric_spec(benchmark, name) for name in names}
    estimates: dict[str, Estimate] = {}
    for name in names:
        if summary[name] is None:
            estimates[name] = NO_ESTIMATE
            continue
        interval = _bootstrap_estimate(values[name])
        if specs[name].aggregation == MEAN:
            interval = Estimate(_mean_stderr(samples, name, units), interval.ci95_low,
                                interval.ci95_high, interval.undefined)
        estimates[name] = interval
    if SUITE_SCORE in summary:
        headline = names[0]
        estimates[SUITE_SCORE] = (NO_ESTIMATE if summary[SUITE_SCORE] is None else
                                  estimates[headline].scaled(1 / specs[headline].scale))
    return estimates


def estimates_json(
    estimates: Mapping[str, Estimate], metrics: Mapping[str, float | None],
) -> tuple[dict[str, float | None], dict[str, list[float] | None]]:
    """``stderr`` and ``ci95`` maps for a result's JSON: null wherever the reported value is
    null (e.g. judged metrics withheld after too many failed judgements)."""
    stderr: dict[str, float | None] = {}
    ci95: dict[str, list[float] | None] = {}
    for name, value in metrics.items():
        estimate = estimates.get(name, NO_ESTIMATE) if value is not None else NO_ESTIMATE
        stderr[name], ci95[name] = estimate.stderr, estimate.ci95
    return stderr, ci95


UNDEFINED_RULE = ("a resample on which a metric is undefined is left out of that metric's "
                  "stderr, ci95 and p-value; undefined_resamples counts them per metric")


def describe(benchmark: Benchmark, samples: Sequence[ScoredSample], resamples: int,
             seed: int, estimates: Mapping[str, Estimate] | None = None) -> dict[str, Any]:
    """How the estimates were made, for a result's provenance: with ``estimates``, how many
    resamples each metric was undefined on (only metrics with any)."""
    described = {"unit": benchmark.resampling_unit,
                 "units": len(Units.of(benchmark, samples)), "resamples": resamples,
                 "seed": seed, "interval": "percentile bootstrap",
                 "mean_stderr": "cluster-robust standard error of the mean (ddof 1)",
                 "undefined": UNDEFINED_RULE}
    if estimates is not None:
        described["undefined_resamples"] = {name: estimate.undefined
                                            for name, estimate in estimates.items()
                                            if estimate.undefined}
    return described


def compare(
    benchmark: Benchmark, samples_a: Sequence[ScoredSample], samples_b: Sequence[ScoredSample],
    options: Any, judged: bool, metric: str, *, resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED, pair: bool = True,
) -> Comparison:
    """Paired when both runs cover the same units (and ``pair``): each resample draws the
    same units in both runs (the paired bootstrap of Koehn, 2004). Otherwise unpaired, each
    run resampled on its own units (different item sets: a paired comparison would have to
    drop the units only one run has)."""
    import numpy as np

    _check_resamples(resamples)
    units_a, units_b = Units.of(benchmark, samples_a), Units.of(benchmark, samples_b)
    paired = pair and units_a.ids == units_b.ids
    delta = _point_delta(benchmark, samples_a, samples_b, options, judged, metric)
    differences = np.full(resamples, np.nan)
    if delta is not None and min(len(units_a), len(units_b)) >= 2:
        # paired: the same seed draws the same unit positions (the ids are sorted) in both
        streams = [seed, seed] if paired else np.random.SeedSequence(seed).spawn(2)
        sides = []
        for run, units, stream in ((samples_a, units_a, streams[0]),
                                   (samples_b, units_b, streams[1])):
            resampler = _Resampler(benchmark, run, units, options, judged, [metric])
            sides.append(resampler.run(_draws(len(units), resamples,
                                              np.random.default_rng(stream)))[metric])
        differences = sides[1] - sides[0]
    shared = len(set(units_a.ids) & set(units_b.ids))
    return _comparison(metric, delta, differences, paired, shared, len(units_a), len(units_b),
                       resamples)


# ---------------------------------------------------------------------- units and draws


@dataclass(frozen=True)
class Units:
    """The resampling units of a run: their ids (sorted) and member samples. Sorted, not in
    the order the samples came: the draws pick units by position, so the same run read in
    another order (an lm-eval samples file, an Inspect log, a record) gets the same
    intervals."""

    ids: tuple[str, ...]
    members: tuple[tuple[int, ...], ...]
    of_sample: np.ndarray  # unit index of every sample

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def of(cls, benchmark: Benchmark, samples: Sequence[ScoredSample]) -> Units:
        import numpy as np

        grouped: dict[str, list[int]] = {}
        for position, sample in enumerate(samples):
            grouped.setdefault(str(benchmark.cluster(sample)), []).append(position)
        ids = sorted(grouped)
        of_sample = np.empty(len(samples), dtype=np.int64)
        for unit, key in enumerate(ids):
            of_sample[grouped[key]] = unit
        return cls(tuple(ids), tuple(tuple(grouped[key]) for key in ids), of_sample)


def _draws(units: int, resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Blocks of resamples, each row the unit indices of one resample (with replacement)."""
    block = max(1, min(_BLOCK, _BLOCK_DRAWS // max(units, 1)))
    for start in range(0, resamples, block):
        size = min(block, resamples - start)
        yield rng.integers(0, max(units, 1), size=(size, units))


def _check_resamples(resamples: int) -> None:
    if resamples < 1:
        raise ValueError("resamples must be at least 1 (a front end skips the estimates at 0)")


# ---------------------------------------------------------------------- resampling


class _Resampler:
    """The reported metrics of one run on blocks of resamples: through the fast paths the
    module doc lists where they give the run's own values, else (and for every metric with
    ``fast=False``, the reference the fast paths are tested against) through
    :meth:`Benchmark.metric_values` on the resampled samples."""

    def __init__(self, benchmark: Benchmark, samples: Sequence[ScoredSample], units: Units,
                 options: Any, judged: bool, names: Sequence[str], *, fast: bool = True,
                 whole: Mapping[str, float | None] | None = None):

        self.benchmark, self.samples, self.units = benchmark, samples, units
        self.options, self.judged = options, judged
        self.names = [name for name in names if name != SUITE_SCORE]
        self.headline = (headline_metric(benchmark, options, judged)
                         if SUITE_SCORE in names else None)
        if self.headline is not None and self.headline not in self.names:
            self.names.append(self.headline)
        self.fast: list[tuple[CorpusStatistics, np.ndarray, list[str]]] = []
        self.plain: list[str] = list(self.names)
        if samples and fast:
            self._add_fast_paths(whole)

    def _add_fast_paths(self, whole: Mapping[str, float | None] | None) -> None:
        """Use a fast path for the metrics where it gives the run's own values (``whole``:
        those values when the caller has them, e.g. from ``summarise``)."""
        import numpy as np

        benchmark, samples = self.benchmark, self.samples
        sources = []
        corpus = benchmark.corpus_statistics(samples, self.options, self.judged)
        if corpus is not None:
            sources.append(corpus)
        if type(benchmark).metric_values is Benchmark.metric_values:
            plain = [name for name in self.plain
                     if metric_spec(benchmark, name).aggregation in (MEAN, SUM)]
            sources.append(_plain_statistics(benchmark, samples, plain))
        full = (whole if whole is not None and all(name in whole for name in self.names)
                else benchmark.metric_values(samples, self.options, self.judged))
        for statistics in sources:
            rows = np.asarray(statistics.rows, dtype=float).reshape(len(samples), -1)
            unit_totals = np.zeros((len(self.units), rows.shape[1]))
            np.add.at(unit_totals, self.units.of_sample, rows)
            fast = _metrics(statistics, rows.sum(axis=0, keepdims=True))
            covered = []
            for name in self.plain:
                if name not in fast:
                    continue
                if _same(fast[name][0], full.get(name)):
                    covered.append(name)
                else:  # a fast path that disagrees with the benchmark is not used
                    logger.warning("%s: the fast path of %s gives %r, metric_values %r; "
                                   "resampling metric_values instead", benchmark.name, name,
                                   fast[name][0], full.get(name))
            if covered:
                self.fast.append((statistics, unit_totals, covered))
                self.plain = [name for name in self.plain if name not in covered]

    def values(self, draws: np.ndarray) -> dict[str, np.ndarray]:
        """Each metric on each resample of ``draws`` (NaN where undefined)."""
        import numpy as np

        size, units = draws.shape
        result: dict[str, np.ndarray] = {}
        if self.fast:
            offsets = (np.arange(size) * units)[:, None]
            counts = np.bincount((draws + offsets).ravel(), minlength=size * units)
            counts = counts.reshape(size, units).astype(float)
            for statistics, unit_totals, covered in self.fast:
                computed = _metrics(statistics, counts @ unit_totals)
                result.update({name: computed[name] for name in covered})
        if self.plain:
            columns = {name: np.full(size, np.nan) for name in self.plain}
            for row, drawn in enumerate(draws):
                resample = [self.samples[i] for unit in drawn for i in self.units.members[unit]]
                computed = self.benchmark.metric_values(resample, self.options, self.judged)
                for name in self.plain:
                    value = finite_number(computed.get(name))
                    columns[name][row] = np.nan if value is None else value
            result.update(columns)
        if self.headline is not None:
            result[SUITE_SCORE] = (result[self.headline]
                                   / metric_spec(self.benchmark, self.headline).scale)
        return result

    def run(self, blocks: Iterator[np.ndarray]) -> dict[str, np.ndarray]:
        import numpy as np

        parts = [self.values(draws) for draws in blocks]
        if not parts:
            return {}
        return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def _plain_statistics(benchmark: Benchmark, samples: Sequence[ScoredSample],
                      names: Sequence[str]) -> CorpusStatistics:
    """MEAN and SUM metrics as the totals (value sum, samples with a value)."""
    import numpy as np

    aggregation = {name: metric_spec(benchmark, name).aggregation for name in names}
    # filled in place: a list of Python floats per sample would hold (and, freed, fragment)
    # far more than the 16 bytes a value takes here
    rows = np.zeros((len(samples), 2 * len(names)))
    for index, sample in enumerate(samples):
        for column, name in enumerate(names):
            value = finite_number(sample.values.get(name))
            if value is not None:
                rows[index, 2 * column:2 * column + 2] = value, 1.0

    def metrics(totals: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        import numpy as np

        result = {}
        for name in names:
            total, count = totals[f"{name}:sum"], totals[f"{name}:n"]
            with np.errstate(divide="ignore", invalid="ignore"):
                value = total / count if aggregation[name] == MEAN else total.copy()
            result[name] = np.where(count > 0, value, np.nan)
        return result

    columns = tuple(f"{name}:{part}" for name in names for part in ("sum", "n"))
    return CorpusStatistics(columns, rows, metrics)


def _metrics(statistics: CorpusStatistics, totals: np.ndarray) -> dict[str, np.ndarray]:
    import numpy as np

    by_column = {column: totals[:, k] for k, column in enumerate(statistics.columns)}
    return {name: np.asarray(values, dtype=float)
            for name, values in statistics.metrics(by_column).items()}


def _same(fast: float, plain: float | None) -> bool:
    plain = finite_number(plain)
    if plain is None or not math.isfinite(fast):
        return plain is None and not math.isfinite(fast)
    return math.isclose(fast, plain, rel_tol=1e-9, abs_tol=1e-9)


# ---------------------------------------------------------------------- estimates


def _bootstrap_estimate(values: np.ndarray) -> Estimate:
    import numpy as np

    defined = values[np.isfinite(values)]
    undefined = len(values) - len(defined)
    if len(defined) < 2:
        return Estimate(None, None, None, undefined)
    low, high = np.percentile(defined, [2.5, 97.5])
    return Estimate(float(np.std(defined, ddof=1)), float(low), float(high), undefined)


def _mean_stderr(samples: Sequence[ScoredSample], name: str, units: Units) -> float | None:
    """The cluster-robust standard error of the mean of ``name`` (see the module doc)."""
    import numpy as np

    present = [(units.of_sample[i], value) for i, sample in enumerate(samples)
               if (value := finite_number(sample.values.get(name))) is not None]
    if not present:
        return None
    unit_index = np.fromiter((unit for unit, _ in present), dtype=np.int64, count=len(present))
    values = np.fromiter((value for _, value in present), dtype=float, count=len(present))
    residual_sums = np.bincount(unit_index, weights=values - values.mean())
    clusters = len(np.unique(unit_index))
    if clusters < 2:
        return None
    variance = float(np.sum(residual_sums ** 2)) * clusters / (clusters - 1)
    return math.sqrt(variance) / len(values)


def _point_delta(benchmark: Benchmark, samples_a: Sequence[ScoredSample],
                 samples_b: Sequence[ScoredSample], options: Any, judged: bool,
                 metric: str) -> float | None:
    a = reported_values(benchmark, samples_a, options, judged).get(metric) if samples_a else None
    b = reported_values(benchmark, samples_b, options, judged).get(metric) if samples_b else None
    return None if a is None or b is None else b - a


def _comparison(metric: str, delta: float | None, differences: np.ndarray, paired: bool,
                shared: int, units_a: int, units_b: int, resamples: int) -> Comparison:
    """The percentile interval of the resampled Δ and the two-sided p-value
    ``min(1, 2 · min(#{Δ* ≤ 0} + 1, #{Δ* ≥ 0} + 1) / (R + 1))`` over the R defined
    resamples: twice the smaller tail at 0, with the +1 that keeps a finite bootstrap from
    claiming p = 0 (Davison & Hinkley, 1997, §4.4); p < 0.05 about when 0 is outside the
    interval."""
    import numpy as np

    defined = differences[np.isfinite(differences)]
    undefined = len(differences) - len(defined) if delta is not None else 0
    if delta is None or len(defined) < 2:
        return Comparison(metric, delta, None, None, None, paired, shared, units_a, units_b,
                          resamples, undefined)
    low, high = np.percentile(defined, [2.5, 97.5])
    tail = min(int(np.sum(defined <= 0)), int(np.sum(defined >= 0))) + 1
    p_value = min(1.0, 2 * tail / (len(defined) + 1))
    return Comparison(metric, delta, float(low), float(high), p_value, paired, shared,
                      units_a, units_b, resamples, undefined)


__all__ = ["DEFAULT_RESAMPLES", "DEFAULT_SEED", "NO_ESTIMATE", "Comparison",
           "CorpusStatistics", "Estimate", "Units", "compare", "describe", "estimates_json",
           "uncertainty"]
