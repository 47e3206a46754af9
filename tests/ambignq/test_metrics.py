"""AmbigNQ metrics against hand-computed cases (the rules of the official evaluation script)."""

from __future__ import annotations

import math

import pytest

from condambig_metrics.ambignq import (
    GoldQAPair,
    MultipleQAs,
    PredictedPair,
    QuestionScores,
    SingleAnswer,
    aggregate,
    answer_set_f1,
    edit_f1,
    normalize_question,
    question_bleu,
    question_edits,
    score_question,
)


def test_answer_f1_uses_acceptable_strings_and_normalisation():
    # gold: {Marie Curie | Maria Sklodowska-Curie}, {Pierre}; predicted: two, one matches
    f1 = answer_set_f1([["Marie Curie", "Maria Sklodowska-Curie"], ["Pierre"]],
                       ["the maria sklodowska-CURIE!", "Paris"])
    assert f1 == pytest.approx(0.5)  # recall 1/2, precision 1/2


def test_answer_f1_matching_is_greedy_in_gold_order_not_optimal():
    # gold 0 accepts X or Y and takes the first prediction "Y"; gold 1 (only Y) is then left
    # with "X": 1 match of 2 (an optimal assignment would match both)
    assert answer_set_f1([["X", "Y"], ["Y"]], ["Y", "X"]) == pytest.approx(0.5)
    assert answer_set_f1([["X", "Y"], ["Y"]], ["X", "Y"]) == pytest.approx(1.0)


def test_answer_f1_counts_duplicate_predictions_against_precision():
    assert answer_set_f1([["1932"]], ["1932", "1932"]) == pytest.approx(2 * 0.5 * 1 / 1.5)


def test_answer_f1_empty_prediction_is_zero():
    assert answer_set_f1([["a"]], []) == 0.0


def test_question_score_is_max_over_annotations_and_multi_needs_all_multiple():
    annotations = [
        SingleAnswer(("Lake Orrin",)),
        MultipleQAs((GoldQAPair("largest by area?", ("Lake Orrin",)),
                     GoldQAPair("largest by volume?", ("Deepwater Mere",)))),
    ]
    scores = score_question("largest lake?", annotations, [PredictedPair("Lake Orrin", "q")])
    assert scores.f1_answer == 1.0  # single annotation: 1.0; multi one: 2/3
    assert not scores.is_multi and scores.f1_edit_f1 is None and scores.f1_bleu1 is None


def test_question_edits_are_multiset_differences():
    edits = question_edits("a b b c".split(), "b c d d".split())
    assert sorted(edits) == sorted(["[DELETED]a", "[DELETED]b", "[ADDED]d", "[ADDED]d"])


def test_edit_f1_paper_example_has_no_common_edit():
    # AmbigQA paper section 3: gold edits -made +wrote, predicted +in +2012
    prompt = normalize_question("Who made the play the crucible?")
    assert edit_f1(prompt, normalize_question("Who made the play the crucible in 2012?"),
                   [normalize_question("Who wrote the play the crucible?")]) == 0.0


def test_edit_f1_partial_overlap():
    prompt = normalize_question("how many moons does tessaly have?")
    reference = normalize_question("How many moons did the planet Tessaly have in 1990?")
    predicted = normalize_question("How many moons did Tessaly have in 1990?")
    # gold: -does +did +planet +in +1990 (5); predicted: -does +did +in +1990 (4); 4 common
    assert edit_f1(prompt, predicted, [reference]) == pytest.approx(2 * 1 * 0.8 / 1.8)


def test_edit_f1_no_edit_cases():
    prompt = normalize_question("Who sang the song?")
    unedited = normalize_question("who sang song")  # the same after normalisation
    edited = normalize_question("Who sang the song in 1999?")
    assert edit_f1(prompt, unedited, [unedited]) == 1.0   # neither edits
    assert edit_f1(prompt, unedited, [edited]) == 0.0     # only the reference edits
    assert edit_f1(prompt, edited, [unedited]) == 0.0     # only the prediction edits
    assert edit_f1(prompt, edited, [unedited, edited]) == 1.0  # best reference phrasing


def test_question_normalisation_follows_ptb_then_squad():
    assert normalize_question("Who's the \u201cDr.\u201d in (U.S.) Dexter, season 1?") == \
        "who s dr in us dexter season 1"


