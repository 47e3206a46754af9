"""CondAmbigQA metric formulas against hand-computed values (Li et al., CondAmbigQA)."""

from __future__ import annotations

import pytest

from condambig_metrics.condambigqa import (
    CombinedInputs,
    balanced_parts,
    citation_score,
    closed_book_balanced_answer,
    combined_score,
    greedy_match,
    quantity_factor,
)


def test_citation_score_is_precision_over_model_citations():
    assert citation_score([1, 2, 3, 4], [2, 4, 7]) == 0.5
    assert citation_score([], [1]) == 0.0
    assert citation_score([5], []) == 0.0
    assert citation_score([1, 1, 2], [1]) == 0.5  # a set: duplicates count once


def test_greedy_match_in_generation_order():
    table = {(0, 0): 0.9, (0, 1): 0.95, (1, 0): 0.8, (1, 1): 0.99, (2, 0): 0.1, (2, 1): 0.1}
    # pair 0 takes gold 1 (0.95) although pair 1 would fit it better: greedy, in order
    assert greedy_match(3, 2, lambda i, j: table[(i, j)]) == [(0, 1), (1, 0)]


def test_greedy_match_ties_keep_lower_gold_and_tuples_compare_lexicographically():
    assert greedy_match(1, 3, lambda i, j: 0.5) == [(0, 0)]
    scores = {0: (1.0, 0.1), 1: (1.0, 0.7), 2: (0.5, 1.0)}
    assert greedy_match(1, 3, lambda i, j: scores[j]) == [(0, 1)]


def _combined(c, a, t, gold, generated, k):
    return combined_score(CombinedInputs(c, a, t, gold, generated, k))


def test_quantity_single_pair_for_many_gold():
    assert quantity_factor(3, 1, 0.9) == 0.1  # n + d == 1 and n > 1


def test_quantity_exact_count():
    assert quantity_factor(2, 2, 0.1) == 1.0


def test_quantity_undergeneration():
    # n=4, d=-2, a=0.3 -> f = clamp(0.6, .5, 1) = 0.6; 2/4*0.6*(2-0.6) = 0.42 -> capped 0.2
    assert quantity_factor(4, 2, 0.3) == pytest.approx(0.8)
    # n=5, d=-1, a=0.5 -> f=1; 1/5*0.6*1 = 0.12
    assert quantity_factor(5, 4, 0.5) == pytest.approx(0.88)


def test_quantity_overgeneration_small_ratio():
    # n=2, d=1, r=0.5 <= 1: p = min(0.075, 0.075) = 0.075; a=0.25 -> f=0.5; 1 - 0.075*1.5
    assert quantity_factor(2, 3, 0.25) == pytest.approx(1 - 0.1125)
    # n=4, d=1, r=0.25: p = 0.0375; a=1 -> f=1
    assert quantity_factor(4, 5, 1.0) == pytest.approx(0.9625)


def test_quantity_overgeneration_large_ratio():
    # n=1, d=3, r=3 > 1: p = min(0.9, 0.15) = 0.15; a=0.4 -> f=0.8; 1 - 0.15*1.2
    assert quantity_factor(1, 4, 0.4) == pytest.approx(0.82)


def test_quantity_zero_gold_uses_n_equal_one():
    # n = max(0, 1) = 1, d = 2 - 0 = 2, r = 2: p = 0.15; a = 0 -> f = 0.5
    assert quantity_factor(0, 2, 0.0) == pytest.approx(1 - 0.15 * 1.5)


def test_combined_score_hand_computed():
    # c=.6 a=.5 t=.8 k=2: q_cit = .8*1.6 = 1.28; quality = .5*.55 + .5*1.28 = .915
    # quantity (n=2,d=0) = 1; F = .6*.915 + .4 = .949
    # mean(clip(.6*.949), clip(.5*.949), clip(1.28*.949)=1) = (.5694 + .4745 + 1)/3
    assert _combined(0.6, 0.5, 0.8, 2, 2, 2) == pytest.approx((0.5694 + 0.4745 + 1.0) / 3)


def test_combined_score_caps_citations_per_pair_at_three():
    assert _combined(0.5, 0.5, 0.5, 2, 2, 3) == _combined(0.5, 0.5, 0.5, 2, 2, 10)


def test_combined_score_single_pair_penalty():
    # c=a=t=1, k=1, n=3, one pair: q_cit=1.3, quality=.5+.65=1.15, quantity=.1
    # F = .69+.04 = .73 -> mean(.73, .73, clip(1.3*.73)=.949)
    assert _combined(1, 1, 1, 3, 1, 1) == pytest.approx((0.73 + 0.73 + 0.949) / 3)


def test_combined_score_zero_everything_is_zero():
    assert _combined(0, 0, 0, 2, 0, 0) == 0.0


