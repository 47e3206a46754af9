"""The zero-shot ConditionalQA prompt: numbered document, scenario, question, JSON reply format."""

from __future__ import annotations

from condambig_tasks.conditionalqa.document_view import DocumentView
from condambig_tasks.conditionalqa.records import ConditionalQuestion

INSTRUCTIONS = """\
Read the UK government guidance below and answer the user's question for the user's scenario.
The document is a list of numbered HTML elements.

Give every answer that applies to the scenario. An answer is "yes" or "no" for questions \
that can be answered that way, otherwise a short span copied from the document. If an answer \
is only true under conditions that the scenario does not already settle, list the numbers of \
the document elements stating those conditions; use an empty list when the answer holds \
without further conditions. If the document does not answer the question, give no answers."""

REPLY_FORMAT = """\
Reply with JSON only, in this form:
{"answers": [{"answer": "yes", "conditions": [12, 15]}, {"answer": "no", "conditions": [17]}]}
or, when the question cannot be answered from the document:
{"answers": []}"""


def build_prompt(question: ConditionalQuestion, view: DocumentView) -> str:
    """The full user message for one question."""
    title = f"Document: {view.title}\n" if view.title else "Document:\n"
    return (
        f"{INSTRUCTIONS}\n\n"
        f"{title}{view.render()}\n\n"
        f"Scenario: {question.scenario.strip()}\n"
        f"Question: {question.question.strip()}\n\n"
        f"{REPLY_FORMAT}"
    )
