"""Typed Abg-CoQA records and the three subtasks' samples built from them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Subtask = Literal["detection", "clarification", "clarified_qa"]
SUBTASKS: tuple[str, ...] = get_args(Subtask)


@dataclass(frozen=True)
class DialogueTurn:
    """One question-answer turn of the CoQA conversation."""

    turn_id: int
    question: str
    answer: str


@dataclass(frozen=True)
class ClarificationReply:
    """One user reply to the clarification question and the answers it leads to
    (``org_ans``, ``org_ans_2``, ``org_ans_3``: one to three annotators)."""

    reply: str
    answers: tuple[str, ...]


@dataclass(frozen=True)
class ClarificationTurn:
    """A clarification question with every reply annotators wrote for it."""

    question: str
    replies: tuple[ClarificationReply, ...]


@dataclass(frozen=True)
class AbgCoQATurn:
    """One target turn: the story, 1-2 history turns, the question and its ambiguity label."""

    id: str
    story: str
    source: str
    target: DialogueTurn
    history: tuple[DialogueTurn, ...]
    ambiguous: bool
    clarification: ClarificationTurn | None
    second_clarification: ClarificationTurn | None = None

    @property
    def reference_clarification_questions(self) -> tuple[str, ...]:
        """The first annotator's clarification question, then the second's where present."""
        return tuple(
            turn.question for turn in (self.clarification, self.second_clarification)
            if turn is not None and turn.question.strip()
        )


MAX_REPLY_DIGITS = 9


def clarified_qa_sample_id(turn_id: str, reply_index: int) -> str:
    """``<turn id>#<k>``: one clarified-QA sample per (ambiguous turn, reply k)."""
    return f"{turn_id}#{reply_index}"


def split_clarified_qa_sample_id(sample_id: str) -> tuple[str, int] | None:
    """Inverse of :func:`clarified_qa_sample_id`; None when the id has no ``#<k>`` suffix
    (k: ASCII digits, at most :data:`MAX_REPLY_DIGITS` of them; a turn has one or two
    replies)."""
    turn_id, separator, index = sample_id.rpartition("#")
    if not separator or not (index.isascii() and index.isdigit()) \
            or len(index) > MAX_REPLY_DIGITS:
        return None
    return turn_id, int(index)
