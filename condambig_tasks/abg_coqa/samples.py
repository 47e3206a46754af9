"""The three Abg-CoQA subtasks as samples: which turns each uses and what each is scored against."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from condambig_tasks.abg_coqa.records import (
    SUBTASKS,
    AbgCoQATurn,
    ClarificationReply,
    clarified_qa_sample_id,
)


@dataclass(frozen=True)
class AbgCoQASample:
    """One model input: a turn, and for clarified QA the reply (index into the first
    annotator's ``clarification_turn.answers``) that the model is told."""

    id: str
    subtask: str
    turn: AbgCoQATurn
    reply_index: int | None = None

    @property
    def reply(self) -> ClarificationReply | None:
        if self.reply_index is None or self.turn.clarification is None:
            return None
        return self.turn.clarification.replies[self.reply_index]


def check_subtask(subtask: str) -> str:
    if subtask not in SUBTASKS:
        raise ValueError(f"Abg-CoQA: unknown subtask {subtask!r}; choose one of {', '.join(SUBTASKS)}.")
    return subtask


def build_samples(turns: Sequence[AbgCoQATurn], subtask: str) -> list[AbgCoQASample]:
    """detection: every turn; clarification: ambiguous turns with a reference question;
    clarified_qa: one sample per (ambiguous turn, reply with at least one answer)."""
    check_subtask(subtask)
    if subtask == "detection":
        return [AbgCoQASample(id=turn.id, subtask=subtask, turn=turn) for turn in turns]
    if subtask == "clarification":
        return [
            AbgCoQASample(id=turn.id, subtask=subtask, turn=turn)
            for turn in turns if turn.ambiguous and turn.reference_clarification_questions
        ]
    samples = []
    for turn in turns:
        if not turn.ambiguous or turn.clarification is None:
            continue
        for index, reply in enumerate(turn.clarification.replies):
            if reply.answers:
                samples.append(AbgCoQASample(
                    id=clarified_qa_sample_id(turn.id, index), subtask=subtask, turn=turn,
                    reply_index=index,
                ))
    return samples
