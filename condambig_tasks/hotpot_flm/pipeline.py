"""C → A → D for a batch of examples: the answering agent, the three downstream answers, scores.

The one pipeline of every front end: lm-eval and condambig-score pass the whole run (every
question's candidates scored in one batched step, every downstream prompt not in the cache
in one batched step), Inspect one sample at a time. Both steps are computed and cached batch
by batch (:mod:`resumable`), so an interrupted run resumes where it stopped. An agent
method that is a coroutine (an Inspect model role) is awaited; a blocking one (a local
checkpoint, a scripted test agent) runs in a worker thread so that concurrent samples keep
the event loop free.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from condambig_metrics.hotpot_flm import CONTEXTS, summarise
from condambig_tasks.hotpot_flm.agents import (
    AgentChoice,
    AgentQuery,
    AnsweringAgent,
    DownstreamModel,
)
from condambig_tasks.hotpot_flm.cache import NoCache
from condambig_tasks.hotpot_flm.prompts import context_prompts
from condambig_tasks.hotpot_flm.records import FlmExample
from condambig_tasks.hotpot_flm.resumable import ResultStore, Step, in_worker_thread, run_step
from condambig_tasks.hotpot_flm.scoring import score_row

__all__ = ["ExampleOutcome", "PipelineRun", "in_worker_thread", "run_pipeline"]

logger = logging.getLogger(__name__)

# A prompt shared by two contexts is computed once and counted under the first of these.
COMPUTE_ORDER = ("incomplete", "complete", "response")


@dataclass(frozen=True)
class ExampleOutcome:
    """What happened to one example, and its score row (keys of ``ROW_KEYS``).

    ``computed``: the contexts whose downstream answer this run computed (not cached).
    """

    id: str
    question_asked: str
    returned_fact: str
    masked_fact: str
    choice_valid: bool
    answers: dict[str, str]
    gold_answer: str
    row: dict[str, float]
    computed: tuple[str, ...] = ()
    answering_agent: str = ""
    downstream_model: str = ""


@dataclass
class PipelineRun:
    """Outcomes in example order, and how many downstream answers were computed per context."""

    outcomes: list[ExampleOutcome]
    computed: dict[str, int] = field(default_factory=dict)

    def metrics(self) -> dict[str, float]:
        return summarise([outcome.row for outcome in self.outcomes])


async def _choose(agent: AnsweringAgent, queries: Sequence[AgentQuery],
                  scores: ResultStore) -> list[AgentChoice]:
    """The agent's choices; candidate scores are computed (and kept) batch by batch."""
    if not hasattr(agent, "scoring_prompts"):
        return await _call(agent.choose, queries)
    scored = await run_step(Step("hotpot_flm candidate scores",
                                 agent.score, scores, agent.plan),
                            agent.scoring_prompts(queries))
    return agent.pick(queries, scored.values)


async def _call(method: Callable[[Any], Any], argument: Any) -> Any:
    if inspect.iscoroutinefunction(method):
        return await method(argument)
    return await in_worker_thread(method, argument)


def _name(agent: Any) -> str:
    return str(getattr(agent, "name", type(agent).__name__))


async def run_pipeline(
    examples: Sequence[FlmExample], questions: Mapping[str, str], agent: AnsweringAgent,
    downstream: DownstreamModel, cache: ResultStore, scores: ResultStore | None = None,
) -> PipelineRun:
    """Score ``questions`` (example id → clarifying question) on ``examples``.

    ``cache`` keeps the downstream answers, ``scores`` the candidate scores of an answering
    agent that scores candidates one by one (:class:`~.agents.CandidateScoringAgent`).
    """
    chosen = [example for example in examples if example.id in questions]
    queries = [AgentQuery.for_example(e, questions[e.id]) for e in chosen]
    choices = await _choose(agent, queries, NoCache() if scores is None else scores)
    prompts = [context_prompts(example, example.candidates[choice.index])
               for example, choice in zip(chosen, choices, strict=True)]
    wanted = list(dict.fromkeys(p[context] for context in COMPUTE_ORDER for p in prompts))
    answered = await run_step(Step("hotpot_flm downstream answers",
                                   downstream.answer, cache, getattr(downstream, "plan", None)),
                              wanted)
    known, missing = answered.values, answered.computed
    computed_by_example = _first_needs(prompts, set(missing))
    outcomes = []
    for index, (example, choice, query, by_context) in enumerate(
            zip(chosen, choices, queries, prompts, strict=True)):
        example_answers = {context: known[by_context[context]] for context in CONTEXTS}
        outcomes.append(ExampleOutcome(
            id=example.id, question_asked=query.question,
            returned_fact=example.candidates[choice.index].render(),
            masked_fact=example.masked_fact.render(), choice_valid=choice.valid,
            answers=example_answers, gold_answer=example.answer,
            row=score_row(example, example_answers, choice.index == example.masked_index),
            computed=tuple(computed_by_example.get(index, ())),
            answering_agent=_name(agent), downstream_model=_name(downstream),
        ))
    computed = {context: sum(context in o.computed for o in outcomes) for context in COMPUTE_ORDER}
    logger.info("HotpotQA-FLM: downstream answers computed %s (rest from cache)", computed)
    return PipelineRun(outcomes, computed)


def _first_needs(prompts: Sequence[Mapping[str, str]], missing: set[str]) -> dict[int, list[str]]:
    """Example index → contexts whose computed answer it was the first to need."""
    owner: dict[str, tuple[int, str]] = {}
    for context in COMPUTE_ORDER:
        for index, by_context in enumerate(prompts):
            prompt = by_context[context]
            if prompt in missing and prompt not in owner:
                owner[prompt] = (index, context)
    needs: dict[int, list[str]] = {}
    for index, context in owner.values():
        needs.setdefault(index, []).append(context)
    return needs
