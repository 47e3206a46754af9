"""Inspect task ``condambig/hotpot_flm``: the clarifying-question pipeline of Toles et al.

    inspect eval condambig/hotpot_flm --model openai/gpt-4o -T split=test
    inspect eval condambig/hotpot_flm_test --model openai/gpt-4o    # the same run, by name
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

from typing import Any, Literal

from inspect_ai import Task
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
from condambig.task_items import TaskItems
from condambig.task_options import task, variant_task
from condambig_tasks import registry
from condambig_tasks.errors import ConfigurationError
from condambig_tasks.hotpot_flm.benchmark import FlmOptions
from condambig_tasks.hotpot_flm.hf_models import Dtype
from condambig_tasks.hotpot_flm.loader import Split
from condambig_tasks.hotpot_flm.prompts import QuestionPrompt, question_system_message
from condambig_tasks.options import coerce, option_values

# who asks: the model under evaluation, or a baseline (an Inspect-only choice, no option)
Questioner = Literal["model", "repeater", "human"]
_DEFAULT = FlmOptions()


@task
def hotpot_flm(
    split: Split = _DEFAULT.split,
    questioner: Questioner = "model",
    answering_agent: str | None = _DEFAULT.answering_agent,
    downstream_model: str | None = _DEFAULT.downstream_model,
    # None: $CONDAMBIG_FLM_DEVICE / _DTYPE / _BATCH_SIZE / _CACHE, else the declared default
    agent_device: str | None = None,
    agent_dtype: Dtype | None = None,
    agent_batch_size: int | None = None,
    downstream_max_new_tokens: int = _DEFAULT.downstream_max_new_tokens,
    downstream_cut_last_token: bool = _DEFAULT.downstream_cut_last_token,
    downstream_cache: bool | None = None,
    mask_seed: int = _DEFAULT.mask_seed,
    question_prompt: QuestionPrompt = _DEFAULT.question_prompt,
) -> Task:
    """HotpotQA-FLM.

    Args:
        split: HotpotQA distractor validation (full) or the 400 annotated rows (test).
        questioner: the model under evaluation asks, or a baseline: the task itself
            (repeater) or the annotator's question (human; test split only).
        answering_agent: local checkpoint (hub name or path) for the yes/no answering agent.
        downstream_model: local checkpoint for the downstream model.
        agent_device, agent_dtype, agent_batch_size: how local checkpoints run.
        downstream_max_new_tokens: max_new_tokens of the downstream model.
        downstream_cut_last_token: drop each downstream answer's last generated token, as
            the authors' code does (at most 9 answer tokens kept).
        downstream_cache: keep downstream answers on disk.
        mask_seed: masking seed of the full split.
        question_prompt: prompt 3 as one text, or the authors' Llama 3 layout (its system
            message is added before generation).
    """
    values = option_values(FlmOptions, locals())
    questioner = coerce(Questioner, questioner, "hotpot_flm option questioner")
    options = registry.get("hotpot_flm").options(values)
    if questioner == "human" and options.split is not Split.TEST:
        raise ConfigurationError("questioner=human needs -T split=test (only the test set has q2_gt)")
    return benchmark_task(
        "hotpot_flm", values,
        solver=question_solver(questioner, question_system_message(options.question_prompt)),
        metadata={"split": options.split.value, "questioner": questioner},
    )


@task
@variant_task(hotpot_flm)
def hotpot_flm_test(**options: Any) -> Task:
    ...


@solver
def question_solver(questioner: str, system: str | None = None) -> Solver:
    """The model asks (``generate``, after the prompt variant's system message if it has
    one), or a baseline's question is put in its place."""
    if questioner == "model":
        return chain(system_message(system), generate()) if system else generate()
    task_items = TaskItems("hotpot_flm")  # the examples of the task built in this process

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        example = task_items.item(state.sample_id, state.metadata)
        source = example.question if questioner == "repeater" else example.human_question
        state.output = ModelOutput.from_content(model=questioner, content=source or "")
        return state

    return solve
