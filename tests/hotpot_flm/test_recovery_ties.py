"""A recovery whose gap R̄(x_c) − R̄(x_i) ties at 0 in exact arithmetic is undefined in every
front end and in every bootstrap resample, never ~1e17 percent from a one-ulp float gap."""

from __future__ import annotations

import json
import math

import numpy as np

from condambig_metrics.hotpot_flm import ROW_KEYS, TIE_TOLERANCE, recovery, summarise
from condambig_tasks import registry, uncertainty
from condambig_tasks.benchmark import ScoredSample, reported_values
from condambig_tasks.hotpot_flm.benchmark import _flm_metrics

# F1 (incomplete, response, complete): the means of x_i and x_c are both 0.15 exactly, but
# (0.1 + 0.2) / 2 and (0.3 + 0.0) / 2 differ by one ulp as floats
TIED = [(0.1, 0.5, 0.3), (0.2, 0.0, 0.0)]
# two rows with a clear gap, so a run of all four has a defined recovery
CLEAR = [(0.0, 1.0, 1.0), (0.0, 0.0, 1.0)]


def _row(f1: tuple[float, float, float]) -> dict[str, float]:
    row = {f"f1_{context}": value
           for context, value in zip(("incomplete", "response", "complete"), f1, strict=True)}
    for metric in ("em", "em_raw"):
        row.update({f"{metric}_incomplete": 0.0, f"{metric}_response": 1.0,
                    f"{metric}_complete": 1.0})
    row["masked_fact_returned"] = 1.0
    assert set(row) == set(ROW_KEYS)
    return row


def _samples(rows) -> list[ScoredSample]:
    return [ScoredSample(f"ex{index}", {**_row(f1), "agent_fallback_rate": 0.0,
                                        "empty_question_rate": 0.0})
            for index, f1 in enumerate(rows)]


def test_the_float_gap_of_the_tied_rows_is_one_rounding_step():
    naive_gap = (0.3 + 0.0) / 2 - (0.1 + 0.2) / 2
    assert naive_gap != 0 and abs(naive_gap) < 1e-16
    assert 100 * (0.25 - 0.15000000000000002) / naive_gap < -1e17  # the old headline


def test_recovery_of_tied_means_is_undefined():
    assert math.isnan(recovery(0.15000000000000002, 0.25, 0.15))
    assert math.isnan(recovery(0.5, 0.7, 0.5 + TIE_TOLERANCE / 2))
    assert recovery(0.5, 0.7, 0.5 + 10 * TIE_TOLERANCE) > 1e9  # past the tolerance: defined
    summary = summarise([_row(f1) for f1 in TIED])
    assert math.isnan(summary["f1_recovery"])
    # exact sums alone do not tie them (the float 0.1 + 0.2 is not the float 0.3): the
    # tolerance does
    assert 0 < abs(summary["f1_complete"] - summary["f1_incomplete"]) <= TIE_TOLERANCE
    assert summary["em_recovery"] == 100.0


def test_every_summary_of_the_tied_rows_is_null_with_its_reason():
    benchmark = registry.get("hotpot_flm")
    options = benchmark.options({})
    samples = _samples(TIED)
    summary = reported_values(benchmark, samples, options, False)
    assert summary["f1_recovery"] is None and summary["suite_score"] is None
    reasons = benchmark.null_reasons(samples, options, False, summary)
    assert "denominator is 0" in reasons["f1_recovery"]
    corpus = benchmark.corpus_statistics(samples, options, False)
    totals = np.asarray(corpus.rows, dtype=float).sum(axis=0, keepdims=True)
    fast = _flm_metrics({column: totals[:, k] for k, column in enumerate(corpus.columns)})
    assert np.isnan(fast["f1_recovery"][0]) and fast["em_recovery"][0] == 100.0


def test_bootstrap_leaves_out_tied_resamples_and_says_so():
    benchmark = registry.get("hotpot_flm")
    options = benchmark.options({})
    samples = _samples(TIED + CLEAR)
    assert reported_values(benchmark, samples, options, False)["f1_recovery"] is not None
    # a resample drawing each tied row twice ties (0.6000000000000001 vs 0.6 as floats)
    draws = np.array([[0, 0, 1, 1], [2, 3, 0, 1]])
    units = uncertainty.Units.of(benchmark, samples)
    resampler = uncertainty._Resampler(benchmark, samples, units, options, False,
                                       ["f1_recovery"])
    values = resampler.values(draws)["f1_recovery"]
    assert np.isnan(values[0]) and np.isfinite(values[1])

    estimates = uncertainty.uncertainty(benchmark, samples, options, False, resamples=1000)
    recovered = estimates["f1_recovery"]
    assert recovered.undefined > 0  # ~6 / 256 of the resamples draw two of each tied row
    assert recovered.stderr is not None and recovered.stderr < 1e4  # was ~1e17
    assert estimates["suite_score"].stderr < 1e2 and estimates["suite_score"].undefined > 0
    described = uncertainty.describe(benchmark, samples, 1000, uncertainty.DEFAULT_SEED,
                                     estimates)
    assert described["undefined_resamples"]["f1_recovery"] == recovered.undefined
    assert "left out" in described["undefined"]
    json.dumps(described, allow_nan=False)


def test_paired_comparison_counts_the_tied_resamples():
    benchmark = registry.get("hotpot_flm")
    options = benchmark.options({})
    a = _samples(TIED + CLEAR)
    b = _samples([(0.1, 0.5, 0.3), (0.2, 0.0, 0.0), (0.0, 1.0, 1.0), (0.0, 0.5, 1.0)])
    result = uncertainty.compare(benchmark, a, b, options, False, "f1_recovery",
                                 resamples=1000)
    assert result.paired and result.undefined_resamples > 0
    assert result.ci95_low is not None and abs(result.ci95_low) < 1e4
