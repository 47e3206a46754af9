"""Past ``judge_max_failed`` failed judgements, the judged quality metrics are withheld."""

from condambig_tasks import registry
from condambig_tasks.run import withhold_judged_metrics

SUMMARY = {"combined_score": 0.5, "balanced_condition": 0.3, "citation_score": 0.8,
           "judge_failed": 2.0, "judge_weighted_rate": 1.0, "suite_score": 0.5}


def _withhold(failed: int, max_failed: int, judged: bool = True):
    benchmark = registry.get("condambigqa")
    return withhold_judged_metrics(
        benchmark, SUMMARY, {}, benchmark.options({}), judged, failed=failed, max_failed=max_failed,
        retry_hint="run the same command again")


def test_over_the_limit_judged_metrics_and_headline_are_null_with_the_reason():
    values, reasons = _withhold(failed=2, max_failed=1)
    assert values["combined_score"] is None and values["balanced_condition"] is None
    assert values["suite_score"] is None
    assert reasons["combined_score"] == ("2 judgement(s) failed (judge_max_failed=1); "
                                         "run the same command again")
    assert reasons["suite_score"].startswith("the headline combined_score is null: 2 ")
    # judge-free metrics, the failure count and direction-less diagnostics stay
    assert (values["citation_score"], values["judge_failed"],
            values["judge_weighted_rate"]) == (0.8, 2.0, 1.0)


def test_within_the_limit_or_without_a_judge_nothing_changes():
    assert _withhold(failed=1, max_failed=1) == (SUMMARY, {})
    assert _withhold(failed=0, max_failed=0) == (SUMMARY, {})
    assert _withhold(failed=5, max_failed=0, judged=False) == (SUMMARY, {})


def test_a_judge_free_headline_stays():
    benchmark = registry.get("abg_coqa")
    options = benchmark.options({"subtask": "clarification"})
    summary = {"bleu4": 20.0, "judge_helpfulness": 0.6, "judge_failed": 1.0,
               "suite_score": 0.2}
    values, reasons = withhold_judged_metrics(
        benchmark, summary, {}, options, True, failed=1, max_failed=0, retry_hint="again")
    assert values == {**summary, "judge_helpfulness": None}
    assert list(reasons) == ["judge_helpfulness"]
