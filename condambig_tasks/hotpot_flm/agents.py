"""The answering agent A and the downstream model D, as the pipeline sees them.

A picks one candidate fact for a question; D answers prompts. Both are protocols so the
pipeline runs the same with local checkpoints (batched, here), with Inspect model roles
(the generative agent, :mod:`condambig_tasks.hotpot_flm.roles`), or with test doubles.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from condambig_tasks.assets import HUGGINGFACE, ExternalAsset
from condambig_tasks.hotpot_flm.hf_models import CheckpointPool, CheckpointSpec
from condambig_tasks.hotpot_flm.inference import BatchLimits, GreedyGenerator, YesNoScorer
from condambig_tasks.hotpot_flm.prompts import (
    candidate_order,
    enumerated_prompt,
    fallback_choice,
    parse_enumerated_choice,
    yes_no_prompt,
)
from condambig_tasks.hotpot_flm.records import Fact, FlmExample


@dataclass(frozen=True)
class AgentQuery:
    """A clarifying question put to the answering agent, with the example's candidates.

    ``order``: the candidate indices in the authors' scoring order (masked fact, then
    non-supporting sentences, then the other supporting facts; see
    :meth:`FlmExample.scoring_order`), which decides exact ties; empty: context order.
    ``masked_index``: the masked fact, the one candidate the authors' generative agent saw
    with its title.
    """

    example_id: str
    question: str
    candidates: tuple[Fact, ...]
    order: tuple[int, ...] = ()
    masked_index: int | None = None

    @classmethod
    def for_example(cls, example: FlmExample, question: str) -> AgentQuery:
        return cls(example.id, question, example.candidates, example.scoring_order(),
                   example.masked_index)

    def scoring_order(self) -> tuple[int, ...]:
        return self.order or tuple(range(len(self.candidates)))


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


def arg_max(values: Sequence[float], order: Sequence[int] | None = None) -> int:
    """Index of the largest value; on exact ties the one that comes first in ``order``
    (default: index order), as ``torch.argmax`` over the authors' candidate list keeps its
    first maximum."""
    ranked = list(order) if order is not None else list(range(len(values)))
    best = ranked[0]
    for index in ranked:
        if values[index] > values[best]:
            best = index
    return best


class CandidateScoringAgent(Protocol):
    """An answering agent that scores each candidate on its own and keeps the best: its
    scores can be computed batch by batch and cached (:mod:`resumable`)."""

    identity: str
    rule: str

    def scoring_prompts(self, queries: Sequence[AgentQuery]) -> list[str]: ...

    def plan(self, prompts: Sequence[str]) -> list[list[str]]: ...

    def score(self, prompts: Sequence[str]) -> list[float]: ...

    def pick(self, queries: Sequence[AgentQuery],
             scores: Mapping[str, float]) -> list[AgentChoice]: ...


class YesNoAnsweringAgent:
    """The paper's answering agent: score every candidate by P(yes), return the arg-max.

    Exact ties go to the candidate the authors scored first (the masked fact, then
    non-supporting sentences, then the other supporting facts: :attr:`AgentQuery.order`).
    All queries' candidates go through the model together, batched and length-sorted
    (:meth:`plan`; the pipeline computes and caches them batch by batch).
    ``lock`` serialises calls when the model is shared between threads.
    """

    def __init__(self, scorer: YesNoScorer, lock: Any = None):
        self.scorer = scorer
        self.name = scorer.checkpoint.spec.name_or_path
        self.identity = getattr(scorer.checkpoint, "identity", self.name)
        self.lock = lock or contextlib.nullcontext()

    @property
    def rule(self) -> str:
        return getattr(self.scorer, "rule", "p_yes")

    def scoring_prompts(self, queries: Sequence[AgentQuery]) -> list[str]:
        return [yes_no_prompt(query.question, candidate)
                for query in queries for candidate in query.candidates]

    def plan(self, prompts: Sequence[str]) -> list[list[str]]:
        with self.lock:
            return self.scorer.plan(prompts)

    def score(self, prompts: Sequence[str]) -> list[float]:
        with self.lock:
            return self.scorer.yes_probabilities(prompts)

    def pick(self, queries: Sequence[AgentQuery],
             scores: Mapping[str, float]) -> list[AgentChoice]:
        """The arg-max candidate of each query, from every candidate prompt's P(yes)."""
        choices = []
        for query in queries:
            values = [scores[yes_no_prompt(query.question, candidate)]
                      for candidate in query.candidates]
            choices.append(AgentChoice(arg_max(values, query.scoring_order())))
        return choices

    def choose(self, queries: Sequence[AgentQuery]) -> list[AgentChoice]:
        prompts = self.scoring_prompts(queries)
        return self.pick(queries, dict(zip(prompts, self.score(prompts), strict=True)))


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
    return enumerated_prompt(query.question, query.candidates, order, query.masked_index)


