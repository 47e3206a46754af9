"""Inspect task ``condambig/conditionalqa``: answers with the document elements that condition them.

    inspect eval condambig/conditionalqa --model ... -T split=dev -T max_document_words=4000

Prompts, parsing and scores come from ``condambig_tasks.conditionalqa`` (shared with lm-eval
and ``condambig-score``); see the lm-eval task README for the truncation strategy.
"""

from __future__ import annotations

from inspect_ai import Task, task

from condambig._factory import benchmark_task
from condambig_tasks.conditionalqa.benchmark import DEFAULT_MAX_DOCUMENT_WORDS


@task
def conditionalqa(
    split: str = "dev",
    max_document_words: int | None = DEFAULT_MAX_DOCUMENT_WORDS,
    max_tokens: int | None = None,
) -> Task:
    """ConditionalQA zero-shot.

    Args:
        split: dev (285 questions) or train.
        max_document_words: word budget per document (0 or None = whole documents).
        max_tokens: generation budget for the JSON reply (default 512; raise it for
            reasoning models).
    """
    words = 0 if max_document_words is None else max_document_words
    return benchmark_task("conditionalqa", {"split": split, "max_document_words": words},
                          max_tokens=max_tokens, dataset_name=f"conditionalqa_{split}")
