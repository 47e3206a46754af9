"""One model output -> the official per-question metrics, and the corpus report.

Shared by lm-eval, Inspect and ``condambig-score`` so they give the same numbers. A reply
that cannot be parsed scores 0 on every metric (even for a not-answerable question, where an
empty but *parsed* reply would score 1) and counts against ``parse_rate``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from condambig_metrics.conditionalqa import (
    ZERO_SCORES,
    QuestionCategories,
    QuestionScores,
    score_question,
    summarize,
)
from condambig_tasks.conditionalqa.parser import ParsedAnswers, parse_model_output
from condambig_tasks.conditionalqa.task_items import TaskItem


@dataclass(frozen=True)
class ScoredOutput:
    """A parsed reply with its scores and the question's breakdowns."""

    parsed: ParsedAnswers
    scores: QuestionScores
    categories: QuestionCategories
    truncated_document: bool = False


def score_parsed(
    parsed: ParsedAnswers, reference_answers: Sequence[tuple[str, Sequence[str]]]
) -> QuestionScores:
    if not parsed.parsed:
        return ZERO_SCORES
    return score_question(parsed.official_answers(), list(reference_answers))


def score_output(
    output: Any,
    elements: Mapping[int, str],
    reference_answers: Sequence[tuple[str, Sequence[str]]],
    categories: QuestionCategories,
    truncated_document: bool = False,
) -> ScoredOutput:
    parsed = parse_model_output(output, elements)
    return ScoredOutput(
        parsed=parsed,
        scores=score_parsed(parsed, reference_answers),
        categories=categories,
        truncated_document=truncated_document,
    )


def parsing_report(outputs: Iterable[ScoredOutput]) -> dict[str, float | int]:
    """How well the replies could be read, and how many documents were cut."""
    items = list(outputs)
    return {
        "parse_rate": sum(item.parsed.parsed for item in items) / len(items) if items else 0.0,
        "parse_failures": sum(not item.parsed.parsed for item in items),
        "out_of_range_citations": sum(item.parsed.out_of_range_citations for item in items),
        "truncated_documents": sum(item.truncated_document for item in items),
        "questions": len(items),
    }


def official_report(outputs: Iterable[ScoredOutput]) -> dict[str, dict[str, float | None]]:
    return summarize((item.scores, item.categories) for item in outputs)


def score_item_output(output: Any, item: TaskItem) -> ScoredOutput:
    """Score one reply to a task item (the path every front end takes)."""
    return score_output(
        output, item.elements, item.reference_answers, item.categories, item.truncated
    )
