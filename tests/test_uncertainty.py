"""Standard errors, bootstrap intervals and comparisons (condambig_tasks.uncertainty)."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pytest

from condambig_metrics.hotpot_flm import ROW_KEYS
from condambig_tasks import registry
from condambig_tasks.benchmark import (
    CORPUS,
    SUM,
    Benchmark,
    MetricSpec,
    ScoredSample,
    reported_values,
)
from condambig_tasks.cli import main
from condambig_tasks.uncertainty import (
    NO_ESTIMATE,
    Estimate,
    Units,
    _draws,
    _Resampler,
    compare,
    estimates_json,
    uncertainty,
)
from tests.abg_coqa.scripted_outputs import RAW_OUTPUTS
from tests.conftest import FIXTURE_DATA


@dataclass(frozen=True)
class ToyOptions:
    pass


class Toy(Benchmark[ToyOptions, object]):
    """``score`` (MEAN, the headline on a 0-100 scale), ``count`` (SUM) and ``ratio``
    (CORPUS: Σa / Σb); the unit is the part of the id before ``/``."""

    name = "toy_uncertainty"
    title = "Toy"
    version = "1-A"
    options_type = ToyOptions
    headline_metrics = ("ratio",)
    metric_specs = (
        MetricSpec("ratio", "Σa / Σb", CORPUS, scale=100.0),
        MetricSpec("score", "a mean"),
        MetricSpec("count", "a total", SUM),
    )

    def cluster(self, sample: ScoredSample) -> str:
        return sample.id.partition("/")[0]

    def corpus_values(self, samples, options, judged) -> Mapping[str, float | None]:
        b = sum(s.details["b"] for s in samples)
        return {"ratio": sum(s.details["a"] for s in samples) / b if b else None}


class Singletons(Toy):
    def cluster(self, sample: ScoredSample) -> str:
        return sample.id


def toy_samples(scores: Sequence[float | None], *, units: Sequence[str] | None = None,
                a: Sequence[float] | None = None) -> list[ScoredSample]:
    units = units or [str(i) for i in range(len(scores))]
    a = a or [0.0 if s is None else s for s in scores]
    return [ScoredSample(f"{unit}/{i}", {"score": s, "count": 1.0},
                         {"a": a_i, "b": 1.0})
            for i, (s, unit, a_i) in enumerate(zip(scores, units, a, strict=True))]


OPTIONS = ToyOptions()


# ---------------------------------------------------------------------- standard errors


def test_mean_stderr_is_the_hand_computed_one_and_lm_evals_and_inspects():
    from inspect_ai.scorer import SampleScore, Score, stderr
    from lm_eval.api.metrics import mean_stderr

    values = [1.0, 0.0, 1.0, 1.0, None]  # None: no value, left out of the mean
    estimates = uncertainty(Toy(), toy_samples(values), OPTIONS, False)
    # mean 0.75, sample standard deviation 0.5 (ddof 1), n 4: 0.5 / 2
    assert estimates["score"].stderr == pytest.approx(0.25, abs=1e-12)
    assert mean_stderr([1.0, 0.0, 1.0, 1.0]) == pytest.approx(0.25)
    scores = [SampleScore(score=Score(value=v), sample_id=i) for i, v in enumerate(values[:4])]
    assert stderr()(scores) == pytest.approx(0.25)


def test_clustered_mean_stderr_is_inspects_clustered_stderr():
    from inspect_ai.scorer import SampleScore, Score, stderr

    values = [1.0, 1.0, 0.0, 0.5, 0.0, 0.0, 1.0]
    units = ["a", "a", "b", "b", "c", "d", "d"]
    estimate = uncertainty(Toy(), toy_samples(values, units=units), OPTIONS, False)["score"]
    scores = [SampleScore(score=Score(value=v), sample_id=i, sample_metadata={"unit": u})
              for i, (v, u) in enumerate(zip(values, units, strict=True))]
    mean = sum(values) / len(values)
    by_unit = {u: sum(v - mean for v, w in zip(values, units, strict=True) if w == u)
               for u in units}
    hand = math.sqrt(sum(r * r for r in by_unit.values()) * 4 / 3) / len(values)
    assert estimate.stderr == pytest.approx(hand, abs=1e-12)
    assert stderr(cluster="unit")(scores) == pytest.approx(hand)


def test_bootstrap_of_a_mean_matches_its_closed_form():
    rng = random.Random(5)
    values = [rng.random() for _ in range(400)]
    ratio = uncertainty(Singletons(), toy_samples(values), OPTIONS, False,
                        resamples=4000)["ratio"]
    s = float(np.std(values, ddof=1))
    closed = math.sqrt((len(values) - 1) / len(values)) * s / math.sqrt(len(values))
    assert ratio.stderr == pytest.approx(closed, rel=0.06)
    mean = sum(values) / len(values)
    assert ratio.ci95_low < mean < ratio.ci95_high
    assert ratio.ci95_high - ratio.ci95_low == pytest.approx(2 * 1.96 * closed, rel=0.1)


def test_same_seed_same_numbers_other_seed_close():
    rng = random.Random(7)
    samples = toy_samples([rng.random() for _ in range(300)])
    first = uncertainty(Singletons(), samples, OPTIONS, False, seed=11)
    assert uncertainty(Singletons(), samples, OPTIONS, False, seed=11) == first
    other = uncertainty(Singletons(), samples, OPTIONS, False, seed=12)
    assert other != first
    for name in ("ratio", "score"):
        assert other[name].stderr == pytest.approx(first[name].stderr, rel=0.15)
        assert other[name].ci95_low == pytest.approx(first[name].ci95_low, rel=0.05)


def test_samples_of_one_unit_are_resampled_together():
    # 30 units of 10 samples each, all 1 or all 0 within a unit: the information is in 30
    # units, not 300 samples, so every estimate is about sqrt(10) times the naive one
    rng = random.Random(3)
    unit_values = [float(rng.random() < 0.5) for _ in range(30)]
    values = [value for value in unit_values for _ in range(10)]
    units = [str(u) for u in range(30) for _ in range(10)]
    clustered = uncertainty(Toy(), toy_samples(values, units=units), OPTIONS, False)
    naive = uncertainty(Singletons(), toy_samples(values, units=units), OPTIONS, False)
    for name in ("ratio", "score"):
        assert clustered[name].stderr / naive[name].stderr == pytest.approx(math.sqrt(10),
                                                                             rel=0.2)
    assert len(Units.of(Toy(), toy_samples(values, units=units))) == 30


def test_the_order_of_a_runs_samples_changes_no_estimate():
    """The same run read in another order (a samples file, a log, a record): every stderr
    and interval, and an unpaired comparison's, is the same (they once followed the order
    the samples came in)."""
    rng = random.Random(5)
    samples = toy_samples([rng.random() for _ in range(40)], units=[str(i % 13) for i in range(40)])
    shuffled = samples[:]
    rng.shuffle(shuffled)
    def numbers(value) -> list:  # sums in another order may differ in the last bit
        return pytest.approx([x for x in vars(value).values() if not isinstance(x, str)],
                             rel=1e-12, abs=1e-15)

    given = uncertainty(Toy(), samples, OPTIONS, False)
    for name, estimate in uncertainty(Toy(), shuffled, OPTIONS, False).items():
        assert list(vars(estimate).values()) == numbers(given[name]), name
    other = toy_samples([rng.random() for _ in range(30)])
    for metric in ("score", "ratio"):
        compared = compare(Toy(), shuffled, other, OPTIONS, False, metric)
        reference = compare(Toy(), samples, other, OPTIONS, False, metric)
        assert [x for x in vars(compared).values() if not isinstance(x, str)] == \
            numbers(reference), metric


def test_suite_score_is_the_headline_on_its_scale():
    samples = toy_samples([random.Random(1).random() for _ in range(50)])
    estimates = uncertainty(Toy(), samples, OPTIONS, False)
    assert list(estimates) == ["ratio", "score", "count", "suite_score"]
    assert estimates["suite_score"] == estimates["ratio"].scaled(1 / 100)


# ---------------------------------------------------------------------- nulls


def test_undefined_estimates_are_none_and_json_null():
    no_score = uncertainty(Toy(), toy_samples([None, None, None]), OPTIONS, False)
    assert no_score["score"] == NO_ESTIMATE
    assert no_score["ratio"].stderr is not None  # a defined metric keeps its estimate
    one_unit = uncertainty(Toy(), toy_samples([1.0, 0.0], units=["x", "x"]), OPTIONS, False)
    assert all(estimate == NO_ESTIMATE for estimate in one_unit.values())
    assert uncertainty(Toy(), [], OPTIONS, False) == dict.fromkeys(
        ["ratio", "score", "count", "suite_score"], NO_ESTIMATE)
    # a value withheld by the front end (e.g. too many failed judgements): null as well
    stderr, ci95 = estimates_json({"score": Estimate(0.1, 0.2, 0.4)},
                                  {"score": None, "count": 3.0})
    assert stderr == {"score": None, "count": None} and ci95 == {"score": None, "count": None}
    json.dumps([stderr, ci95], allow_nan=False)


def test_resamples_where_a_metric_is_undefined_are_left_out():
    # ratio Σa / Σb is undefined on a resample drawing only b = 0 samples
    samples = [ScoredSample(str(i), {"score": 1.0}, {"a": 1.0, "b": float(i == 0)})
               for i in range(3)]
    ratio = uncertainty(Singletons(), samples, OPTIONS, False, resamples=200)["ratio"]
    assert ratio.stderr is not None and math.isfinite(ratio.stderr)


# ---------------------------------------------------------------------- comparisons


def test_identical_runs_differ_by_zero_with_p_one():
    samples = toy_samples([random.Random(2).random() for _ in range(40)])
    for metric in ("ratio", "score", "suite_score"):
        result = compare(Toy(), samples, list(samples), OPTIONS, False, metric, resamples=300)
        assert (result.delta, result.ci95_low, result.ci95_high, result.p_value) == \
            (0.0, 0.0, 0.0, 1.0)
        assert result.paired and result.shared_units == 40


def test_paired_comparison_sees_a_consistent_gain_the_unpaired_one_hides():
    rng = random.Random(4)
    base = [rng.random() for _ in range(60)]
    a = toy_samples(base)
    b = toy_samples([min(1.0, v + 0.02) for v in base])
    paired = compare(Toy(), a, b, OPTIONS, False, "score", resamples=1000)
    unpaired = compare(Toy(), a, b, OPTIONS, False, "score", resamples=1000, pair=False)
    assert paired.paired and not unpaired.paired
    assert paired.delta == pytest.approx(unpaired.delta) and paired.delta > 0
    assert 0 < paired.ci95_low and paired.p_value < 0.01
    assert unpaired.ci95_low < 0 < unpaired.ci95_high and unpaired.p_value > 0.5
    json.dumps(dataclasses.asdict(paired), allow_nan=False)


def test_runs_on_different_items_are_compared_unpaired_and_the_overlap_is_counted():
    a = toy_samples([0.1 * i for i in range(10)])
    b = toy_samples([0.1 * i for i in range(12)])
    result = compare(Toy(), a, b, OPTIONS, False, "score", resamples=200)
    assert not result.paired and (result.units_a, result.units_b) == (10, 12)
    assert result.shared_units == 10


# ---------------------------------------------------------------------- fast paths


def _hotpot_samples(rng: random.Random, count: int) -> list[ScoredSample]:
    samples = []
    for index in range(count):
        incomplete = rng.choice([0.0, 0.5, 1.0])
        complete = rng.choice([incomplete, 1.0])
        row = {f"{metric}_{context}": rng.choice([0.0, value, 1.0])
               for metric in ("f1", "em", "em_raw")
               for context, value in (("incomplete", incomplete),
                                      ("response", rng.choice([incomplete, complete])),
                                      ("complete", complete))}
        row["masked_fact_returned"] = float(rng.random() < 0.4)
        assert set(row) == set(ROW_KEYS)
        if index % 17 == 0:
            row["f1_response"] = None  # an incomplete row: left out of the corpus metrics
        samples.append(ScoredSample(str(index), {**row,
                                                 "agent_fallback_rate": float(rng.random() < 0.1),
                                                 "empty_question_rate": None if index % 5
                                                 else float(rng.random() < 0.5)}))
    return samples


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choices("which one do you mean the red blue boat tree".split(),
                                k=rng.randint(0, 8)))


def _abg_samples(rng: random.Random, subtask: str) -> list[ScoredSample]:
    samples = []
    for index in range(80):
        sample_id = f"story{index // 3}|{index % 3 + 2}|1" + ("#0" if subtask ==
                                                              "clarified_qa" else "")
        gold = rng.random() < 0.3
        samples.append(ScoredSample(
            sample_id,
            {"f1": rng.random(), "answer_f1": None if gold else rng.random(),
             "parse_rate": float(rng.random() < 0.9), "outputs_truncated": 0.0},
            {"predicted_ambiguous": rng.random() < 0.3, "gold_ambiguous": gold,
             "question": _sentence(rng),
             "references": [_sentence(rng) or "x" for _ in range(rng.randint(1, 2))]}))
    return samples


def _condambigqa_samples(rng: random.Random) -> list[ScoredSample]:
    benchmark = registry.get("condambigqa")
    names = [spec.name for spec in benchmark.metric_specs if spec.aggregation != CORPUS]
    return [ScoredSample(str(i), {name: rng.random() if rng.random() < 0.9 else None
                                  for name in names},
                         {"judgements": rng.randint(0, 4), "weighted_judgements":
                          rng.randint(0, 2)})
            for i in range(60)]


def _conditionalqa_samples(rng: random.Random) -> list[ScoredSample]:
    names = [spec.name for spec in registry.get("conditionalqa").metric_specs]
    return [ScoredSample(f"dev-{i}", {name: rng.random() for name in names},
                         {"document": f"doc{i % 7}"}) for i in range(50)]


FAST_CASES = {
    "hotpot_flm": ("hotpot_flm", {}, False, lambda rng: _hotpot_samples(rng, 300)),
    "abg_coqa detection": ("abg_coqa", {"subtask": "detection"}, False,
                           lambda rng: _abg_samples(rng, "detection")),
    "abg_coqa clarification": ("abg_coqa", {"subtask": "clarification"}, False,
                               lambda rng: _abg_samples(rng, "clarification")),
    "abg_coqa clarified_qa": ("abg_coqa", {"subtask": "clarified_qa"}, False,
                              lambda rng: _abg_samples(rng, "clarified_qa")),
    "condambigqa judged": ("condambigqa", {}, True, _condambigqa_samples),
    "conditionalqa": ("conditionalqa", {}, False, _conditionalqa_samples),
}


@pytest.mark.parametrize("case", FAST_CASES)
def test_the_fast_path_gives_metric_values_on_every_resample(case):
    name, values, judged, build = FAST_CASES[case]
    benchmark = registry.get(name)
    options = benchmark.options(values)
    samples = build(random.Random(9))
    units = Units.of(benchmark, samples)
    names = list(reported_values(benchmark, samples, options, judged))
    fast = _Resampler(benchmark, samples, units, options, judged, names)
    plain = _Resampler(benchmark, samples, units, options, judged, names, fast=False)
    assert fast.plain == [], "every metric has a fast path"
    draws = next(_draws(len(units), 40, np.random.default_rng(1)))
    got, expected = fast.values(draws), plain.values(draws)
    assert set(got) == set(expected) == set(names)
    for metric in names:
        np.testing.assert_allclose(got[metric], expected[metric], rtol=1e-9, atol=1e-9,
                                   err_msg=metric)


def test_a_fast_path_that_disagrees_with_the_benchmark_is_not_used(caplog):
    class Wrong(Singletons):
        def corpus_statistics(self, samples, options, judged):
            from condambig_tasks.uncertainty import CorpusStatistics
            return CorpusStatistics(("a",), [[s.details["a"]] for s in samples],
                                    lambda totals: {"ratio": totals["a"]})  # forgets Σb

    samples = toy_samples([0.2, 0.4, 0.9])
    resampler = _Resampler(Wrong(), samples, Units.of(Wrong(), samples), OPTIONS, False,
                           ["ratio"])
    assert resampler.plain == ["ratio"] and "fast path of ratio" in caplog.text


def test_units_of_the_benchmarks():
    abg = registry.get("abg_coqa")
    ids = ["s1|3|2", "s1|4|2#0", "s1|4|2#1", "s2|2|1"]
    assert [abg.cluster(ScoredSample(i, {})) for i in ids] == ["s1", "s1", "s1", "s2"]
    assert abg.resampling_unit == "conversation"
    conditionalqa = registry.get("conditionalqa")
    assert conditionalqa.cluster(ScoredSample("dev-1", {}, {"document": "u"})) == "u"
    assert conditionalqa.cluster(ScoredSample("dev-1", {})) == "dev-1"
    for name in ("condambigqa", "ambignq", "hotpot_flm"):
        assert registry.get(name).cluster(ScoredSample("q7", {})) == "q7"


def test_a_scored_conditionalqa_question_names_its_document(use_fixture_data):
    benchmark = registry.get("conditionalqa")
    options = benchmark.options({})
    item = benchmark.load(options)[0]
    sample = benchmark.score(item, '{"answers": []}', options)
    assert benchmark.cluster(sample) == item.question.url != sample.id


# ---------------------------------------------------------------------- condambig-score


def _score(tmp_path, capsys, *extra: str) -> tuple[int, dict | None, str]:
    pred = tmp_path / "detection.json"
    pred.write_text(json.dumps([{"id": key, "output": value}
                                for key, value in RAW_OUTPUTS["detection"].items()]))
    try:
        code = main(["abg_coqa", "--subtask", "detection", "--pred", str(pred), "--ref",
                     str(FIXTURE_DATA / "abg_coqa" / "coqa_abg_val.json"), *extra])
    except SystemExit as stop:  # argparse refuses a bad flag value (exit 2, usage line)
        code = stop.code
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if code == 0 else None, captured.err


def test_condambig_score_reports_stderr_and_ci95_of_every_metric(tmp_path, capsys):
    code, result, err = _score(tmp_path, capsys, "--seed", "3")
    assert code == 0, err
    assert set(result["stderr"]) == set(result["ci95"]) == set(result["metrics"])
    assert result["uncertainty"]["resamples"] == 1000 and result["uncertainty"]["seed"] == 3
    assert result["uncertainty"]["unit"] == "conversation"
    # answer_f1 (turns without a gold clarification) is undefined on a resample without any
    undefined = result["uncertainty"]["undefined_resamples"]
    assert set(undefined) <= {"answer_f1"} and all(0 < n < 1000 for n in undefined.values())
    assert "left out" in result["uncertainty"]["undefined"]
    for name, value in result["metrics"].items():
        interval = result["ci95"][name]
        if value is None or result["stderr"][name] is None:
            continue
        assert interval[0] <= interval[1]
    _, again, _ = _score(tmp_path, capsys, "--seed", "3", "--bootstrap-resamples", "200")
    assert again["uncertainty"]["resamples"] == 200


def test_condambig_score_without_bootstrap(tmp_path, capsys):
    code, result, err = _score(tmp_path, capsys, "--bootstrap-resamples", "0")
    assert code == 0, err
    assert not {"stderr", "ci95", "uncertainty"} & set(result)
    code, _, err = _score(tmp_path, capsys, "--bootstrap-resamples", "-1")
    assert code != 0 and "--bootstrap-resamples" in err


def test_bounding_the_draws_per_block_keeps_the_same_resamples(monkeypatch):
    """Blocks of fewer resamples (many units) draw the very same unit indices, so a large
    run's bootstrap gives the numbers it gave with 100 resamples a block."""
    import numpy as np

    from condambig_tasks import uncertainty

    whole = np.concatenate(list(uncertainty._draws(50, 230, np.random.default_rng(7))))
    monkeypatch.setattr(uncertainty, "_BLOCK_DRAWS", 50 * 3)  # 3 resamples a block
    blocks = list(uncertainty._draws(50, 230, np.random.default_rng(7)))
    assert max(len(block) for block in blocks) == 3
    assert np.array_equal(np.concatenate(blocks), whole)
