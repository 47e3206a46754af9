"""Inspect task ``condambig/hotpot_flm``: the clarifying-question pipeline of Toles et al.

    inspect eval condambig/hotpot_flm --model openai/gpt-4o -T split=test
    inspect eval condambig/hotpot_flm --model hf/meta-llama/Meta-Llama-3-8B-Instruct \\
        --model-role answerer=openai/gpt-4o             # the paper's GPT-4o answering agent
    inspect eval condambig/hotpot_flm -T questioner=repeater --model none   # a baseline

The model under evaluation asks one question (prompt 3). The answering agent and the
downstream model are, per role: an explicit ``-T answering_agent=`` / ``-T
downstream_model=`` checkpoint (run locally with transformers); else the Inspect model role
``answerer`` / ``downstream`` when one is bound (the generative agent: enumerated
candidates, a number back); else ``$CONDAMBIG_FLM_ANSWERING_AGENT`` /
``$CONDAMBIG_FLM_DOWNSTREAM_MODEL`` or the paper's ``google/flan-t5-base``.
Role models generate with their own config, as the paper's GPT-4o agent did (API
defaults); bind them greedy with ``--model-role 'downstream={model: openai/gpt-4o,
temperature: 0}'`` or, for ``hf/`` models, ``model_args: {do_sample: false}``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import anyio
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import Model, ModelOutput, model_roles
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

from condambig_metrics.hotpot_flm import summarize
from condambig_tasks import settings
from condambig_tasks.hotpot_flm.agents import (
    AgentChoice,
    AgentQuery,
    LocalDownstream,
    YesNoAnsweringAgent,
    generative_choice,
    generative_prompt,
)
from condambig_tasks.hotpot_flm.cache import AnswerCache, NoCache
from condambig_tasks.hotpot_flm.dataset import Split, load_examples, parse_split
from condambig_tasks.hotpot_flm.hf_models import CheckpointPool, CheckpointSpec
from condambig_tasks.hotpot_flm.inference import (
    BatchLimits,
    GreedyGenerator,
    YesNoScorer,
    first_line,
)
from condambig_tasks.hotpot_flm.options import FlmOptions
from condambig_tasks.hotpot_flm.pipeline import context_prompts, score_row
from condambig_tasks.hotpot_flm.prompts import clean_question, question_prompt
from condambig_tasks.hotpot_flm.records import FlmExample
from condambig_tasks.parsing import strip_reasoning

QUESTIONERS = ("model", "repeater", "human")
ANSWERER_ROLE = "answerer"
DOWNSTREAM_ROLE = "downstream"


@task
def hotpot_flm(
    split: str = "full",
    questioner: str = "model",
    answering_agent: str | None = None,
    downstream_model: str | None = None,
    agent_device: str | None = None,
    agent_dtype: str | None = None,
    agent_batch_size: int | None = None,
    downstream_max_new_tokens: int | None = None,
    downstream_cache: bool | None = None,
    mask_seed: int | None = None,
) -> Task:
    """HotpotQA-FLM.

    Args:
        split: ``full`` (HotpotQA distractor validation) or ``test`` (the 400 annotated rows).
        questioner: ``model`` (the model under evaluation asks), ``repeater`` (asks the task
            itself) or ``human`` (the annotator's question; test split only).
        answering_agent: local checkpoint (hub name or path) for the yes/no answering agent.
        downstream_model: local checkpoint for the downstream model.
        agent_device, agent_dtype, agent_batch_size: how local checkpoints run.
        downstream_max_new_tokens: answer length cap of the downstream model (default 10).
        downstream_cache: keep downstream answers on disk (default on).
        mask_seed: masking seed of the full split (default 0).
    """
    if questioner not in QUESTIONERS:
        raise ValueError(f"questioner must be one of {', '.join(QUESTIONERS)}, got {questioner!r}")
    parsed_split = parse_split(split)
    if questioner == "human" and parsed_split is not Split.TEST:
        raise ValueError("questioner=human needs -T split=test (only the test set has q2_gt)")
    options = FlmOptions.resolve({
        "answering_agent": answering_agent, "downstream_model": downstream_model,
        "agent_device": agent_device, "agent_dtype": agent_dtype,
        "agent_batch_size": agent_batch_size,
        "downstream_max_new_tokens": downstream_max_new_tokens,
        "downstream_cache": downstream_cache, "mask_seed": mask_seed,
    })
    environment = settings.flm_agent_environment()
    fixed_checkpoints = [
        name for name, given in (("answering_agent", answering_agent),
                                 ("downstream_model", downstream_model))
        if given is not None or name in environment
    ]
    examples = load_examples(parsed_split, options.mask_seed)
    return Task(
        dataset=[to_sample(example) for example in examples],
        solver=question_solver(questioner),
        scorer=flm_scorer(parsed_split.value, options.to_dict(), fixed_checkpoints),
        metadata={"split": parsed_split.value, "questioner": questioner},
    )


def to_sample(example: FlmExample) -> Sample:
    return Sample(
        id=example.id, input=question_prompt(example), target=example.answer,
        metadata={
            "task": example.question, "incomplete_context": example.incomplete_context,
            "masked_fact": example.masked_fact.render(), "human_question": example.human_question,
            "candidate_count": len(example.candidates),
        },
    )


@solver
def question_solver(questioner: str) -> Solver:
    """The model asks (``generate``), or a baseline's question is put in its place."""
    if questioner == "model":
        return generate()

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        source = state.metadata["task"] if questioner == "repeater" else state.metadata["human_question"]
        state.output = ModelOutput.from_content(model=questioner, content=source or "")
        return state

    return solve


@metric
def flm_metrics() -> Metric:
    """Corpus HotpotQA-FLM numbers: F1/EM per context, F1/EM recovery (percent), MFRR,
    improved rate, and the share of answering-agent replies with no valid number."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        rows = [score.score.value for score in scores if isinstance(score.score.value, dict)]
        if not rows:
            return {}
        result = summarize(rows)
        result["agent_fallback_rate"] = sum(
            not (score.score.metadata or {}).get("agent_answered_validly", True)
            for score in scores
        ) / len(scores)
        return result

    return compute


class LocalAgents:
    """Local checkpoints, loaded on first use in a worker thread, then shared by all samples."""

    def __init__(self, options: FlmOptions):
        self.options = options
        self.pool = CheckpointPool()
        self.lock = threading.Lock()
        self.limits = BatchLimits(batch_size=options.agent_batch_size)
        self._agent: YesNoAnsweringAgent | None = None
        self._downstream: LocalDownstream | None = None

    def _spec(self, name: str) -> CheckpointSpec:
        return CheckpointSpec(name, self.options.agent_device, self.options.agent_dtype)

    def choose(self, query: AgentQuery) -> AgentChoice:
        with self.lock:
            if self._agent is None:
                checkpoint = self.pool.get(self._spec(self.options.answering_agent),
                                           "answering agent", "answering_agent")
                self._agent = YesNoAnsweringAgent(YesNoScorer(checkpoint, self.limits))
            return self._agent.choose([query])[0]

    def downstream(self) -> LocalDownstream:
        with self.lock:
            if self._downstream is None:
                checkpoint = self.pool.get(self._spec(self.options.downstream_model),
                                           "downstream model", "downstream_model")
                self._downstream = LocalDownstream(GreedyGenerator(
                    checkpoint, self.options.downstream_max_new_tokens, self.limits))
            return self._downstream

    def answer(self, prompts: Sequence[str]) -> list[str]:
        downstream = self.downstream()
        with self.lock:
            return downstream.answer(prompts)


def _role(name: str) -> Model | None:
    bound = model_roles().get(name)
    if isinstance(bound, list):
        return bound[0] if bound else None
    return bound


@scorer(metrics=[flm_metrics()])
def flm_scorer(split: str, option_values: dict[str, Any], fixed_checkpoints: list[str]) -> Scorer:
    """Answering agent, then the downstream model on x_i, x_r, x_c; HotpotQA F1/EM each.

    Takes only small arguments (Inspect logs them) and loads the split's records itself.
    ``fixed_checkpoints`` names the roles (answering_agent, downstream_model) whose
    checkpoint was set explicitly, so a bound model role does not replace them.
    """
    options = FlmOptions(**option_values)
    examples: dict[str, FlmExample] = {
        example.id: example for example in load_examples(split, options.mask_seed)
    }
    explicit = {name: name in fixed_checkpoints for name in ("answering_agent", "downstream_model")}
    local = LocalAgents(options)

    async def choose(query: AgentQuery) -> tuple[AgentChoice, str]:
        answerer = None if explicit["answering_agent"] else _role(ANSWERER_ROLE)
        if answerer is None:
            choice = await anyio.to_thread.run_sync(local.choose, query)
            return choice, options.answering_agent
        reply = await answerer.generate(generative_prompt(query))
        return generative_choice(query, reply.completion), f"role {ANSWERER_ROLE}: {answerer}"

    async def downstream_answers(prompts: dict[str, str]) -> tuple[dict[str, str], str]:
        role_model = None if explicit["downstream_model"] else _role(DOWNSTREAM_ROLE)
        if role_model is None:
            downstream = await anyio.to_thread.run_sync(local.downstream)
            identity, decoding = downstream.identity, downstream.decoding
            name = options.downstream_model
        else:
            identity = f"inspect:{role_model}"
            decoding = json.dumps(role_model.config.model_dump(exclude_none=True), sort_keys=True)
            name = f"role {DOWNSTREAM_ROLE}: {role_model}"
        cache: AnswerCache | NoCache = (
            AnswerCache(options.cache_path, identity, decoding)
            if options.downstream_cache else NoCache()
        )
        wanted = list(dict.fromkeys(prompts.values()))
        known = await anyio.to_thread.run_sync(cache.get_many, wanted)
        missing = [prompt for prompt in wanted if prompt not in known]
        if missing:
            if role_model is None:
                fresh_answers = await anyio.to_thread.run_sync(local.answer, missing)
            else:
                fresh_answers = [
                    first_line(strip_reasoning((await role_model.generate(p)).completion))
                    for p in missing
                ]
            fresh = dict(zip(missing, fresh_answers, strict=True))
            await anyio.to_thread.run_sync(cache.put_many, fresh)
            known.update(fresh)
        return {context: known[prompt] for context, prompt in prompts.items()}, name

    async def score(state: TaskState, target: Target) -> Score:
        example = examples[str(state.sample_id)]
        question = clean_question(state.output.completion)
        query = AgentQuery(example.id, question, example.candidates)
        choice, agent_name = await choose(query)
        answers, downstream_name = await downstream_answers(context_prompts(example, choice))
        returned = example.candidates[choice.index].render()
        row = score_row(example, answers, choice.index == example.masked_index)
        metadata: dict[str, Any] = {
            "question_asked": question, "returned_fact": returned,
            "masked_fact": example.masked_fact.render(),
            "masked_fact_returned": bool(row["masked_fact_returned"]),
            "agent_answered_validly": choice.valid,
            "answer_incomplete": answers["incomplete"], "answer_response": answers["response"],
            "answer_complete": answers["complete"], "gold_answer": example.answer,
            "answering_agent": agent_name, "downstream_model": downstream_name,
        }
        explanation = (
            f"Asked: {question!r}\nReturned: {returned}\nMasked: {example.masked_fact.render()}\n"
            f"Answers (incomplete / response / complete): {answers['incomplete']!r} / "
            f"{answers['response']!r} / {answers['complete']!r}; gold {example.answer!r}"
        )
        return Score(value=row, answer=question, explanation=explanation, metadata=metadata)

    return score
