"""The prompts of the five settings, after the paper's Appendix D (Table 8), in our words.

Fragments are numbered from 1 ("Fragment 1 - Title: text"); models are asked to cite them
as "Fragment k". The paper asks for up to FIVE conditions (its released code says three:
we follow the paper); ``max_conditions`` changes that number.
"""

from __future__ import annotations

from dataclasses import dataclass

from condambig_tasks.condambigqa.records import CondAmbigQuestion, Setting

NUMBER_WORDS = {1: "ONE", 2: "TWO", 3: "THREE", 4: "FOUR", 5: "FIVE", 6: "SIX", 7: "SEVEN",
                8: "EIGHT", 9: "NINE", 10: "TEN"}


@dataclass(frozen=True)
class PromptOptions:
    max_conditions: int = 5


def render_fragments(question: CondAmbigQuestion) -> str:
    return "\n".join(
        f"Fragment {number} - {fragment.title}: {fragment.text}"
        for number, fragment in enumerate(question.fragments, start=1)
    )


def build_prompt(
    question: CondAmbigQuestion, setting: Setting, options: PromptOptions = PromptOptions()
) -> str:
    """The full user prompt for one question in one setting."""
    limit = NUMBER_WORDS.get(options.max_conditions, str(options.max_conditions))
    header = f"Question: {question.question}\n"
    if setting.sees_fragments:
        header += f"\nRetrieved fragments:\n{render_fragments(question)}\n"

    if setting is Setting.MAIN:
        tasks = (
            f"1. Identify up to {limit} key conditions related to the question, using only the "
            "fragments above.\n"
            "2. For each condition, give a detailed answer that holds under that condition.\n"
            "3. Cite the fragments (by number) that support each condition and its answer.\n"
            "4. Return the result as JSON with exactly this structure:"
        )
        shape = ('{"conditions": [{"condition": "...", "answer": "...", '
                 '"citations": ["Fragment 1", "Fragment 3"]}]}')
    elif setting is Setting.GOLD_CONDITIONS:
        listed = "\n".join(
            f"Condition {i}: {p.condition}" for i, p in enumerate(question.properties, start=1)
        )
        tasks = (
            f"Conditions to address:\n{listed}\n\n"
            "For each condition, answer the question as it applies under that condition, using "
            "only the fragments, and cite the supporting fragments by number.\n"
            "IMPORTANT: reply with ONLY this JSON, one entry per condition in the same order, "
            "and no other text:"
        )
        shape = ('{"answers": [{"condition": "Condition 1", "answer": "...", '
                 '"citations": ["Fragment 2"]}]}')
    elif setting is Setting.NO_CONDITIONS:
        tasks = (
            "1. Answer the question using only the fragments above. If it has several valid "
            f"answers, give up to {limit} of them.\n"
            f"2. Cite up to {limit} fragments (by number) that support each answer.\n"
            "3. Return the result as JSON with exactly this structure:"
        )
        shape = '{"answers": [{"answer": "...", "citations": ["Fragment 4"]}]}'
    elif setting is Setting.CLOSED_BOOK:
        tasks = (
            "Answer the question from your own knowledge. If it can be understood in several "
            f"ways, give up to {limit} answers, one per interpretation.\n"
            "Return the result as JSON with exactly this structure:"
        )
        shape = '{"answers": [{"answer": "..."}]}'
    elif setting is Setting.CLOSED_BOOK_CONDITIONS:
        tasks = (
            f"1. From your own knowledge, identify up to {limit} conditions (interpretations or "
            "circumstances) under which the question has different answers.\n"
            "2. For each condition, give a detailed answer that holds under it.\n"
            "3. Return the result as JSON with exactly this structure:"
        )
        shape = '{"conditions": [{"condition": "...", "answer": "..."}]}'
    else:  # pragma: no cover - Setting is closed
        raise ValueError(f"unknown setting {setting!r}")
    return f"{header}\nPlease complete the following tasks:\n{tasks}\n{shape}\n"
