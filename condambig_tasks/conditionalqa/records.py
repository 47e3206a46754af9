"""Typed ConditionalQA records, normalised from the upstream JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from condambig_tasks.conditionalqa.document_view import DocumentView


@dataclass(frozen=True)
class ConditionalAnswer:
    """An answer ("yes", "no" or a span) and the HTML elements that are its conditions."""

    text: str
    conditions: tuple[str, ...] = ()

    def as_official(self) -> tuple[str, list[str]]:
        """The official ``[answer, [conditions...]]`` pair."""
        return (self.text, list(self.conditions))


@dataclass(frozen=True)
class ConditionalQuestion:
    """One question with the user's scenario; ``answers`` is empty when not answerable."""

    id: str
    url: str
    scenario: str
    question: str
    not_answerable: bool
    answers: tuple[ConditionalAnswer, ...]
    evidences: tuple[str, ...] = ()

    def official_answers(self) -> list[tuple[str, list[str]]]:
        return [answer.as_official() for answer in self.answers]


@dataclass(frozen=True)
class PolicyDocument:
    """A gov.uk page serialised as a list of HTML element strings (``<h1>..</h1>``, ``<p>..</p>``)."""

    url: str
    title: str
    contents: tuple[str, ...]


@dataclass(frozen=True)
class ConditionalQAItem:
    """One question as evaluated, with the view of its document the model is shown.

    ``view`` is None when the documents were not available to ``condambig-score --ref``:
    enough to score the official prediction format, which quotes condition elements, but
    not raw outputs, which cite element numbers.
    """

    question: ConditionalQuestion
    view: DocumentView | None

    @property
    def id(self) -> str:
        return self.question.id
