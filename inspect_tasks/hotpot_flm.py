"""Inspect task ``condambig/hotpot_flm``: the clarifying-question pipeline of Toles et al.

    inspect eval condambig/hotpot_flm --model openai/gpt-4o -T split=test
    inspect eval condambig/hotpot_flm --model hf/meta-llama/Meta-Llama-3-8B-Instruct \\
        --model-role answerer=openai/gpt-4o             # the paper's GPT-4o answering agent
    inspect eval condambig/hotpot_flm -T questioner=repeater --model none   # a baseline

The model under evaluation asks one question (prompt 3). The answering agent and the
downstream model are, per role: an explicit ``-T answering_agent=`` / ``-T
downstream_model=`` checkpoint (run locally with transformers) or
``$CONDAMBIG_FLM_ANSWERING_AGENT`` / ``$CONDAMBIG_FLM_DOWNSTREAM_MODEL``; else the Inspect
model role ``answerer`` / ``downstream`` when one is bound (the generative agent:
enumerated candidates, a number back); else the paper's ``google/flan-t5-base``.
Role models generate with their own config, as the paper's GPT-4o agent did (API
defaults); bind them greedy with ``--model-role 'downstream={model: openai/gpt-4o,
temperature: 0}'`` or, for ``hf/`` models, ``model_args: {do_sample: false}``.
"""

from __future__ import annotations

from inspect_ai import Task, task
from inspect_ai.model import ModelOutput
from inspect_ai.solver import (
    Generate,
    Solver,
    TaskState,
    chain,
    generate,
    solver,
    system_message,
)

from condambig._factory import benchmark_task
from condambig_tasks.errors import ConfigurationError
from condambig_tasks.hotpot_flm.loader import Split, parse_split
from condambig_tasks.hotpot_flm.prompts import QUESTION_PROMPTS, question_system_message

QUESTIONERS = ("model", "repeater", "human")


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
    downstream_cut_last_token: bool | None = None,
    downstream_cache: bool | None = None,
    mask_seed: int | None = None,
    question_prompt: str = "default",
) -> Task:
    """HotpotQA-FLM.

    Args:
        split: ``full`` (HotpotQA distractor validation) or ``test`` (the 400 annotated rows).
        questioner: ``model`` (the model under evaluation asks), ``repeater`` (asks the task
            itself) or ``human`` (the annotator's question; test split only).
        answering_agent: local checkpoint (hub name or path) for the yes/no answering agent.
        downstream_model: local checkpoint for the downstream model.
        agent_device, agent_dtype, agent_batch_size: how local checkpoints run.
        downstream_max_new_tokens: max_new_tokens of the downstream model (default 10).
        downstream_cut_last_token: drop each downstream answer's last generated token, as
            the authors' code does (default on: at most 9 answer tokens kept).
        downstream_cache: keep downstream answers on disk (default on).
        mask_seed: masking seed of the full split (default 0).
        question_prompt: ``default`` (prompt 3 as one text) or ``llama3_chat`` (the
            authors' Llama 3 layout; its system message is added before generation).
    """
    if questioner not in QUESTIONERS:
        raise ConfigurationError(f"questioner must be one of {', '.join(QUESTIONERS)}, got {questioner!r}")
    if questioner == "human" and parse_split(split) is not Split.TEST:
        raise ConfigurationError("questioner=human needs -T split=test (only the test set has q2_gt)")
    if question_prompt not in QUESTION_PROMPTS:
        raise ConfigurationError(
            f"question_prompt must be one of {', '.join(QUESTION_PROMPTS)}, got {question_prompt!r}")
    return benchmark_task(
        "hotpot_flm",
        {"split": split, "answering_agent": answering_agent,
         "downstream_model": downstream_model, "agent_device": agent_device,
         "agent_dtype": agent_dtype, "agent_batch_size": agent_batch_size,
         "downstream_max_new_tokens": downstream_max_new_tokens,
         "downstream_cut_last_token": downstream_cut_last_token,
         "downstream_cache": downstream_cache, "mask_seed": mask_seed,
         "question_prompt": question_prompt},
        solver=question_solver(questioner, question_system_message(question_prompt)),
        metadata={"split": parse_split(split).value, "questioner": questioner},
    )


@solver
def question_solver(questioner: str, system: str | None = None) -> Solver:
    """The model asks (``generate``, after the prompt variant's system message if it has
    one), or a baseline's question is put in its place."""
    if questioner == "model":
        return chain(system_message(system), generate()) if system else generate()

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        record = state.metadata["record"]
        source = record["question"] if questioner == "repeater" else record["human_question"]
        state.output = ModelOutput.from_content(model=questioner, content=source or "")
        return state

    return solve
