"""HotpotQA's official answer F1/EM and the FLM corpus metrics, on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from condambig_metrics.hotpot_flm import answer_em, answer_em_raw, answer_f1, recovery, summarise


@pytest.mark.parametrize(("prediction", "reference", "f1"), [
    ("Chief of Protocol", "Chief of Protocol", 1.0),
    ("the Chief of Protocol.", "chief of protocol", 1.0),       # case, article, punctuation
    ("Chief Protocol officer", "Chief of Protocol", 2 * (2 / 3) * (2 / 3) / (4 / 3)),  # P=R=2/3
    ("Paris", "London", 0.0),
    ("yes", "yes", 1.0),
    ("Yes.", "yes", 1.0),                                       # normalises to "yes"
    ("yes it is", "yes", 0.0),                                  # reference yes: exact or nothing
    ("no", "no answer here", 0.0),                              # prediction "no" vs other text
    ("no", "yes", 0.0),
    ("noanswer", "no answer", 0.0),                             # "noanswer" is special too
    ("no answer", "no answer", 1.0),
    ("", "1931", 0.0),
])
def test_answer_f1_is_hotpotqa_official(prediction, reference, f1):
    assert answer_f1(prediction, reference) == pytest.approx(f1)


def test_yes_no_rule_differs_from_plain_squad_f1():
    # plain token F1 of "no way" vs "no" is 2/3; HotpotQA's rule makes it 0
    from condambig_metrics.text import token_f1

    assert token_f1("no way", "no") == pytest.approx(2 / 3)
    assert answer_f1("no way", "no") == 0.0


@pytest.mark.parametrize(("prediction", "reference", "em"), [
    ("The Beatles", "beatles", 1.0), ("yes", "Yes!", 1.0), ("1931", "1932", 0.0),
    ("Nela Fjord", "Nela  Fjord", 1.0),
])
def test_answer_em(prediction, reference, em):
    assert answer_em(prediction, reference) == em


@pytest.mark.parametrize(("prediction", "reference", "normalised", "raw"), [
    ("Yes", "yes", 1.0, 0.0),            # the authors' EM is case-sensitive
    ("yes", "yes", 1.0, 1.0),
    ("The Beatles", "Beatles", 1.0, 0.0),  # no article removal
    ("1931.", "1931", 1.0, 0.0),         # no punctuation removal
    ("Nela  Fjord", "Nela Fjord", 1.0, 0.0),  # no whitespace collapsing
    ("Paris", "London", 0.0, 0.0),
])
def test_raw_and_normalised_em(prediction, reference, normalised, raw):
    assert answer_em(prediction, reference) == normalised
    assert answer_em_raw(prediction, reference) == raw


def test_recovery_definition():
    # paper's human row: incomplete 53.0, response 68.8, complete 71.7 -> 84.5 (84.4 from unrounded)
    assert recovery(0.530, 0.688, 0.717) == pytest.approx(100 * 0.158 / 0.187)
    assert recovery(0.2, 0.2, 0.6) == 0.0
    assert recovery(0.2, 0.6, 0.6) == pytest.approx(100.0)
    assert recovery(0.4, 0.3, 0.6) == pytest.approx(-50.0)
    assert math.isnan(recovery(0.5, 0.7, 0.5))  # x_c no better than x_i: undefined


def _row(f1_i, f1_r, f1_c, em_i, em_r, em_c, masked, raw=None):
    """A score row; ``raw`` = (em_raw on x_i, x_r, x_c), the normalised EM when not given."""
    raw_i, raw_r, raw_c = raw if raw is not None else (em_i, em_r, em_c)
    return {"f1_incomplete": f1_i, "f1_response": f1_r, "f1_complete": f1_c,
            "em_incomplete": em_i, "em_response": em_r, "em_complete": em_c,
            "em_raw_incomplete": raw_i, "em_raw_response": raw_r, "em_raw_complete": raw_c,
            "masked_fact_returned": masked}


def test_summarise_hand_computed():
    rows = [
        _row(0.0, 1.0, 1.0, 0, 1, 1, 1.0),   # improved, f* returned
        _row(0.5, 0.5, 1.0, 0, 0, 1, 0.0),   # unchanged
        _row(1.0, 0.0, 1.0, 1, 0, 1, 1.0),   # worse although f* returned
        _row(0.0, 0.5, 0.5, 0, 0, 0, 0.0),   # improved by a distractor
    ]
    result = summarise(rows)
    assert result["f1_incomplete"] == pytest.approx(1.5 / 4)
    assert result["f1_response"] == pytest.approx(2.0 / 4)
    assert result["f1_complete"] == pytest.approx(3.5 / 4)
    # (0.5 - 0.375) / (0.875 - 0.375) = 0.25
    assert result["f1_recovery"] == pytest.approx(25.0)
    # EM means: incomplete 1/4, response 1/4, complete 3/4 -> 0
    assert result["em_recovery"] == pytest.approx(0.0)
    assert result["mfrr"] == pytest.approx(0.5)
    assert result["improved_rate"] == pytest.approx(0.5)


def test_raw_em_recovery_is_its_own_number():
    # normalised EM: incomplete 0/2, response 2/2, complete 2/2 -> recovery 100;
    # raw EM ("Yes" vs gold "yes" misses on x_r of the second row): 0/2, 1/2, 2/2 -> 50
    rows = [_row(0, 1, 1, 0, 1, 1, 1.0, raw=(0, 1, 1)),
            _row(0, 1, 1, 0, 1, 1, 1.0, raw=(0, 0, 1))]
    result = summarise(rows)
    assert result["em_recovery"] == pytest.approx(100.0)
    assert result["em_raw_response"] == pytest.approx(0.5)
    assert result["em_raw_recovery"] == pytest.approx(50.0)


def test_recovery_is_of_means_not_mean_of_recoveries():
    rows = [_row(0.0, 1.0, 1.0, 0, 0, 0, 0), _row(0.0, 0.0, 0.1, 0, 0, 0, 0)]
    # per-example recoveries 100 and 0 would average 50; the corpus definition gives 1/1.1
    assert summarise(rows)["f1_recovery"] == pytest.approx(100 * 0.5 / 0.55)
