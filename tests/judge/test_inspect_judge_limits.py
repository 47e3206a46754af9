"""Inspect's judge limits without a run: -T judge_max_failed, the failure count read from
the samples' judge_calls, and the grader errors the scorer ends a task on."""

from __future__ import annotations

import math

import pytest

from condambig._factory import benchmark_metrics, max_failed_option
from condambig.judge_backend import error_summary, status_code
from condambig.run_summary import run_summary, scored_samples
from condambig_tasks import registry
from condambig_tasks.benchmark import options_to_json
from condambig_tasks.errors import ConfigurationError


def test_judge_max_failed_defaults_to_the_environment(monkeypatch):
    monkeypatch.delenv("CONDAMBIG_JUDGE_MAX_FAILED", raising=False)
    assert max_failed_option(None) == 0
    monkeypatch.setenv("CONDAMBIG_JUDGE_MAX_FAILED", "3")
    assert max_failed_option(None) == 3
    assert max_failed_option(5) == 5  # -T wins


@pytest.mark.parametrize("value", [-1, "many", 1.5])
def test_judge_max_failed_must_be_a_count(value):
    with pytest.raises(ConfigurationError, match="judge_max_failed"):
        max_failed_option(value)


def _clarification_scores(failed: int, judged: int):
    """Abg-CoQA clarification samples, one judgement each."""
    scores = []
    for index in range(failed + judged):
        ok = index >= failed
        value = {"judge_helpfulness": 0.8 if ok else math.nan, "judge_failed": 0.0 if ok else 1.0}
        metadata = {"question": "Which boat?", "references": ["Which boat do you mean?"],
                    "judge_calls": [{"prompt": f"p{index}", "failed": not ok,
                                     "error": None if ok else "grader failed: 400"}]}
        scores.append((f"s{index}", value, metadata))
    return scores


def test_failed_judgements_past_the_limit_withhold_the_judged_metrics():
    benchmark = registry.get("abg_coqa")
    options = benchmark.options({"subtask": "clarification"})
    scores = scored_samples(_clarification_scores(failed=2, judged=3))
    within = run_summary(benchmark, options, True, 2, scores)
    assert not within.judge_failed  # 2 failed, 2 allowed
    assert within.values["judge_helpfulness"] == pytest.approx(0.8)
    past = run_summary(benchmark, options, True, 1, scores)
    assert past.judge_failed
    assert past.values["judge_helpfulness"] is None
    assert past.reasons["judge_helpfulness"].startswith(
        "2 judgement(s) failed (judge_max_failed=1); rescore the stored outputs with `")
    assert "condambig-score abg_coqa --from-log <log>" in past.reasons["judge_helpfulness"]
    assert "condambig-inspect-score <log>" in past.reasons["judge_helpfulness"]
    assert past.values["bleu4"] == within.values["bleu4"]  # judge-free: kept


def test_the_metric_reports_withheld_values_as_nan():
    from inspect_ai.scorer import SampleScore, Score

    benchmark = registry.get("abg_coqa")
    options = options_to_json(benchmark, benchmark.options({"subtask": "clarification"}))
    scores = [SampleScore(sample_id=sample_id, score=Score(value=value, metadata=metadata))
              for sample_id, value, metadata in _clarification_scores(failed=1, judged=1)]
    values = benchmark_metrics("abg_coqa", options, True, 0)(scores)
    assert math.isnan(values["judge_helpfulness"])
    assert benchmark_metrics("abg_coqa", options, True, 1)(scores)["judge_helpfulness"] == \
        pytest.approx(0.8)


def test_grader_errors_are_read_through_inspects_wrapper():
    class ProviderError(Exception):
        status_code = 403

    try:
        try:
            raise ProviderError("Error code: 403 - forbidden")
        except ProviderError as cause:
            raise RuntimeError("Request:\n{\n  \"messages\": []\n}\n\nError code: 403 - "
                               "forbidden") from cause
    except RuntimeError as error:
        assert status_code(error) == 403
        assert error_summary(error) == "Error code: 403 - forbidden"
    assert status_code(ValueError("no status")) is None
    assert len(error_summary(ValueError("x" * 1000))) == 300
