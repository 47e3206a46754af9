"""Hand-computed cases for every rule of the official ConditionalQA metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from condambig_metrics.conditionalqa import (
    FULL_SCORES,
    ZERO_SCORES,
    QuestionCategories,
    QuestionScores,
    best_assignment_total,
    condition_f1,
    length_penalty,
    question_categories,
    score_question,
)
from condambig_tasks.benchmark import ScoredSample
from condambig_tasks.conditionalqa.benchmark import ConditionalQA
from condambig_tasks.conditionalqa.scoring import SCORE_METRICS, question_values
from tests.support.work import growth


def approx_scores(em, em_c, f1, f1_c):
    return pytest.approx((em, em_c, f1, f1_c), abs=1e-12)


# --- condition-set F1 -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("predicted", "reference", "expected"),
    [
        ([], [], 1.0),  # no condition needed, none given
        (["<p>a</p>"], [], 0.0),  # a condition given where none is needed
        ([], ["<p>a</p>"], 0.0),  # a needed condition missing
        (["<p>a</p>"], ["<p>a</p>"], 1.0),
        (["<p>b</p>"], ["<p>a</p>"], 0.0),
        # duplicates count once: {a, b} vs {a}: P = 1/2, R = 1, F1 = 2/3
        (["<p>a</p>", "<p>a</p>", "<p>b</p>"], ["<p>a</p>"], 2 / 3),
        (["<p>a</p>"], ["<p>a</p>", "<p>a</p>"], 1.0),
        # {a} vs {a, b, c}: P = 1, R = 1/3, F1 = 0.5
        (["<p>a</p>"], ["<p>a</p>", "<p>b</p>", "<p>c</p>"], 0.5),
        # exact strings: whitespace or case differences are different elements
        (["<p>a </p>"], ["<p>a</p>"], 0.0),
    ],
)
def test_condition_f1(predicted, reference, expected):
    assert condition_f1(predicted, reference) == pytest.approx(expected)


# --- not answerable ---------------------------------------------------------------------


def test_not_answerable_reference_scores_one_only_without_prediction():
    assert score_question([], []) == FULL_SCORES
    assert score_question([("yes", [])], []) == ZERO_SCORES
    assert score_question([("", [])], []) == ZERO_SCORES  # any predicted entry is an answer


def test_no_prediction_for_answerable_question_scores_zero():
    assert score_question([], [("yes", [])]) == ZERO_SCORES


# --- padding and the length penalty -----------------------------------------------------


def test_short_prediction_is_padded_and_not_penalised():
    reference = [("yes", []), ("no", ["<li>c1</li>"])]
    # padded to [("yes", []), ("", [])]: m = n = 2, gamma = 1
    scores = score_question([("yes", [])], reference)
    assert scores.values() == approx_scores(0.5, 0.5, 0.5, 0.5)


@pytest.mark.parametrize(
    ("predicted_count", "reference_count", "expected"),
    [(1, 1, 1.0), (1, 3, 1.0), (2, 1, math.exp(-1.0)), (3, 2, math.exp(-0.5)), (12, 3, math.exp(-3.0))],
)
def test_length_penalty(predicted_count, reference_count, expected):
    assert length_penalty(predicted_count, reference_count) == pytest.approx(expected)


def test_extra_answers_are_penalised_by_gamma():
    reference = [("within 4 weeks", [])]
    scores = score_question([("within 4 weeks", []), ("yes", [])], reference)
    gamma = math.exp(1 - 2 / 1)
    assert scores.values() == approx_scores(gamma, gamma, gamma, gamma)


def test_gamma_uses_padded_count_and_reference_count():
    reference = [("a", []), ("b", []), ("c", [])]
    predicted = [("a", []), ("b", []), ("c", []), ("d", [])]
    # 3 of 4 predictions match: 3/3 * exp(1 - 4/3)
    expected = math.exp(1 - 4 / 3)
    assert score_question(predicted, reference).em == pytest.approx(expected)


# --- SQuAD normalisation and token F1 inside the pairs ---------------------------------


def test_answers_compared_after_squad_normalisation():
    scores = score_question([("The £110.", [])], [("£110", [])])
    assert scores.em == 1.0 and scores.f1 == 1.0


def test_answers_without_tokens_follow_squad2():
    # "The" normalises to no token: the padded ("", []) agrees with it (SQuAD 2.0 rule)
    assert score_question([], [("The", [])]) == FULL_SCORES
    # a prediction with no token against a real answer scores 0
    assert score_question([("a", [])], [("4 weeks", [])]) == ZERO_SCORES


def test_many_predicted_answers_are_scored_exactly_and_quickly():
    predicted = [(f"answer {index}", []) for index in range(400)] + [("4 weeks", [])]
    scores = score_question(predicted, [("4 weeks", []), ("yes", [])])
    assert scores.em == pytest.approx(0.5 * math.exp(1 - 401 / 2), rel=1e-12)
    # 20,000 answers: no 20,000 x 20,000 matrix is built (4x the answers, not 16x the work)
    def answers(count: int) -> list:
        return [(f"answer {index}", []) for index in range(count)]

    assert growth(lambda many: score_question(many, [("yes", [])]), answers(5000),
                  answers(20000)) < 8


def test_token_f1_partial_answer():
    # "a photo" vs "a photo of your garden": tokens [photo] vs [photo, of, your, garden]
    # P = 1, R = 1/4, F1 = 0.4; EM = 0
    scores = score_question([("a photo", [])], [("a photo of your garden", [])])
    assert scores.values() == approx_scores(0.0, 0.0, 0.4, 0.4)


def test_with_conditions_multiplies_answer_score_by_condition_f1():
    reference = [("yes", ["<li>c1</li>", "<li>c2</li>"])]
    # condition F1: {c1} vs {c1, c2}: P = 1, R = 1/2 -> 2/3
    scores = score_question([("yes", ["<li>c1</li>"])], reference)
    assert scores.values() == approx_scores(1.0, 2 / 3, 1.0, 2 / 3)


# --- separate maximisation --------------------------------------------------------------


def test_each_metric_is_maximised_separately():
    c1 = "<li>c1</li>"
    reference = [("red apple", [c1]), ("green pear", [])]
    predicted = [("red apple", []), ("red pear", [c1])]
    # EM: only (P1, R1) matches -> 1/2.
    # F1: (P1,R1)=1 + (P2,R2)=0.5 -> 1.5/2 = 0.75.
    # EM with conditions: every EM-matching pair has condition F1 0 -> 0.
    # F1 with conditions: (P2,R1) = 0.5 * 1 and (P1,R2) = 0 * 1 -> 0.5/2 = 0.25,
    #   although the assignment that maximises EM/F1 gives 0 here.
    scores = score_question(predicted, reference)
    assert scores.values() == approx_scores(0.5, 0.0, 0.75, 0.25)


def test_order_of_predictions_does_not_matter():
    reference = [("yes", ["<li>a</li>"]), ("no", ["<li>b</li>"])]
    forward = score_question([("yes", ["<li>a</li>"]), ("no", [])], reference)
    backward = score_question([("no", []), ("yes", ["<li>a</li>"])], reference)
    assert forward == backward
    assert forward.values() == approx_scores(1.0, 0.5, 1.0, 0.5)


def test_assignment_total_pads_rows_beyond_columns():
    # 3 predictions x 2 references: best is 0.9 (row 0 -> col 1) + 0.8 (row 2 -> col 0)
    matrix = np.array([[0.1, 0.9], [0.2, 0.3], [0.8, 0.7]])
    assert best_assignment_total(matrix) == pytest.approx(1.7)


# --- breakdown membership ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        ([("yes", [])], QuestionCategories(yesno=True, extractive=False, conditional=False)),
        ([("no", ["<p>c</p>"])], QuestionCategories(yesno=True, extractive=False, conditional=True)),
        # any yes/no answer makes the question yes/no
        ([("yes", []), ("£55", [])], QuestionCategories(yesno=True, extractive=False, conditional=False)),
        ([("within 10 days", [])], QuestionCategories(yesno=False, extractive=True, conditional=False)),
        (
            [("a", ["<p>c</p>"]), ("b", [])],
            QuestionCategories(yesno=False, extractive=True, conditional=True),
        ),
        # not answerable: only in "total"
        ([], QuestionCategories(yesno=False, extractive=False, conditional=False)),
        # the official check is on the raw string
        ([("Yes", [])], QuestionCategories(yesno=False, extractive=True, conditional=False)),
    ],
)
def test_question_categories(answers, expected):
    assert question_categories(answers) == expected


def test_unknown_subset_is_an_error():
    with pytest.raises(ValueError, match="unknown ConditionalQA breakdown"):
        QuestionCategories(True, False, False).member_of("multihop")


# --- corpus report ----------------------------------------------------------------------


def _corpus(*questions: tuple[QuestionScores, QuestionCategories]) -> dict:
    """The corpus values ConditionalQA reports for these per-question scores."""
    benchmark = ConditionalQA()
    samples = [ScoredSample(id=str(index), values=question_values(scores, categories))
               for index, (scores, categories) in enumerate(questions)]
    return dict(benchmark.metric_values(samples, benchmark.options(), judged=False))


def test_summary_averages_each_breakdown_over_its_own_questions():
    yesno = (QuestionScores(1.0, 0.5, 1.0, 0.5), question_categories([("yes", ["<p>c</p>"])]))
    extractive = (QuestionScores(0.0, 0.0, 0.6, 0.6), question_categories([("4 weeks", [])]))
    unanswerable = (QuestionScores(1.0, 1.0, 1.0, 1.0), question_categories([]))
    report = _corpus(yesno, extractive, unanswerable)
    assert {name: report[name] for name in SCORE_METRICS} == pytest.approx(
        {"em": 2 / 3, "em_with_conditions": 1.5 / 3, "f1": 2.6 / 3, "f1_with_conditions": 2.1 / 3}
    )
    for breakdown, expected in [("yesno", (1.0, 0.5, 1.0, 0.5)), ("extractive", (0.0, 0.0, 0.6, 0.6)),
                                ("conditional", (1.0, 0.5, 1.0, 0.5))]:
        assert [report[f"{breakdown}_{name}"] for name in SCORE_METRICS] == pytest.approx(expected)


def test_summary_reports_none_for_an_empty_breakdown():
    report = _corpus((FULL_SCORES, question_categories([("yes", [])])))
    assert all(report[f"{breakdown}_{name}"] is None
               for breakdown in ("extractive", "conditional") for name in SCORE_METRICS)
    assert report["yesno_em"] == 1.0
