"""One question's values for every reported metric, and the official script's means.

Pure helpers shared by every front end through
:class:`condambig_tasks.conditionalqa.benchmark.ConditionalQA`. A reply that cannot be
parsed scores 0 on every metric (even on a not-answerable question, where an empty but
*parsed* reply scores 1) and counts against ``parse_rate``.
"""

from __future__ import annotations

from collections.abc import Sequence

from condambig_metrics.conditionalqa import (
    BREAKDOWNS,
    ZERO_SCORES,
    QuestionCategories,
    QuestionScores,
    score_question,
)
from condambig_tasks.conditionalqa.parser import ParsedAnswers

SCORE_METRICS = ("em", "em_with_conditions", "f1", "f1_with_conditions")
"""The official ``EM``, ``EM_with_conditions``, ``F1``, ``F1_with_conditions``, in its order."""

READING_METRICS = ("parse_rate", "out_of_range_citations", "truncated_documents",
                   "outputs_truncated")
"""How the raw replies could be read (not reported for the official prediction format)."""


def score_parsed(
    parsed: ParsedAnswers, reference_answers: Sequence[tuple[str, Sequence[str]]]
) -> QuestionScores:
    if not parsed.parsed:
        return ZERO_SCORES
    return score_question(parsed.official_answers(), list(reference_answers))


def question_values(
    scores: QuestionScores, categories: QuestionCategories
) -> dict[str, float | None]:
    """The four scores over all questions, and per breakdown (None outside it)."""
    values: dict[str, float | None] = dict(zip(SCORE_METRICS, scores.values(), strict=True))
    for breakdown in BREAKDOWNS:
        member = categories.member_of(breakdown)
        for name, value in zip(SCORE_METRICS, scores.values(), strict=True):
            values[f"{breakdown}_{name}"] = value if member else None
    return values


def reading_values(parsed: ParsedAnswers, truncated_document: bool) -> dict[str, float]:
    return {
        "parse_rate": float(parsed.parsed),
        "out_of_range_citations": float(parsed.out_of_range_citations),
        "truncated_documents": float(truncated_document),
        "outputs_truncated": float(parsed.truncated),
    }
