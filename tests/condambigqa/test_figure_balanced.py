"""The ground-truth-conditions and no-conditions settings report the authors' figure values
(Fig. 4: ``calculate_balanced_scores`` of innovation64/CondAmbigQA's
``visualization/comp_experiment_stats_viz.py``, condition score 0), hand-computed."""

from __future__ import annotations

import json

import pytest

from condambig_metrics.condambigqa import figure_balanced_parts
from condambig_metrics.judge import JudgeResult
from condambig_tasks.benchmark import headline_metric, reported_values
from condambig_tasks.condambigqa.benchmark import CondAmbigQA, CondAmbigQAOptions, scored_sample
from condambig_tasks.condambigqa.parser import parse_response
from condambig_tasks.condambigqa.records import (
    CondAmbigQuestion,
    Fragment,
    GoldProperty,
    Setting,
)
from condambig_tasks.condambigqa.scoring import plan_judgements, score_question

QUESTION = CondAmbigQuestion(
    id="q1", question="Who won?",
    fragments=tuple(Fragment(f"T{i}", f"text {i}") for i in range(1, 6)),
    properties=(GoldProperty("men's race", "Ben won", (1, 2)),
                GoldProperty("women's race", "Ana won", (3,))),
)
# three pairs for two gold properties: the third is left unmatched
PAIRS = (("men's race", "Ben won", [1, 2]), ("women's race", "Ana won", [3]),
         ("relay", "Zed won", [4, 5]))
ANSWERS = {(0, 0): 0.8, (0, 1): 0.1, (1, 0): 0.1, (1, 1): 0.6, (2, 0): 0.9, (2, 1): 0.9}


def _score(setting: Setting):
    output = json.dumps({"conditions": [
        {"condition": c, "answer": a, "citations": [f"Fragment {n}" for n in cites]}
        for c, a, cites in PAIRS]})
    parsed = parse_response(output, setting, len(QUESTION.fragments))
    plan = plan_judgements(setting, QUESTION, "P", parsed)
    judgements = {key: JudgeResult(score=ANSWERS[key[1:]], raw_score=0.0, weighted=True,
                                   failed=False, error=None, cached=False, reason="")
                  for key in plan}
    return score_question(setting, QUESTION, parsed, judgements)


def test_the_authors_rule_with_condition_zero():
    # a = t = .5, k = 2, one pair for two expected: quantity .1; q_cit = .5·1.6 = .8,
    # quality = .5·(0 + .5)/2 + .5·.8 = .525, F = .6·.525 + .4·.1 = .355
    parts = figure_balanced_parts(0.5, 0.5, 2, expected_count=2, generated_count=1)
    assert (parts.condition, parts.answer, parts.citation) == pytest.approx(
        (0.0, 0.1775, 0.284))
    # k is capped at 3 and the parts clipped to 1: q_cit = 1.9, F = .6·1.2 + .4 = 1.12
    capped = figure_balanced_parts(1.0, 1.0, 7, expected_count=2, generated_count=2)
    assert (capped.answer, capped.citation) == (1.0, 1.0)


def test_gold_conditions_count_every_generated_pair_and_no_count_penalty():
    score = _score(Setting.GOLD_CONDITIONS)
    assert score.matches == ((0, 0), (1, 1))
    assert (score.answer, score.citation) == pytest.approx((0.7, 1.0))  # raw: matched pairs
    # the figure: a = (.8 + .6 + 0)/3, t = (1 + 1 + 0)/3, k = (2 + 1 + 2)/3, quantity 1;
    # q_cit = 2/3·1.5 = 1, quality = .5·(1.4/3)/2 + .5 = .61667, F = .37 + .4 = .77
    assert score.balanced_answer == pytest.approx(1.4 / 3 * 0.77)
    assert score.balanced_citation == pytest.approx(0.77)


def test_no_conditions_use_matched_means_the_count_penalty_and_no_citation_boost():
    score = _score(Setting.NO_CONDITIONS)
    assert score.matches == ((0, 0), (1, 1))
    assert (score.answer, score.citation) == pytest.approx((0.7, 1.0))
    # a = .7, t = 1, k = 0 (q_cit = 1); quality = .5·.7/2 + .5 = .675; one extra pair of two
    # gold: quantity = 1 − min(.15·.5, .075)·(2 − 1) = .925; F = .405 + .37 = .775
    assert score.balanced_answer == pytest.approx(0.7 * 0.775)
    assert score.balanced_citation == pytest.approx(0.775)


@pytest.mark.parametrize("setting", [Setting.GOLD_CONDITIONS, Setting.NO_CONDITIONS])
def test_the_figure_values_head_the_settings_and_average_over_questions(setting):
    options = CondAmbigQAOptions(setting=setting)
    benchmark = CondAmbigQA()
    names = [spec.name for spec in benchmark.active_metrics(options, judged=True)]
    assert {"balanced_answer", "balanced_citation"} <= set(names)
    assert not {"balanced_condition", "combined_score"} & set(names)
    assert headline_metric(benchmark, options, True) == "balanced_answer"
    assert headline_metric(benchmark, options, False) == "citation_score"
    failed = score_question(setting, QUESTION, parse_response("no json", setting, 5), {})
    assert (failed.balanced_answer, failed.balanced_citation) == (0.0, 0.0)
    good = _score(setting)
    summary = reported_values(benchmark, [scored_sample(good, True), scored_sample(failed, True)],
                                  options, True)
    assert summary["balanced_answer"] == pytest.approx(good.balanced_answer / 2)
    assert summary["balanced_citation"] == pytest.approx(good.balanced_citation / 2)
    assert list(summary)[0] == "balanced_answer"


def test_closed_book_settings_have_no_balanced_citation():
    for setting in (Setting.CLOSED_BOOK, Setting.CLOSED_BOOK_CONDITIONS):
        names = [spec.name for spec in CondAmbigQA().active_metrics(
            CondAmbigQAOptions(setting=setting), judged=True)]
        assert "balanced_answer" in names and "balanced_citation" not in names
        empty = score_question(setting, QUESTION, parse_response("", setting, 5), {})
        assert empty.balanced_citation is None and empty.balanced_answer == 0.0
