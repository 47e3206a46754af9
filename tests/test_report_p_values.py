"""The report prints a p-value at the bootstrap's floor 2/(R + 1) as "< floor", not as a
number that looks exact (a permutation test gives 0.0001 where the floor is 0.002)."""

from __future__ import annotations

import random

from condambig_tasks import registry
from condambig_tasks.benchmark import ScoredSample
from condambig_tasks.report.tables import p_value_text
from condambig_tasks.uncertainty import Comparison, compare


def _comparison(p_value: float | None, resamples: int = 1000,
                undefined: int = 0) -> Comparison:
    return Comparison("f1_answer_all", 0.1, 0.05, 0.15, p_value, True, 40, 40, 40, resamples,
                      undefined)


def test_a_p_value_at_the_floor_is_an_upper_bound():
    assert p_value_text(_comparison(2 / 1001)) == "< 0.002"
    assert p_value_text(_comparison(2 / 201, resamples=200)) == "< 0.010"
    # the floor counts only the defined resamples
    assert p_value_text(_comparison(2 / 991, undefined=10)) == "< 0.003"


def test_a_p_value_above_the_floor_is_printed_as_a_number():
    assert p_value_text(_comparison(4 / 1001)) == "0.004"
    assert p_value_text(_comparison(1.0)) == "1.000"
    assert p_value_text(_comparison(None)) == "—"


def test_a_consistent_gain_reaches_the_floor():
    benchmark = registry.get("ambignq")
    options = benchmark.options({})
    rng = random.Random(5)
    base = [rng.random() * 0.5 for _ in range(60)]
    a = [ScoredSample(f"q{i}", {"f1_answer_all": value}) for i, value in enumerate(base)]
    b = [ScoredSample(f"q{i}", {"f1_answer_all": value + 0.3}) for i, value in enumerate(base)]
    result = compare(benchmark, a, b, options, False, "f1_answer_all")
    assert result.p_value == 2 / 1001
    assert p_value_text(result) == "< 0.002"
