"""Inspect's ``benchmark_metrics``: a ``<metric>_stderr`` beside every metric, computed by
:func:`condambig_tasks.uncertainty.uncertainty` on the very samples the metric summarises.

In process, on the fixture data: the task's own scorer on ``TaskState``s built from its
samples, then its metric (the subprocess run of ``inspect eval`` is in
tests/test_inspect_stats_e2e.py).
"""

from __future__ import annotations

import math

import pytest

from condambig_tasks import registry, settings
from condambig_tasks.benchmark import ScoredSample, options_to_json, reported_values
from condambig_tasks.errors import ConfigurationError
from condambig_tasks.uncertainty import DEFAULT_RESAMPLES, uncertainty
from tests.abg_coqa.scripted_outputs import RAW_OUTPUTS as ABG_OUTPUTS
from tests.ambignq.scripted_outputs import RAW_OUTPUTS as AMBIGNQ_OUTPUTS
from tests.support.inspect_scoring import scripted_scores


def _samples(scores) -> list[ScoredSample]:
    return [ScoredSample(id=str(s.sample_id), values=s.score.value, details=s.score.metadata)
            for s in scores]


def _same(a: float, b: float | None) -> bool:
    if b is None:
        return math.isnan(a)
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)


@pytest.mark.parametrize("name, options, outputs", [
    ("ambignq", {}, AMBIGNQ_OUTPUTS),
    # the turns of one conversation are one resampling unit
    ("abg_coqa", {"subtask": "detection", "split": "val"}, ABG_OUTPUTS["detection"]),
])
def test_every_metric_has_the_stderr_uncertainty_gives_on_its_samples(
        name, options, outputs, use_fixture_data):
    from condambig._factory import benchmark_task

    task = benchmark_task(name, options, judge=False)
    [metric] = task.metrics
    scores = scripted_scores(task, outputs)
    values = metric(scores)
    benchmark = registry.get(name)
    typed = benchmark.options(options)
    expected = uncertainty(benchmark, _samples(scores), typed, False)
    reported = [key for key in values if not key.endswith("_stderr")]
    assert reported == list(reported_values(benchmark, _samples(scores), typed, False))
    # each metric's stderr right after it (Inspect's table reads "metric, its stderr")
    assert list(values) == [key for name in reported for key in (name, f"{name}_stderr")]
    for key in reported:
        assert _same(values[f"{key}_stderr"], expected[key].stderr), key
    assert any(values[f"{key}_stderr"] > 0 for key in reported)  # not all degenerate


def test_withheld_metrics_have_no_stderr(use_fixture_data):
    """Past judge_max_failed failed judgements a judged metric is NaN: so is its stderr."""
    from condambig._factory import benchmark_metrics

    benchmark = registry.get("abg_coqa")
    options = benchmark.options({"subtask": "clarification", "split": "val"})
    items = benchmark.load(options)
    from inspect_ai.scorer import SampleScore, Score

    scores = []
    for index in range(4):  # the fixture's two turns, each twice as its own conversation
        item = items[index % len(items)]
        sample = benchmark.score(item, ABG_OUTPUTS["clarification"][benchmark.item_id(item)],
                                 options)
        failed = index == 0
        values = {**sample.values, "judge_helpfulness": math.nan if failed else index / 4,
                  "judge_failed": float(failed)}
        metadata = {**sample.details, "judge_calls": [{"failed": failed, "error": "HTTP 400"}]}
        scores.append(SampleScore(score=Score(value=values, metadata=metadata),
                                  sample_id=f"conversation{index}|1|1"))
    metric = benchmark_metrics("abg_coqa", options_to_json(benchmark, options), True, 0)
    values = metric(scores)
    assert math.isnan(values["judge_helpfulness"])
    assert math.isnan(values["judge_helpfulness_stderr"])
    assert values["parse_rate_stderr"] == values["parse_rate_stderr"]  # a number
    # allowed one failure: the judged metric and its stderr are numbers
    values = benchmark_metrics("abg_coqa", options_to_json(benchmark, options), True, 1)(scores)
    assert not math.isnan(values["judge_helpfulness"])
    assert values["judge_helpfulness_stderr"] == values["judge_helpfulness_stderr"]


def test_bootstrap_resamples_setting(monkeypatch, use_fixture_data):
    from inspect_ai._util.registry import registry_params

    from condambig._factory import benchmark_task

    monkeypatch.delenv(settings.BOOTSTRAP_RESAMPLES_VARIABLE, raising=False)
    assert settings.bootstrap_resamples() == DEFAULT_RESAMPLES
    monkeypatch.setenv(settings.BOOTSTRAP_RESAMPLES_VARIABLE, "200")
    task = benchmark_task("ambignq", {}, judge=False)
    [metric] = task.metrics
    assert registry_params(metric)["bootstrap_resamples"] == 200  # recorded in the log
    monkeypatch.setenv(settings.BOOTSTRAP_RESAMPLES_VARIABLE, "0")
    [metric] = benchmark_task("ambignq", {}, judge=False).metrics
    values = metric(scripted_scores(task, AMBIGNQ_OUTPUTS))
    assert values and not any(key.endswith("_stderr") for key in values)
    for bad in ("-1", "many", "1.5"):
        monkeypatch.setenv(settings.BOOTSTRAP_RESAMPLES_VARIABLE, bad)
        with pytest.raises(ConfigurationError, match="CONDAMBIG_BOOTSTRAP_RESAMPLES"):
            benchmark_task("ambignq", {}, judge=False)


def test_the_progress_display_gets_values_and_the_results_their_stderr(use_fixture_data):
    """Inspect's own progress-display computation (``update_metrics_display_fn``, the
    internal :mod:`condambig.live_metrics` looks for) shows the metric values without the
    bootstrap; the results computation, outside it, has every stderr. Fails when Inspect
    renames or moves the display's computation."""
    from inspect_ai._eval.task.results import eval_results
    from inspect_ai._eval.task.run import update_metrics_display_fn

    from condambig._factory import benchmark_task

    task = benchmark_task("ambignq", {}, judge=False)
    scores = scripted_scores(task, AMBIGNQ_OUTPUTS)
    [scorer] = task.scorer
    by_scorer = [{"benchmark_scorer": score} for score in scores]
    shown: list = []
    display = update_metrics_display_fn(shown.append)
    display(len(by_scorer), by_scorer, [scorer], ["benchmark_scorer"], task.epochs_reducer,
            task.metrics)
    names = [metric.name for metric in shown[0]]
    assert "f1_answer_all" in names and not any(name.endswith("_stderr") for name in names)
    results, _ = eval_results(len(by_scorer), by_scorer, task.epochs_reducer, [scorer],
                              task.metrics, ["benchmark_scorer"])
    final = {name for score in results.scores for name in score.metrics}
    assert {"f1_answer_all", "f1_answer_all_stderr"} <= final
