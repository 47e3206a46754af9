"""C → A → D for a batch of examples: the answering agent, the three downstream answers, scores.

One code path for condambig-score and lm-eval (Inspect drives the same steps per sample,
asynchronously). Every question goes to the answering agent in one batched call; every
downstream prompt not in the cache goes to the downstream model in one batched call.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from condambig_metrics.hotpot_flm import CONTEXTS, answer_em, answer_f1, summarize
from condambig_tasks.hotpot_flm.agents import (
    AgentChoice,
    AgentQuery,
    AnsweringAgent,
    DownstreamModel,
    LocalDownstream,
    YesNoAnsweringAgent,
)
from condambig_tasks.hotpot_flm.cache import AnswerCache, NoCache
from condambig_tasks.hotpot_flm.hf_models import CheckpointPool, CheckpointSpec
from condambig_tasks.hotpot_flm.inference import BatchLimits, GreedyGenerator, YesNoScorer
from condambig_tasks.hotpot_flm.options import FlmOptions
from condambig_tasks.hotpot_flm.prompts import downstream_prompt
from condambig_tasks.hotpot_flm.records import FlmExample

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExampleOutcome:
    """What happened to one example, and its score row (keys of ``ROW_KEYS``)."""

    id: str
    question_asked: str
    returned_fact: str
    masked_fact: str
    choice_valid: bool
    answers: dict[str, str]
    gold_answer: str
    row: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "question_asked": self.question_asked,
            "returned_fact": self.returned_fact, "masked_fact": self.masked_fact,
            "choice_valid": self.choice_valid, "gold_answer": self.gold_answer,
            **{f"answer_{context}": self.answers[context] for context in CONTEXTS},
            **self.row,
        }


@dataclass
class PipelineRun:
    """Outcomes in example order, and how many downstream answers were computed per context."""

    outcomes: list[ExampleOutcome]
    computed: dict[str, int] = field(default_factory=dict)

    def metrics(self) -> dict[str, float]:
        return summarize([outcome.row for outcome in self.outcomes])


def score_row(example: FlmExample, answers: Mapping[str, str], masked_returned: bool) -> dict[str, float]:
    row = {}
    for context in CONTEXTS:
        row[f"f1_{context}"] = answer_f1(answers[context], example.answer)
        row[f"em_{context}"] = answer_em(answers[context], example.answer)
    row["masked_fact_returned"] = float(masked_returned)
    return row


def context_prompts(example: FlmExample, choice: AgentChoice) -> dict[str, str]:
    """The downstream prompts on x_i, x_r and x_c."""
    returned = example.candidates[choice.index]
    return {
        "incomplete": downstream_prompt(example.question, example.incomplete_context),
        "response": downstream_prompt(example.question, example.response_context(returned)),
        "complete": downstream_prompt(example.question, example.complete_context),
    }


def cached_answers(
    prompts_by_context: Mapping[str, Sequence[str]], downstream: DownstreamModel,
    cache: AnswerCache | NoCache,
) -> tuple[dict[str, str], dict[str, int]]:
    """Answers for every prompt; missing ones computed in one batch and stored.

    ``computed`` counts the answers computed per context (a prompt shared by two contexts
    is counted once, under the first of incomplete, complete, response).
    """
    ordered = ("incomplete", "complete", "response")
    everything = list(dict.fromkeys(p for c in ordered for p in prompts_by_context.get(c, ())))
    known = cache.get_many(everything)
    missing = [prompt for prompt in everything if prompt not in known]
    computed = {context: 0 for context in ordered}
    counted: set[str] = set()
    missing_set = set(missing)
    for context in ordered:
        for prompt in dict.fromkeys(prompts_by_context.get(context, ())):
            if prompt in missing_set and prompt not in counted:
                computed[context] += 1
                counted.add(prompt)
    if missing:
        fresh = dict(zip(missing, downstream.answer(missing), strict=True))
        cache.put_many(fresh)
        known.update(fresh)
    return known, computed


def run_pipeline(
    examples: Sequence[FlmExample], questions: Mapping[str, str], agent: AnsweringAgent,
    downstream: DownstreamModel, cache: AnswerCache | NoCache,
) -> PipelineRun:
    """Score ``questions`` (example id → clarifying question) on ``examples``."""
    chosen = [example for example in examples if example.id in questions]
    queries = [AgentQuery(e.id, questions[e.id], e.candidates) for e in chosen]
    choices = agent.choose(queries)
    prompts = [context_prompts(example, choice) for example, choice in zip(chosen, choices, strict=True)]
    answers, computed = cached_answers(
        {context: [p[context] for p in prompts] for context in CONTEXTS}, downstream, cache
    )
    outcomes = []
    for example, choice, query, by_context in zip(chosen, choices, queries, prompts, strict=True):
        example_answers = {context: answers[by_context[context]] for context in CONTEXTS}
        outcomes.append(ExampleOutcome(
            id=example.id, question_asked=query.question,
            returned_fact=example.candidates[choice.index].render(),
            masked_fact=example.masked_fact.render(), choice_valid=choice.valid,
            answers=example_answers, gold_answer=example.answer,
            row=score_row(example, example_answers, choice.index == example.masked_index),
        ))
    logger.info("HotpotQA-FLM: downstream answers computed %s (rest from cache)", computed)
    return PipelineRun(outcomes, computed)


@dataclass
class LocalAgents:
    """Both agents as local checkpoints, each loaded once, plus the answer cache."""

    agent: YesNoAnsweringAgent
    downstream: LocalDownstream
    cache: AnswerCache | NoCache


def build_local_agents(options: FlmOptions, pool: CheckpointPool | None = None) -> LocalAgents:
    pool = pool or CheckpointPool()
    limits = BatchLimits(batch_size=options.agent_batch_size)
    agent_spec = CheckpointSpec(options.answering_agent, options.agent_device, options.agent_dtype)
    downstream_spec = CheckpointSpec(
        options.downstream_model, options.agent_device, options.agent_dtype
    )
    agent_checkpoint = pool.get(agent_spec, "answering agent", "answering_agent")
    downstream_checkpoint = pool.get(downstream_spec, "downstream model", "downstream_model")
    downstream = LocalDownstream(
        GreedyGenerator(downstream_checkpoint, options.downstream_max_new_tokens, limits)
    )
    cache: AnswerCache | NoCache = (
        AnswerCache(options.cache_path, downstream.identity, downstream.decoding)
        if options.downstream_cache else NoCache()
    )
    return LocalAgents(YesNoAnsweringAgent(YesNoScorer(agent_checkpoint, limits)), downstream, cache)
