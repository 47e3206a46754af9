"""Inspect task ``condambig/conditionalqa``: answers with the document elements that condition them.

    inspect eval condambig/conditionalqa --model ... -T split=dev -T max_document_words=4000

Prompts, parsing and scores come from ``condambig_tasks.conditionalqa`` (shared with lm-eval
and ``condambig-score``); see the lm-eval task README for the truncation strategy.
"""

from __future__ import annotations

from inspect_ai import Task

from condambig._factory import benchmark_task
from condambig.task_options import task
from condambig_tasks.conditionalqa.benchmark import ConditionalQAOptions, TaskSplit

_DEFAULT = ConditionalQAOptions()


@task
def conditionalqa(
    split: TaskSplit = _DEFAULT.split,
    max_document_words: int | None = _DEFAULT.max_document_words,
    max_tokens: int | None = None,
) -> Task:
    """ConditionalQA zero-shot.

    Args:
        split: the question split (dev: 285 questions).
        max_document_words: word budget per document (0 or None = whole documents).
        max_tokens: generation budget for the JSON reply (default 512; raise it for
            reasoning models).
    """
    # None means whole documents; benchmark_task drops None values, so it travels as 0
    words = 0 if max_document_words is None else max_document_words
    return benchmark_task("conditionalqa", {"split": split, "max_document_words": words},
                          max_tokens=max_tokens, dataset_name=f"conditionalqa_{split}",
                          length_hint=" or lower -T max_document_words")
