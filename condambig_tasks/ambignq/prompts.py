"""The closed-book AmbigNQ prompt: every plausible answer, each with a minimally edited question."""

from __future__ import annotations

from condambig_tasks.ambignq.records import AmbigNQQuestion

INSTRUCTIONS = (
    "Answer the question below from your own knowledge. Questions like this are often "
    "ambiguous: they can be read in several plausible ways, each with a different correct "
    "answer (a different entity, event, time, or kind of answer). Find every plausible answer. "
    "For each answer, rewrite the question with the smallest edit that makes it ask "
    "unambiguously for that answer. If the question has only one reading, give a single pair "
    "and keep the question as it is.\n\n"
    "Reply with a JSON list only, one object per answer, answers as short as possible:\n"
    '[{"question": "<disambiguated question>", "answer": "<answer>"}]'
)


def build_prompt(record: AmbigNQQuestion) -> str:
    """The user message the model sees for one prompt question."""
    return f"{INSTRUCTIONS}\n\nQuestion: {record.question}"
