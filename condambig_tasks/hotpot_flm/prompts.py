"""The four prompts of the pipeline, worded as the authors' code and paper appendix have them."""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from typing import Literal, get_args

from condambig_tasks.hotpot_flm.records import Fact, FlmExample
from condambig_tasks.parsing import model_answer, strip_reasoning

# Longer questions are cut before they reach the answering agent: no clarifying question
# needs more, and a runaway generation would otherwise dominate the agent's cost.
MAX_QUESTION_CHARACTERS = 2_000

YES_NO_SUFFIX = "prompt: Does the context answer the question, yes or no?"
# A causal answering agent gets an answer cue so its next token is the yes/no decision.
CAUSAL_ANSWER_CUE = "\nAnswer:"
# The authors' T5_PM appends this to "question context" (double newline, trailing space).
DOWNSTREAM_SUFFIX = "\n\nAnswer in as few words as possible: "


# The variants of C's prompt (option ``question_prompt``).
QuestionPrompt = Literal["default", "llama3_chat"]
QUESTION_PROMPTS: tuple[str, ...] = get_args(QuestionPrompt)
P3_INSTRUCTION = "What question can you ask to help you answer the final question?"
# The system message of the authors' Llama 3 questioner (``Llama3_Secondary_Model``):
# sent by the front end (Inspect adds it; lm-eval takes it as --system_instruction).
LLAMA3_SYSTEM_MESSAGE = (
    "Below is an instruction that describes a task, paired with an input that provides "
    "further context. Write a response that appropriately completes the request. Only write "
    "the response, nothing else."
)


def question_prompt(example: FlmExample, variant: str = "default") -> str:
    """C's prompt: prompt 3 of the paper (§8.1, authors' ``p3``).

    ``default``: p3 as one text, as the authors sent it to GPT-4o (``OpenAI_Secondary_Model``).
    ``llama3_chat``: the layout of the authors' Llama 3 8B Instruct questioner
    (``Llama3_Secondary_Model`` in github.com/mtoles/qq): the user message
    ``Instruction:\n{p3}\n\n### Input:\nContext:\n{x_i}\nQuestion:\n{task}\nYou can
    ask:\n\n### Response:`` under the system message :data:`LLAMA3_SYSTEM_MESSAGE`.
    """
    if variant == "llama3_chat":
        return (
            f"Instruction:\n{P3_INSTRUCTION}\n\n### Input:\n"
            f"Context:\n{example.incomplete_context}\nQuestion:\n{example.question}\n"
            "You can ask:\n\n### Response:"
        )
    if variant != "default":
        raise ValueError(f"question prompt {variant!r} is not one of {', '.join(QUESTION_PROMPTS)}")
    return (
        f"{P3_INSTRUCTION}\n\n"
        f"{example.incomplete_context}\n\n{example.question}\n\nYou can ask:"
    )


def question_system_message(variant: str) -> str | None:
    """The system message that goes with a question prompt variant (None: no system message)."""
    return LLAMA3_SYSTEM_MESSAGE if variant == "llama3_chat" else None


def clean_question(output: str) -> str:
    """The clarifying question from a model output: capped, lone surrogates replaced (the
    agents' tokenizers reject them), reasoning traces dropped, length capped."""
    if not isinstance(output, str):
        return ""
    return model_answer(output).text[:MAX_QUESTION_CHARACTERS].strip()


def yes_no_prompt(question: str, candidate: Fact) -> str:
    """Answering-agent input for one candidate (appendix §8.2; the authors' T5 oracle)."""
    return f"question: {question}\ncontext: {candidate.render()}\n{YES_NO_SUFFIX}"


def downstream_prompt(task: str, context: str) -> str:
    """Downstream input (appendix §8.3), the authors' exact string (``prepend_question`` and
    ``T5_PM.prepare_data`` in github.com/mtoles/qq): task and ``Title: fact`` context joined
    with every whitespace run collapsed to one space, then :data:`DOWNSTREAM_SUFFIX`."""
    return " ".join(f"{task} {context}".split()) + DOWNSTREAM_SUFFIX


def context_prompts(example: FlmExample, returned: Fact) -> dict[str, str]:
    """The downstream prompts on x_i, x_r (x_i + the returned fact) and x_c."""
    return {
        "incomplete": downstream_prompt(example.question, example.incomplete_context),
        "response": downstream_prompt(example.question, example.response_context(returned)),
        "complete": downstream_prompt(example.question, example.complete_context),
    }


# ----------------------------------------------------------- generative answering agent

def candidate_order(example_id: str, count: int) -> list[int]:
    """The shuffled order in which the generative agent sees the candidates.

    The authors shuffle to remove position bias; here the shuffle is seeded by the example
    id so a rerun shows the same prompt (and hits the same caches).
    """
    order = list(range(count))
    random.Random(hashlib.sha256(f"order:{example_id}".encode()).hexdigest()).shuffle(order)
    return order


def enumerated_prompt(
    question: str, candidates: Sequence[Fact], order: Sequence[int],
    titled: int | None = None,
) -> str:
    """``Question: q`` + numbered candidates + "Which answer is correct? ..." (appendix §8.2).

    As in the authors' ``OpenAI_Oracle`` (github.com/mtoles/qq, ``oracles.py``) only the
    masked fact (``titled``) is listed as ``Title: sentence``; every other candidate is its
    bare sentence. ``titled`` None lists no title.
    """
    block = "".join(
        f"{shown}. {candidates[index].render() if index == titled else candidates[index].sentence}\n"
        for shown, index in enumerate(order))
    return (
        f"Question: {question}\n\n{block}\n\n"
        "Which answer is correct? Only say the number of the answer, nothing else."
    )


_NUMBER = re.compile(r"\d+")


def parse_enumerated_choice(output: str, order: Sequence[int]) -> int | None:
    """Candidate index named by the first number of the reply; None when there is no valid one."""
    if not isinstance(output, str):
        return None
    found = _NUMBER.search(strip_reasoning(output))
    if found is None or len(found.group()) > 9:  # no number, or one no list can reach
        return None
    shown = int(found.group())
    return order[shown] if shown < len(order) else None


def fallback_choice(example_id: str, question: str, count: int) -> int:
    """The paper's random candidate when no valid number came back (seeded: reproducible)."""
    seed = hashlib.sha256(f"fallback:{example_id}:{question}".encode()).hexdigest()
    return random.Random(seed).randrange(count)
