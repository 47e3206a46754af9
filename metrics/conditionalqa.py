"""ConditionalQA's official metrics (Sun et al., 2022, ``evaluate.py``), with an assignment solver.

Rules, as in the official script and the paper (§3.4):

* answers are compared after SQuAD normalisation: exact match (EM) and token F1 as in the
  SQuAD 2.0 script (1.0 when neither side has a token, 0.0 when only one has none);
* a not-answerable reference (no answers) scores 1.0 on all four metrics iff nothing is
  predicted, else 0.0;
* predictions shorter than the reference list are padded with ``("", [])``;
* each metric (EM, F1, EM with conditions, F1 with conditions) is maximised *separately* over
  the one-to-one assignments of predictions to references, summed, divided by the number of
  references n, and multiplied by γ = exp(1 − m/n) (m = padded prediction count, so γ ≤ 1);
* "with conditions": per pair, EM (or F1) × the set F1 of the condition elements, compared
  as exact strings (1.0 when both sets are empty, 0.0 when only one is);
* breakdowns: yes/no (any reference answer is exactly "yes" or "no"), extractive (answerable
  and not yes/no), conditional (any reference answer has conditions).

The official script enumerates all m! orderings of the predictions; the maximum over
orderings equals the maximum-weight assignment on the m × n score matrix (padded to square
with zero columns), which ``scipy.optimize.linear_sum_assignment`` finds in O(m³).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from condambig_metrics.text import answer_tokens, exact_match, f1_from_tokens

AnswerWithConditions = tuple[str, Sequence[str]]
"""One answer and the document elements that are its conditions (official format)."""

BREAKDOWNS = ("yesno", "extractive", "conditional")
"""The official script's breakdowns besides ``total`` (every question), in its order."""

YES_NO = frozenset({"yes", "no"})

PAD_ANSWER: AnswerWithConditions = ("", ())


@dataclass(frozen=True)
class QuestionScores:
    """The four official metrics for one question, each separately maximised."""

    em: float
    em_with_conditions: float
    f1: float
    f1_with_conditions: float

    def values(self) -> tuple[float, float, float, float]:
        return (self.em, self.em_with_conditions, self.f1, self.f1_with_conditions)


ZERO_SCORES = QuestionScores(0.0, 0.0, 0.0, 0.0)
FULL_SCORES = QuestionScores(1.0, 1.0, 1.0, 1.0)


@dataclass(frozen=True)
class QuestionCategories:
    """Which official breakdowns a question belongs to (besides ``total``, which has all)."""

    yesno: bool
    extractive: bool
    conditional: bool

    def member_of(self, breakdown: str) -> bool:
        if breakdown not in BREAKDOWNS:
            raise ValueError(
                f"unknown ConditionalQA breakdown {breakdown!r}; use one of {BREAKDOWNS}")
        return bool(getattr(self, breakdown))


def question_categories(reference_answers: Sequence[AnswerWithConditions]) -> QuestionCategories:
    """Breakdown membership from the reference answers (raw strings, as the official script)."""
    yesno = any(text in YES_NO for text, _ in reference_answers)
    answerable = len(reference_answers) > 0
    return QuestionCategories(
        yesno=yesno,
        extractive=answerable and not yesno,
        conditional=any(len(conditions) > 0 for _, conditions in reference_answers),
    )


def condition_f1(predicted: Iterable[str], reference: Iterable[str]) -> float:
    """Set F1 over exact element strings; duplicates count once; empty vs empty is 1.0."""
    predicted_set = set(predicted)
    reference_set = set(reference)
    if not reference_set:
        return float(not predicted_set)
    if not predicted_set:
        return 0.0
    correct = len(predicted_set & reference_set)
    if correct == 0:
        return 0.0
    precision = correct / len(predicted_set)
    recall = correct / len(reference_set)
    return 2.0 / (1.0 / precision + 1.0 / recall)


def answer_f1(prediction: str, reference: str) -> float:
    """Token F1 as the official script copies it from SQuAD 2.0: an answer with no token
    (after normalisation) scores 1.0 against another such answer, else 0.0."""
    predicted, gold = answer_tokens(prediction), answer_tokens(reference)
    if not predicted or not gold:
        return float(predicted == gold)
    return f1_from_tokens(predicted, gold)


def length_penalty(predicted_count: int, reference_count: int) -> float:
    """γ = exp(1 − m/n) when more answers than references are predicted, else 1."""
    if predicted_count <= reference_count:
        return 1.0
    return math.exp(1.0 - predicted_count / reference_count)


def best_assignment_total(pair_scores: np.ndarray) -> float:
    """Maximum total score of a one-to-one assignment of rows (predictions) to columns.

    ``pair_scores`` is m × n with m ≥ n; it is padded with zero columns to m × m, which is
    what zipping an ordering of the m predictions with the n references amounts to. When
    m > n², only rows among some column's n best can be in an optimal assignment (any other
    choice can be swapped for an unused one of them), so the others are dropped first: a
    reply listing thousands of answers costs no m × m matrix.
    """
    rows, columns = pair_scores.shape
    if rows == 0 or columns == 0:
        return 0.0
    if rows > columns * columns:
        best_rows = np.argsort(-pair_scores, axis=0, kind="stable")[:columns]
        pair_scores = pair_scores[np.unique(best_rows)]
        rows = pair_scores.shape[0]
    # imported here: every front end imports this module with the task registry, and
    # scipy.optimize costs ~0.8 s of start-up to runs that never score ConditionalQA
    from scipy.optimize import linear_sum_assignment

    square = np.zeros((rows, rows), dtype=float)
    square[:, :columns] = pair_scores
    row_index, column_index = linear_sum_assignment(square, maximize=True)
    row_of_column = dict(zip(column_index.tolist(), row_index.tolist(), strict=True))
    # Summed in reference order from 0.0, as the official loop does (same float result).
    total = 0.0
    for column in range(columns):
        total += float(square[row_of_column[column], column])
    return total


def pair_score_matrices(
    predicted: Sequence[AnswerWithConditions], reference: Sequence[AnswerWithConditions]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """m × n matrices of EM, EM·condF1, F1, F1·condF1 for every (prediction, reference) pair."""
    shape = (len(predicted), len(reference))
    em, em_conditions = np.zeros(shape), np.zeros(shape)
    f1, f1_conditions = np.zeros(shape), np.zeros(shape)
    for i, (predicted_text, predicted_conditions) in enumerate(predicted):
        for j, (reference_text, reference_conditions) in enumerate(reference):
            answer_em = exact_match(predicted_text, reference_text)
            answer_token_f1 = answer_f1(predicted_text, reference_text)
            conditions = condition_f1(predicted_conditions, reference_conditions)
            em[i, j], f1[i, j] = answer_em, answer_token_f1
            em_conditions[i, j] = answer_em * conditions
            f1_conditions[i, j] = answer_token_f1 * conditions
    return em, em_conditions, f1, f1_conditions


def score_question(
    predicted: Sequence[AnswerWithConditions], reference: Sequence[AnswerWithConditions]
) -> QuestionScores:
    """The official per-question metrics, each maximised over assignments independently."""
    if not reference:
        return FULL_SCORES if not predicted else ZERO_SCORES
    padded = list(predicted) + [PAD_ANSWER] * max(0, len(reference) - len(predicted))
    gamma = length_penalty(len(padded), len(reference))
    totals = [best_assignment_total(matrix) for matrix in pair_score_matrices(padded, reference)]
    em, em_conditions, f1, f1_conditions = (total / len(reference) * gamma for total in totals)
    return QuestionScores(em, em_conditions, f1, f1_conditions)

