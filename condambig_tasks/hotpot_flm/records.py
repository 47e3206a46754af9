"""Typed records: a HotpotQA example as published, and one HotpotQA-FLM example built from it."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Fact:
    """One sentence of a Wikipedia paragraph, with the paragraph's title."""

    title: str
    sentence: str

    def render(self) -> str:
        """``Title: sentence`` — how the answering agent and the downstream model see a fact."""
        return f"{self.title}: {self.sentence}"


def render_context(facts: Iterable[Fact]) -> str:
    """Facts as the authors render contexts: consecutive facts of one paragraph share a title.

    ``A: s1 s2 B: s3`` — this reproduces the test TSV's ``fc_masked`` column exactly.
    """
    parts = []
    for title, group in itertools.groupby(facts, key=lambda fact: fact.title):
        parts.append(f"{title}: " + " ".join(fact.sentence for fact in group))
    return " ".join(parts)


@dataclass(frozen=True)
class HotpotExample:
    """A HotpotQA distractor example, normalised from the original JSON or the HF columns.

    ``paragraphs`` keep the context order; sentences keep HotpotQA's leading spaces.
    ``supporting_facts`` are (title, sentence index) pairs as published (may reference
    sentences that do not exist: HotpotQA has a few such pairs; they are ignored).
    """

    id: str
    question: str
    answer: str
    type: str
    level: str
    paragraphs: tuple[tuple[str, tuple[str, ...]], ...]
    supporting_facts: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class FlmExample:
    """One HotpotQA-FLM example.

    ``candidates`` are every sentence of the example in context order (the masked fact,
    the other supporting facts, and all distractor sentences); ``masked_index`` points at
    the masked fact f* among them; ``supporting_indices`` at the facts of x_c (the
    supporting facts, f* included). Contexts are rendered strings without the task.
    """

    id: str
    split: str
    question: str
    answer: str
    incomplete_context: str
    complete_context: str
    masked_fact: Fact
    masked_index: int
    candidates: tuple[Fact, ...]
    supporting_count: int
    human_question: str | None = None
    supporting_indices: tuple[int, ...] = ()

    def scoring_order(self) -> tuple[int, ...]:
        """Candidate indices in the order the authors' answering agent scores them.

        The authors' ``T5_Bool_Oracle`` (github.com/mtoles/qq, ``oracles.py``) builds its
        list as the masked fact first, then the non-supporting sentences, then the other
        supporting facts (each group in context order), and keeps the first arg-max: on an
        exact tie the masked fact wins, then a non-supporting sentence.
        """
        supporting = set(self.supporting_indices)
        rest = [index for index in range(len(self.candidates)) if index != self.masked_index]
        return (self.masked_index,
                *(index for index in rest if index not in supporting),
                *(index for index in rest if index in supporting))

    def response_context(self, returned: Fact) -> str:
        """x_r = x_i + f_r, the returned fact appended at the end (paper §4.2)."""
        if not self.incomplete_context:
            return returned.render()
        return f"{self.incomplete_context} {returned.render()}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "split": self.split, "question": self.question, "answer": self.answer,
            "incomplete_context": self.incomplete_context,
            "complete_context": self.complete_context,
            "masked_fact": [self.masked_fact.title, self.masked_fact.sentence],
            "masked_index": self.masked_index,
            "candidates": [[fact.title, fact.sentence] for fact in self.candidates],
            "supporting_count": self.supporting_count,
            "human_question": self.human_question,
            "supporting_indices": list(self.supporting_indices),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FlmExample:
        return cls(
            id=data["id"], split=data["split"], question=data["question"],
            answer=data["answer"], incomplete_context=data["incomplete_context"],
            complete_context=data["complete_context"],
            masked_fact=Fact(*data["masked_fact"]), masked_index=int(data["masked_index"]),
            candidates=tuple(Fact(*pair) for pair in data["candidates"]),
            supporting_count=int(data["supporting_count"]),
            human_question=data.get("human_question"),
            supporting_indices=tuple(int(index) for index in data.get("supporting_indices") or ()),
        )


@dataclass(frozen=True)
class AskedQuestion:
    """A clarifying question taken as given (a baseline's, or a question file's, already
    cleaned), where a raw model output is first cleaned of reasoning traces."""

    text: str


def facts_in_order(example: HotpotExample, keys: Sequence[tuple[str, int]]) -> list[Fact]:
    """The facts named by (title, index) keys, in context order, stripped of HotpotQA's spaces."""
    wanted = set(keys)
    return [
        Fact(title, sentence.strip())
        for title, sentences in example.paragraphs
        for index, sentence in enumerate(sentences)
        if (title, index) in wanted
    ]
