"""The assignment-based scorer equals a brute-force permutation scorer (the official algorithm)."""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from condambig_metrics.conditionalqa import best_assignment_total, score_question
from condambig_metrics.text import answer_tokens, exact_match, token_f1

WORDS = ["yes", "no", "the", "fee", "£60", "4", "weeks", "photo", "garden", "quote"]
ELEMENTS = ["<p>a</p>", "<li>b</li>", "<li>c</li>", "<tr>d | e</tr>"]


def brute_force_scores(predicted, reference):
    """evaluate.py's compute_metrics, written independently: every ordering of the padded
    predictions zipped with the references, each metric maximised on its own."""
    if not reference:
        value = 1.0 if not predicted else 0.0
        return (value, value, value, value)
    padded = list(predicted) + [("", [])] * max(0, len(reference) - len(predicted))
    n, m = len(reference), len(padded)
    gamma = math.exp(1 - m / n) if m > n else 1.0
    best = [0.0, 0.0, 0.0, 0.0]
    for ordering in itertools.permutations(padded):
        totals = [0.0, 0.0, 0.0, 0.0]
        for (p_text, p_conditions), (r_text, r_conditions) in zip(ordering, reference, strict=False):
            em = exact_match(p_text, r_text)
            p_tokens, r_tokens = answer_tokens(p_text), answer_tokens(r_text)
            # SQuAD 2.0's F1, which the official script copies: no-token answers agree or not
            f1 = float(p_tokens == r_tokens) if not p_tokens or not r_tokens else token_f1(p_text, r_text)
            p_set, r_set = set(p_conditions), set(r_conditions)
            if not r_set:
                conditions = float(not p_set)
            elif not p_set:
                conditions = 0.0
            else:
                correct = len(p_set & r_set)
                precision, recall = correct / len(p_set), correct / len(r_set)
                conditions = 0.0 if correct == 0 else 2 * precision * recall / (precision + recall)
            for index, value in enumerate((em, em * conditions, f1, f1 * conditions)):
                totals[index] += value
        best = [max(b, t) for b, t in zip(best, totals, strict=True)]
    return tuple(total / n * gamma for total in best)


answer_text = st.lists(st.sampled_from(WORDS), min_size=0, max_size=3).map(" ".join)
answer = st.tuples(answer_text, st.lists(st.sampled_from(ELEMENTS), max_size=3))


@settings(max_examples=300, deadline=None)
@given(
    predicted=st.lists(answer, max_size=6),
    reference=st.lists(answer, max_size=4),
)
def test_assignment_scorer_equals_brute_force(predicted, reference):
    fast = score_question(predicted, reference).values()
    slow = brute_force_scores(predicted, reference)
    assert all(math.isclose(a, b, abs_tol=1e-9) for a, b in zip(fast, slow, strict=True)), (fast, slow)


@settings(max_examples=100, deadline=None)
@given(predicted=st.lists(answer, max_size=5), reference=st.lists(answer, min_size=1, max_size=3), seed=st.randoms())
def test_scores_do_not_depend_on_prediction_order(predicted, reference, seed):
    shuffled = list(predicted)
    seed.shuffle(shuffled)
    original = score_question(predicted, reference).values()
    reordered = score_question(shuffled, reference).values()
    assert all(math.isclose(a, b, abs_tol=1e-9) for a, b in zip(original, reordered, strict=True))


@settings(max_examples=200, deadline=None)
@given(
    scores=st.integers(min_value=1, max_value=3).flatmap(
        lambda columns: st.lists(
            st.lists(st.sampled_from([0.0, 0.25, 0.5, 2 / 3, 1.0]), min_size=columns, max_size=columns),
            min_size=columns, max_size=8,
        )
    )
)
def test_row_reduction_for_many_predictions_keeps_the_optimum(scores):
    """With m > n² rows only each column's n best rows are kept: still the exact optimum."""
    matrix = np.array(scores)
    rows, columns = matrix.shape
    brute = max(
        sum(matrix[row, column] for column, row in enumerate(ordering[:columns]))
        for ordering in itertools.permutations(range(rows))
    )
    assert math.isclose(best_assignment_total(matrix), brute, abs_tol=1e-9)