def test_bleu_brevity_penalty_and_missing_bigrams():
    bleu = question_bleu("who wrote crucible", ["who wrote crucible in 1953"])
    expected = math.exp(1 - 5 / 3)  # every n-gram matches; hypothesis 3 tokens vs 5
    assert bleu[0] == pytest.approx(expected, rel=1e-6) and bleu[1] == pytest.approx(expected, rel=1e-6)
    unigram_only = question_bleu("who wrote play", ["who made play"])
    assert unigram_only[0] == pytest.approx(2 / 3, rel=1e-6)
    assert unigram_only[1] < 1e-6  # no bigram in common (pycocoevalcap's epsilon, not 0 exactly)
    assert question_bleu("", ["who made play"]) == (0.0, 0.0, 0.0, 0.0)


def test_question_f1_takes_pairs_by_descending_similarity_without_reuse():
    gold = [MultipleQAs((GoldQAPair("who sang song in 1999", ("Nora Vale",)),
                         GoldQAPair("who sang song in 1971", ("Glass Owls",))))]
    predictions = [PredictedPair("Nora Vale", "who sang song"),            # no edits: 0
                   PredictedPair("Nora Vale", "who sang song in 1999")]    # edits match: 1
    scores = score_question("who sang song", gold, predictions)
    # best pair (gold 0, prediction 1) = 1.0; gold 1 unmatched: F1 = 2 * 1.0 / (2 + 2)
    assert scores.f1_edit_f1 == pytest.approx(0.5)
    assert scores.f1_answer == pytest.approx(2 * 0.5 * 0.5 / 1.0)  # 1 of 2 gold, 1 of 2 predicted


def test_question_similarity_only_counts_when_answers_match():
    gold = [MultipleQAs((GoldQAPair("when did first tram run", ("1932",)),
                         GoldQAPair("when did last tram run", ("1958",))))]
    crossed = [PredictedPair("1932", "when did last tram run"), PredictedPair("1958", "when did first tram run")]
    scores = score_question("when did tram run", gold, crossed)
    assert scores.f1_answer == 1.0 and scores.f1_edit_f1 == 0.0


def test_paper_table5_answer_f1_and_edit_f1_under_the_released_rules():
    """AmbigQA Table 5 example #2: F1ans 1.00 (as printed). The released script's EDIT-F1 for
    it is 2/11 and 0.4 per pair -> 0.291 (the paper prints 0.67 from an earlier version)."""
    gold = [MultipleQAs((
        GoldQAPair("When was city of new york founded by dutch and initially called new amsterdam?", ("1624",)),
        GoldQAPair("When was city of new york under english control and renamed to new york?", ("1664",)),
    ))]
    predictions = [
        PredictedPair("1624", "When was city of new york city founded with dutch protection?"),
        PredictedPair("1664", "When was city of new york city founded and renamed with english name?"),
    ]
    scores = score_question("When was the city of new york founded?", gold, predictions)
    assert scores.f1_answer == 1.0
    assert scores.f1_edit_f1 == pytest.approx(2 * (2 / 11 + 0.4) / 4)


def test_answers_only_predictions_have_no_question_metrics():
    gold = [MultipleQAs((GoldQAPair("q1", ("a",)), GoldQAPair("q2", ("b",))))]
    scores = score_question("q", gold, [PredictedPair("a")], with_questions=False)
    assert scores.f1_answer == pytest.approx(2 / 3) and scores.f1_bleu4 is None


def test_aggregate_reports_answer_f1_on_all_and_multi_and_question_metrics_on_multi():
    scores = [
        QuestionScores(is_multi=False, f1_answer=1.0),
        QuestionScores(is_multi=True, f1_answer=0.5, f1_bleu1=0.4, f1_bleu2=0.3, f1_bleu3=0.2,
                       f1_bleu4=0.1, f1_edit_f1=0.6),
        QuestionScores(is_multi=True, f1_answer=0.0, f1_bleu1=0.0, f1_bleu2=0.0, f1_bleu3=0.0,
                       f1_bleu4=0.0, f1_edit_f1=0.0),
    ]
    result = aggregate(scores)
    assert result["f1_answer_all"] == pytest.approx(0.5)
    assert result["f1_answer_multi"] == pytest.approx(0.25)
    assert result["f1_bleu1"] == pytest.approx(0.2) and result["f1_edit_f1"] == pytest.approx(0.3)
