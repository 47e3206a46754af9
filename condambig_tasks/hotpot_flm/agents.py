"""The answering agent A and the downstream model D, as the pipeline sees them.

A picks one candidate fact for a question; D answers prompts. Both are protocols so the
pipeline runs the same with local checkpoints (batched, here), with Inspect model roles
(generative agent, :mod:`condambig.hotpot_flm`), or with test doubles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from condambig_tasks.hotpot_flm.inference import GreedyGenerator, YesNoScorer
from condambig_tasks.hotpot_flm.prompts import (
    candidate_order,
    enumerated_prompt,
    fallback_choice,
    parse_enumerated_choice,
    yes_no_prompt,
)
from condambig_tasks.hotpot_flm.records import Fact


@dataclass(frozen=True)
class AgentQuery:
    """A clarifying question put to the answering agent, with the example's candidates."""

    example_id: str
    question: str
    candidates: tuple[Fact, ...]


@dataclass(frozen=True)
class AgentChoice:
    """The candidate returned; ``valid`` is False when a generative agent named no valid
    number and a random candidate was returned instead (as in the paper)."""

    index: int
    valid: bool = True


class AnsweringAgent(Protocol):
    def choose(self, queries: Sequence[AgentQuery]) -> list[AgentChoice]: ...


class DownstreamModel(Protocol):
    identity: str
    decoding: str

    def answer(self, prompts: Sequence[str]) -> list[str]: ...


def arg_max(values: Sequence[float]) -> int:
    """Index of the largest value; the first one on ties (candidates are in context order)."""
    best = 0
    for index, value in enumerate(values):
        if value > values[best]:
            best = index
    return best


class YesNoAnsweringAgent:
    """The paper's answering agent: score every candidate by P(yes), return the arg-max.

    All queries' candidates go through the model together, batched and length-sorted.
    """

    def __init__(self, scorer: YesNoScorer):
        self.scorer = scorer

    def choose(self, queries: Sequence[AgentQuery]) -> list[AgentChoice]:
        prompts = [yes_no_prompt(query.question, candidate)
                   for query in queries for candidate in query.candidates]
        probabilities = self.scorer.yes_probabilities(prompts)
        choices, start = [], 0
        for query in queries:
            scores = probabilities[start:start + len(query.candidates)]
            start += len(query.candidates)
            choices.append(AgentChoice(arg_max(scores)))
        return choices


def generative_choice(query: AgentQuery, reply: str) -> AgentChoice:
    """Read a generative agent's reply to :func:`generative_prompt` (random when invalid)."""
    order = candidate_order(query.example_id, len(query.candidates))
    index = parse_enumerated_choice(reply, order)
    if index is None:
        return AgentChoice(
            fallback_choice(query.example_id, query.question, len(query.candidates)), False
        )
    return AgentChoice(index)


def generative_prompt(query: AgentQuery) -> str:
    """The enumerated "which answer is correct?" prompt for an API / Inspect answering agent."""
    order = candidate_order(query.example_id, len(query.candidates))
    return enumerated_prompt(query.question, query.candidates, order)


class LocalDownstream:
    """D as a local checkpoint decoding greedily."""

    def __init__(self, generator: GreedyGenerator):
        self.generator = generator
        self.identity = generator.checkpoint.identity
        self.decoding = f"greedy:max_new_tokens={generator.max_new_tokens}"

    def answer(self, prompts: Sequence[str]) -> list[str]:
        return self.generator.generate(prompts)
