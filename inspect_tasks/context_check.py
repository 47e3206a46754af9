"""Prompts longer than an in-process Hugging Face model's context end the run before any
generation, in one line.

Inspect's ``hf/`` provider hands the model the whole prompt. A model with learned position
embeddings (GPT-2 and its kin) then fails each such sample with an ``IndexError``, an
error that repeats on every try: ``inspect eval-set`` retried the task up to 10 times, a
traceback each; a model with rotary positions generates past its trained context without
a word. Inspect binds the model before it calls the ``@task`` function, so the task
checks its prompts (through the provider's own chat template and tokenizer) against the
model's context when it is built: a failure there ends ``inspect eval`` and ``inspect
eval-set`` at once (tasks are resolved outside the eval set's retries), and nothing is
generated. API models are not checked: their servers say so themselves (OpenAI's
``context_length_exceeded`` becomes an output Inspect marks ``model_length``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from condambig_tasks.errors import CondambigError

_CONTEXT_FIELDS = ("max_position_embeddings", "n_positions", "n_ctx")


class PromptTooLongError(CondambigError):
    """Prompts that do not fit the model's context (one-line message)."""


def model_context(model: Any) -> int | None:
    """The positions a transformers model was built for (None: its config names none)."""
    config = getattr(model, "config", None)
    config = getattr(config, "get_text_config", lambda: config)() or config
    for field in _CONTEXT_FIELDS:
        value = getattr(config, field, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def check_prompts_fit(task: str, prompts: Sequence[tuple[Any, str]], hint: str = "") -> None:
    """Raise :class:`PromptTooLongError` when the eval's model runs in this process through
    Inspect's ``hf/`` provider and some of ``prompts`` (``(sample id, text)``) are not
    shorter than its context; ``hint``: the task's own way to shorten them."""
    from inspect_ai.model import ChatMessageUser, get_model

    try:
        model = get_model()  # the eval's model (Inspect binds it before building the task)
    except Exception:  # noqa: BLE001 - a task built outside an eval, with no model named
        return
    api = model.api
    if type(api).__name__ != "HuggingFaceAPI":  # a model that does not run in this process
        return
    context = model_context(getattr(api, "model", None))
    if context is None:
        return
    tokenizer = api.tokenizer
    arguments = dict(getattr(api, "tokenizer_call_args", None) or {})
    too_long = []
    for sample_id, prompt in prompts:
        chat = api.hf_chat([ChatMessageUser(content=prompt)], [])
        length = len(tokenizer(chat, **arguments)["input_ids"])
        if length >= context:  # the first generated token needs one position more
            too_long.append((length, sample_id))
    if too_long:
        length, sample_id = max(too_long, key=lambda pair: pair[0])
        raise PromptTooLongError(
            f"{task}: {len(too_long)} of {len(prompts)} prompts do not fit the context of "
            f"{model} ({context} tokens; the longest, sample {sample_id}, is {length} "
            f"tokens), so nothing was generated: use a model with a longer context{hint}")