class LocalDownstream:
    """D as a local checkpoint decoding greedily (``lock`` as for the answering agent)."""

    def __init__(self, generator: GreedyGenerator, lock: Any = None):
        self.generator = generator
        self.name = generator.checkpoint.spec.name_or_path
        self.identity = generator.checkpoint.identity
        self.decoding = f"greedy:max_new_tokens={generator.max_new_tokens}"
        if generator.cut_last_token:
            self.decoding += ":cut_last_token"
        self.lock = lock or contextlib.nullcontext()

    def plan(self, prompts: Sequence[str]) -> list[list[str]]:
        with self.lock:
            return self.generator.plan(prompts)

    def answer(self, prompts: Sequence[str]) -> list[str]:
        with self.lock:
            return self.generator.generate(prompts)


# the checkpoint of both agents unless options name others; transformers fetches its files
DEFAULT_AGENT = "google/flan-t5-base"
AGENT_ASSET = ExternalAsset(
    HUGGINGFACE, DEFAULT_AGENT, "hf_hub_download",
    "The paper's answering agent and downstream model (options answering_agent, "
    "downstream_model); no commit recorded.")


def checkpoint_name(explicit: str | None) -> str:
    """The checkpoint an agent option names; unset: the paper's ``google/flan-t5-base``."""
    return explicit or DEFAULT_AGENT


class LocalAgents:
    """Both agents as local checkpoints, each loaded on first use and then shared by every
    call and thread (one lock: a checkpoint may play both agents and is not re-entrant).

    ``options`` is the benchmark's options (checkpoint names, device, dtype, batch size,
    downstream answer length and whether its last token is cut).
    """

    def __init__(self, options: Any, pool: CheckpointPool | None = None):
        self.options = options
        self.pool = pool or CheckpointPool()
        self.lock = threading.Lock()
        self.limits = BatchLimits(batch_size=options.agent_batch_size)
        self._agent: YesNoAnsweringAgent | None = None
        self._downstream: LocalDownstream | None = None

    def _spec(self, explicit: str | None) -> CheckpointSpec:
        return CheckpointSpec(checkpoint_name(explicit), self.options.agent_device,
                              self.options.agent_dtype)

    def answering_agent(self) -> YesNoAnsweringAgent:
        with self.lock:
            if self._agent is None:
                checkpoint = self.pool.get(self._spec(self.options.answering_agent),
                                           "answering agent", "answering_agent")
                self._agent = YesNoAnsweringAgent(YesNoScorer(checkpoint, self.limits),
                                                  self.lock)
            return self._agent

    def downstream(self) -> LocalDownstream:
        with self.lock:
            if self._downstream is None:
                checkpoint = self.pool.get(self._spec(self.options.downstream_model),
                                           "downstream model", "downstream_model")
                generator = GreedyGenerator(checkpoint, self.options.downstream_max_new_tokens,
                                            self.limits,
                                            cut_last_token=self.options.downstream_cut_last_token)
                self._downstream = LocalDownstream(generator, self.lock)
            return self._downstream
