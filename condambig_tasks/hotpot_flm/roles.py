"""Inspect model roles as agents: ``answerer`` (the generative answering agent) and
``downstream``, as in the paper's GPT-4o answering-agent ablation (Toles et al.).

Duck-typed, so this package needs no Inspect import: a bound role is anything with
``async generate(prompt)`` returning an object with ``.completion`` (an Inspect ``Model``);
``str(model)`` names it and ``model.config`` is its generation config. Role models
generate with their own config; the downstream cache key holds that config.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from condambig_tasks.hotpot_flm.agents import (
    AgentChoice,
    AgentQuery,
    generative_choice,
    generative_prompt,
)
from condambig_tasks.hotpot_flm.inference import first_line
from condambig_tasks.parsing import strip_reasoning

ANSWERER_ROLE = "answerer"
DOWNSTREAM_ROLE = "downstream"

def bound_model(roles: Mapping[str, Any], name: str) -> Any:
    """The model bound to role ``name`` (the first, when a list is bound), or None."""
    bound = roles.get(name)
    if isinstance(bound, list):
        return bound[0] if bound else None
    return bound


class RoleAnsweringAgent:
    """The generative answering agent: enumerated candidates in, a number back (random
    candidate when the reply names no valid number, as in the paper)."""

    def __init__(self, model: Any):
        self.model = model
        self.name = f"role {ANSWERER_ROLE}: {model}"

    async def choose(self, queries: Sequence[AgentQuery]) -> list[AgentChoice]:
        choices = []
        for query in queries:
            reply = await self.model.generate(generative_prompt(query))
            choices.append(generative_choice(query, reply.completion))
        return choices


class RoleDownstream:
    """The downstream model as a role: the first line of its reply, reasoning dropped."""

    def __init__(self, model: Any):
        self.model = model
        self.name = f"role {DOWNSTREAM_ROLE}: {model}"
        self.identity = f"inspect:{model}"
        self.decoding = json.dumps(model.config.model_dump(exclude_none=True), sort_keys=True)

    async def answer(self, prompts: Sequence[str]) -> list[str]:
        answers = []
        for prompt in prompts:
            reply = await self.model.generate(prompt)
            answers.append(first_line(strip_reasoning(reply.completion)))
        return answers
