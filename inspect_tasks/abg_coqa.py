"""Inspect tasks for Abg-CoQA: ``condambig/abg_coqa_detection``, ``condambig/abg_coqa_clarification``,
``condambig/abg_coqa_clarified_qa`` (and ``condambig/abg_coqa -T subtask=...``).

    inspect eval condambig/abg_coqa_detection --model openai/gpt-4o-mini -T split=test
    inspect eval-set condambig/abg_coqa_detection condambig/abg_coqa_clarification \\
        condambig/abg_coqa_clarified_qa --log-dir logs/abg_coqa --model ...

Metrics are those of the lm-eval tasks (see their README). With a ``grader`` model role
(``--model-role grader=openai/gpt-4o-mini``) the clarification task adds the judge's
``judge_helpfulness``, ``judge_helpful_rate`` and ``judge_failed``.
"""

from __future__ import annotations

from inspect_ai import Task

from condambig._factory import benchmark_task
from condambig.task_options import task
from condambig_tasks.abg_coqa.benchmark import MAX_TOKENS, AbgCoQAOptions
from condambig_tasks.abg_coqa.loader import AbgSplit
from condambig_tasks.abg_coqa.records import Subtask

_DEFAULT = AbgCoQAOptions()


def _task(subtask: Subtask, split: AbgSplit, max_tokens: int, judge: bool = True,
          judge_max_failed: int | None = None) -> Task:
    return benchmark_task("abg_coqa", {"subtask": subtask, "split": split}, judge=judge,
                          max_tokens=max_tokens, dataset_name=f"abg_coqa_{subtask}",
                          judge_max_failed=judge_max_failed)


@task
def abg_coqa_detection(split: AbgSplit = _DEFAULT.split, max_tokens: int = MAX_TOKENS) -> Task:
    """Every turn: answer it, or reply AMBIGUOUS (ambiguity P/R/F1, answer F1)."""
    return _task("detection", split, max_tokens)


@task
def abg_coqa_clarification(split: AbgSplit = _DEFAULT.split, max_tokens: int = MAX_TOKENS,
                           judge: bool = True, judge_max_failed: int | None = None) -> Task:
    """Ambiguous turns: ask one clarification question (corpus BLEU-1..4; with a ``grader``
    role and ``judge`` on, the judge's helpfulness rate; ``judge_max_failed`` failed
    judgements at most, default ``CONDAMBIG_JUDGE_MAX_FAILED`` else 0, before the judged
    metrics are withheld)."""
    return _task("clarification", split, max_tokens, judge, judge_max_failed)


@task
def abg_coqa_clarified_qa(split: AbgSplit = _DEFAULT.split, max_tokens: int = MAX_TOKENS) -> Task:
    """One sample per (ambiguous turn, clarification reply): answer as clarified (CoQA F1)."""
    return _task("clarified_qa", split, max_tokens)


@task
def abg_coqa(subtask: Subtask = _DEFAULT.subtask, split: AbgSplit = _DEFAULT.split,
             max_tokens: int = MAX_TOKENS, judge: bool = True,
             judge_max_failed: int | None = None) -> Task:
    """One Abg-CoQA subtask by name."""
    return _task(subtask, split, max_tokens, judge, judge_max_failed)
