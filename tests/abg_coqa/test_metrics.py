"""Abg-CoQA metrics against hand-computed cases."""

from __future__ import annotations

import math

import pytest

from condambig_metrics.abg_coqa import coqa_f1, corpus_bleu, detection_scores, leave_one_out_f1


def test_coqa_f1_normalises_and_treats_empty_answers_as_equal():
    assert coqa_f1("The dense brush-wood.", "dense brushwood") == 1.0
    assert coqa_f1("bicycles and books", "books") == pytest.approx(2 * 1 * (1 / 3) / (4 / 3))
    assert coqa_f1("", "") == 1.0 and coqa_f1("boat", "") == 0.0 and coqa_f1("", "x") == 0.0
    assert coqa_f1("the", "a") == 1.0  # articles only: both empty after normalisation


def test_leave_one_out_f1_over_three_references():
    references = ["picnics on the island", "rowing to the island for a picnic", "a Sunday picnic"]
    # "a picnic" -> [picnic]: F1 0, 1/3 (P 1, R 1/5), 2/3 (P 1, R 1/2) against the three
    # leave out 1: max(1/3, 2/3); leave out 2: max(0, 2/3); leave out 3: max(0, 1/3)
    assert leave_one_out_f1(references, "a picnic") == pytest.approx((2 / 3 + 2 / 3 + 1 / 3) / 3)


def test_leave_one_out_f1_first_reference_fed_back():
    assert leave_one_out_f1(["No", "no.", "NO"], "No") == 1.0           # all agree
    assert leave_one_out_f1(["Rope.", "ropes", "Rope"], "Rope.") == 1.0  # agrees with one other
    # agrees with neither other reference: leaving out the others still finds itself
    assert leave_one_out_f1(["Rope.", "the brush", "ropes"], "Rope.") == pytest.approx(2 / 3)


def test_leave_one_out_with_one_reference_is_plain_f1():
    assert leave_one_out_f1(["blue"], "Blue!") == 1.0
    with pytest.raises(ValueError):
        leave_one_out_f1([], "x")


def test_detection_precision_recall_f1():
    predicted = [True, True, False, False, True]
    gold = [True, False, True, False, False]
    scores = detection_scores(predicted, gold)
    assert (scores.precision, scores.recall) == pytest.approx((1 / 3, 1 / 2))
    assert scores.f1 == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))
    assert (scores.true_positives, scores.predicted_ambiguous, scores.gold_ambiguous) == (1, 3, 2)


def test_detection_without_positive_predictions_scores_zero_not_nan():
    scores = detection_scores([False, False, False], [True, False, False])
    assert (scores.precision, scores.recall, scores.f1) == (0.0, 0.0, 0.0)
    nothing_ambiguous = detection_scores([False], [False])
    assert (nothing_ambiguous.precision, nothing_ambiguous.recall, nothing_ambiguous.f1) == (0.0, 0.0, 0.0)


def test_corpus_bleu_identity_is_100_with_one_or_two_references():
    hypotheses = ["Do you mean the red boat or the blue boat?", "Which tree do you mean?"]
    references = [["Do you mean the red boat or the blue boat?", "Are you asking about the old boat?"],
                  ["Which tree do you mean?"]]
    assert all(value == pytest.approx(100.0) for value in corpus_bleu(hypotheses, references).values())


def test_corpus_bleu_brevity_penalty_and_second_reference():
    # 13a tokens: hypothesis "Do you mean the boat ?" (6), reference "... the red boat ?" (7):
    # unigrams 6/6, bigrams 4/5 ("the boat" missing); brevity penalty exp(1 - 7/6)
    one = corpus_bleu(["Do you mean the boat?"], [["Do you mean the red boat?"]])
    penalty = math.exp(1 - 7 / 6)
    assert one["bleu1"] == pytest.approx(100 * penalty, rel=1e-9)
    assert one["bleu2"] == pytest.approx(100 * penalty * (1 * 4 / 5) ** 0.5, rel=1e-9)
    # a second reference of the same length containing "the boat": every n-gram matches in one
    # reference or the other and the closest reference length is 6
    two = corpus_bleu(["Do you mean the boat?"],
                      [["Do you mean the red boat?", "Did you mean the boat?"]])
    assert two["bleu2"] == pytest.approx(100.0) and two["bleu4"] == pytest.approx(100.0)


def test_corpus_bleu_empty_corpus_and_missing_reference():
    assert corpus_bleu([], []) == {"bleu1": 0.0, "bleu2": 0.0, "bleu3": 0.0, "bleu4": 0.0}
    with pytest.raises(ValueError):
        corpus_bleu(["q"], [[]])
