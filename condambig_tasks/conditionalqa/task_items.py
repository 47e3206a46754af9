"""What both frameworks evaluate: one prompt per question, with what scoring needs.

The options (:class:`TaskConfig`) are the same for lm-eval (``--metadata``), Inspect
(``-T``) and ``condambig-score`` (flags), so the same model outputs get the same scores.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from condambig_metrics.conditionalqa import QuestionCategories, question_categories
from condambig_tasks.conditionalqa.document_view import fit_document
from condambig_tasks.conditionalqa.loader import QuestionWithDocument, load_split
from condambig_tasks.conditionalqa.prompt import build_prompt

DEFAULT_MAX_DOCUMENT_WORDS = 4000
"""Word budget per document: with tags and numbering about 6-7k tokens, so the prompt fits
an 8k-token context window; 0 or None shows whole documents (up to 9,230 words)."""

TASK_SPLITS = ("dev", "train")
"""Splits with public answers (``test_no_answer`` has none to score against)."""


@dataclass(frozen=True)
class TaskConfig:
    """The task's options."""

    split: str = "dev"
    max_document_words: int | None = DEFAULT_MAX_DOCUMENT_WORDS

    def __post_init__(self) -> None:
        if self.split not in TASK_SPLITS:
            raise ValueError(
                f"ConditionalQA split {self.split!r} cannot be scored; use one of {TASK_SPLITS} "
                "(test_no_answer.json has no public answers)."
            )
        if self.max_document_words is not None and self.max_document_words < 0:
            raise ValueError("max_document_words must be >= 0 (0 = whole documents)")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> TaskConfig:
        """Build from loosely typed options (lm-eval metadata, CLI); unknown keys are ignored."""
        split = str(options.get("split", "dev"))
        raw_budget = options.get("max_document_words", DEFAULT_MAX_DOCUMENT_WORDS)
        if raw_budget is None or (isinstance(raw_budget, str) and raw_budget.strip().lower() in {"", "none", "all"}):
            budget: int | None = None
        else:
            try:
                budget = int(raw_budget)
            except (TypeError, ValueError) as error:
                raise ValueError(
                    f"max_document_words must be an integer (0 = whole documents), got {raw_budget!r}"
                ) from error
        return cls(split=split, max_document_words=budget or None)


@dataclass(frozen=True)
class TaskItem:
    """One question as evaluated: prompt, shown elements, references and breakdowns."""

    id: str
    prompt: str
    reference_answers: tuple[tuple[str, tuple[str, ...]], ...]
    elements: Mapping[int, str]
    omitted_elements: int
    categories: QuestionCategories

    @property
    def truncated(self) -> bool:
        return self.omitted_elements > 0

    def to_record(self) -> dict[str, Any]:
        """A flat JSON-able dict (nested parts as JSON strings) for datasets / sample metadata."""
        return {
            "id": self.id,
            "prompt": self.prompt,
            "reference_answers_json": json.dumps([[text, list(conds)] for text, conds in self.reference_answers]),
            "elements_json": json.dumps({str(number): element for number, element in self.elements.items()}),
            "omitted_elements": self.omitted_elements,
            "yesno": self.categories.yesno,
            "extractive": self.categories.extractive,
            "conditional": self.categories.conditional,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> TaskItem:
        references = tuple(
            (str(text), tuple(conditions)) for text, conditions in json.loads(record["reference_answers_json"])
        )
        return cls(
            id=str(record["id"]),
            prompt=str(record.get("prompt", "")),
            reference_answers=references,
            elements={int(number): element for number, element in json.loads(record["elements_json"]).items()},
            omitted_elements=int(record["omitted_elements"]),
            categories=QuestionCategories(
                yesno=bool(record["yesno"]),
                extractive=bool(record["extractive"]),
                conditional=bool(record["conditional"]),
            ),
        )


def build_item(entry: QuestionWithDocument, config: TaskConfig) -> TaskItem:
    view = fit_document(entry.document, config.max_document_words)
    references = tuple((a.text, tuple(a.conditions)) for a in entry.question.answers)
    return TaskItem(
        id=entry.question.id,
        prompt=build_prompt(entry.question, view),
        reference_answers=references,
        elements=view.element_map(),
        omitted_elements=view.omitted_elements,
        categories=question_categories(references),
    )


def load_task_items(config: TaskConfig) -> list[TaskItem]:
    """Every question of the configured split, ready to prompt (needs documents.json)."""
    return [build_item(entry, config) for entry in load_split(config.split)]