def test_citation_score_counts_invalid_entries_in_the_cited_set():
    # M = {1, 2} ∪ {"F25", "condition 1"}: |M ∩ {2}| / |M| = 1/4
    assert citation_score([1, 2], [2], ["F25", "condition 1"]) == 0.25
    # a repeated invalid entry is one member of the set: |{2}| / |{2, "F25"}| = 1/2
    assert citation_score([2], [2], ["F25", "F25"]) == 0.5
    # only invalid entries: M is not empty, nothing in it is right -> 0
    assert citation_score([], [1], ["fragment x"]) == 0.0
    # without invalid entries eq. 1 is unchanged
    assert citation_score([2], [2]) == 1.0


def test_balanced_parts_hand_computed():
    # c=.4 a=.2 t=.5 k=1, gold 2, generated 3: q_cit = .5*(1 + .3*1) = .65
    # quality = .5*(.4+.2)/2 + .5*.65 = .15 + .325 = .475
    # quantity: d=1, r=.5 <= 1 -> p = min(.15*.5, .075) = .075; f = clamp(.2/.5, .5, 1) = .5
    #   -> 1 - .075*(2-.5) = .8875
    # F = .6*.475 + .4*.8875 = .285 + .355 = .64
    parts = balanced_parts(CombinedInputs(0.4, 0.2, 0.5, 2, 3, 1))
    assert parts.condition == pytest.approx(0.4 * 0.64)  # .256
    assert parts.answer == pytest.approx(0.2 * 0.64)  # .128
    assert parts.citation == pytest.approx(0.65 * 0.64)  # .416
    assert parts.combined == pytest.approx((0.256 + 0.128 + 0.416) / 3)
    assert combined_score(CombinedInputs(0.4, 0.2, 0.5, 2, 3, 1)) == parts.combined


def test_balanced_parts_are_clipped_and_average_to_the_combined_score():
    # the hand case above: F = .949; parts .5694, .4745 and clip(1.28*.949 = 1.215) = 1
    parts = balanced_parts(CombinedInputs(0.6, 0.5, 0.8, 2, 2, 2))
    assert (parts.condition, parts.answer, parts.citation) == pytest.approx(
        (0.5694, 0.4745, 1.0))
    assert parts.combined == _combined(0.6, 0.5, 0.8, 2, 2, 2)


def test_k_is_the_citations_per_pair_boost_count():
    # t=.5, c=a=.5, n=2 generated 2: k=1 -> q_cit=.65, quality=.25+.325=.575, F=.745;
    # k=2 -> q_cit=.8, quality=.25+.4=.65, F=.79
    one = balanced_parts(CombinedInputs(0.5, 0.5, 0.5, 2, 2, 1))
    two = balanced_parts(CombinedInputs(0.5, 0.5, 0.5, 2, 2, 2))
    assert (one.answer, one.citation) == pytest.approx((0.5 * 0.745, 0.65 * 0.745))
    assert (two.answer, two.citation) == pytest.approx((0.5 * 0.79, 0.8 * 0.79))


# The authors' closed-book value (core/pure_llm_experiment.py): a = mean over the generated
# answers (unmatched = 0), value = clip(a * (0.6a + 0.4 * quantity)), d = generated - gold.
@pytest.mark.parametrize("scores, gold, expected", [
    # equal counts: a = 0.7, quantity 1 -> 0.7 * (0.42 + 0.4)
    ([0.8, 0.6], 2, 0.7 * 0.82),
    # more answers than gold (two left unmatched, scoring 0): a = 0.3, r = 2 > 1,
    # p = min(0.6, 0.15), f = 0.6 -> quantity 1 - 0.15 * 1.4 = 0.79
    ([0.9, 0.0, 0.0], 1, 0.3 * (0.18 + 0.4 * 0.79)),
    # fewer answers than gold: a = 0.75, f = 1, penalty min(2/4 * 0.6, 0.2) = 0.2
    ([1.0, 0.5], 4, 0.75 * (0.45 + 0.4 * 0.8)),
    # a single answer for several gold properties: quantity 0.1
    ([1.0], 3, 1.0 * (0.6 + 0.04)),
    # no answer at all
    ([], 2, 0.0),
])
def test_closed_book_balanced_answer_hand_computed(scores, gold, expected):
    assert closed_book_balanced_answer(scores, gold) == pytest.approx(expected)


def test_closed_book_value_is_not_the_main_settings_balanced_part():
    # the main setting's quality term also averages condition and citation; here it is a
    value = closed_book_balanced_answer([0.5, 0.5], 2)
    assert value == pytest.approx(0.5 * (0.3 + 0.4))
    main = balanced_parts(CombinedInputs(condition=0.5, answer=0.5, citation=0.0, gold_count=2,
                                         generated_count=2, mean_citations_per_pair=0))
    assert main.answer != pytest.approx(value)
