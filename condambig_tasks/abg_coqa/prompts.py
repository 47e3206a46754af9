"""Prompts for the three Abg-CoQA subtasks: a story, the conversation so far, the question."""

from __future__ import annotations

from condambig_tasks.abg_coqa.records import AbgCoQATurn
from condambig_tasks.abg_coqa.samples import AbgCoQASample

AMBIGUOUS_LABEL = "AMBIGUOUS"

DETECTION_INSTRUCTIONS = (
    "Read the story and the conversation about it, then deal with the last question. If the "
    "last question can be understood in more than one way given the story and the "
    f"conversation, so that it has no single answer, reply with the single word "
    f"{AMBIGUOUS_LABEL}. Otherwise reply with its answer only, as briefly as possible."
)
CLARIFICATION_INSTRUCTIONS = (
    "Read the story and the conversation about it. The last question is ambiguous: it can be "
    "understood in more than one way. Ask the user one short clarification question that "
    "would tell you which meaning they intend. Reply with the clarification question only."
)
CLARIFIED_QA_INSTRUCTIONS = (
    "Read the story and the conversation about it. The last question was ambiguous, so you "
    "asked a clarification question and the user replied. Answer the last question as the "
    "user meant it, as briefly as possible. Reply with the answer only."
)


def _conversation(turn: AbgCoQATurn) -> str:
    lines = []
    for previous in turn.history:
        lines += [f"Q: {previous.question}", f"A: {previous.answer}"]
    lines.append(f"Q: {turn.target.question}")
    return "\n".join(lines)


def build_prompt(sample: AbgCoQASample) -> str:
    """The user message for one sample of any subtask."""
    turn = sample.turn
    context = f"Story:\n{turn.story.strip()}\n\nConversation:\n{_conversation(turn)}"
    if sample.subtask == "detection":
        return f"{DETECTION_INSTRUCTIONS}\n\n{context}"
    if sample.subtask == "clarification":
        return f"{CLARIFICATION_INSTRUCTIONS}\n\n{context}"
    reply = sample.reply
    clarification = turn.clarification.question if turn.clarification else ""
    exchange = f"Your clarification question: {clarification}\nUser: {reply.reply if reply else ''}"
    return f"{CLARIFIED_QA_INSTRUCTIONS}\n\n{context}\n{exchange}"
