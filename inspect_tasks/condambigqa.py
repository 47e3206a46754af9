"""CondAmbigQA in Inspect: ``inspect eval condambig/condambigqa -T setting=main``, or a
setting's own task (the lm-eval task's name), as an eval set can hold several:

    inspect eval-set condambig/condambigqa condambig/condambigqa_gold_conditions \\
        condambig/condambigqa_no_conditions --log-dir logs/condambigqa --model ...

The judge is Inspect's ``grader`` model role (``--model-role grader=openai/gpt-4o-mini``);
without one (or with ``-T judge=false``) only the judge-free metrics are reported.
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Task

from condambig._factory import benchmark_task
from condambig.task_options import task, variant_task
from condambig_metrics.judge import JudgeWeighting
from condambig_tasks.condambigqa.benchmark import CondAmbigQAOptions, Matching
from condambig_tasks.condambigqa.loader import Release
from condambig_tasks.condambigqa.records import Setting
from condambig_tasks.options import option_values

_DEFAULT = CondAmbigQAOptions()


@task
def condambigqa(
    setting: Setting = _DEFAULT.setting,
    release: Release = _DEFAULT.release,
    max_conditions: int = _DEFAULT.max_conditions,
    judge: bool = True,
    matching: Matching = _DEFAULT.matching,
    judge_weighting: JudgeWeighting = _DEFAULT.judge_weighting,
    max_tokens: int | None = None,
    hub_revision: str | None = _DEFAULT.hub_revision,
    judge_max_failed: int | None = None,
) -> Task:
    """CondAmbigQA (Li et al.): conditions, answers and citations for ambiguous questions.

    Args:
        setting: the paper's experimental setting.
        release: 2,000 questions or the original 200; a local
            CONDAMBIG_DATA_DIR/condambigqa/ folder takes precedence.
        max_conditions: the N of "up to N conditions" in the prompt (1..10; paper: 5).
        judge: score conditions/answers with the `grader` role when one is set.
        matching: the paper's weighted judge matching, or citations then answer token F1.
        judge_weighting: the expectation over the 0-10 alternatives at the score token, or
            DeepEval's G-Eval rule (the paper's judge).
        max_tokens: generation budget (default: per setting, 512-1536).
        hub_revision: a Hugging Face commit sha to pin the dataset.
        judge_max_failed: how many judgements may finally fail before the judged metrics
            and the headline are withheld (NaN, the reason in the log's
            ``null_reasons``); default ``CONDAMBIG_JUDGE_MAX_FAILED``, else 0.
    """
    options = option_values(CondAmbigQAOptions, locals())
    return benchmark_task(
        "condambigqa", options, judge=judge, max_tokens=max_tokens,
        dataset_name=f"condambigqa_{getattr(setting, 'value', setting)}",
        judge_max_failed=judge_max_failed,
    )


# one task per variant declared in condambig_tasks.condambigqa.benchmark (its docstring is
# the declared description): its -T options are condambigqa's but those the variant fixes


@task
@variant_task(condambigqa)
def condambigqa_gold_conditions(**options: Any) -> Task:
    ...


@task
@variant_task(condambigqa)
def condambigqa_no_conditions(**options: Any) -> Task:
    ...


@task
@variant_task(condambigqa)
def condambigqa_closed_book(**options: Any) -> Task:
    ...


@task
@variant_task(condambigqa)
def condambigqa_closed_book_conditions(**options: Any) -> Task:
    ...


@task
@variant_task(condambigqa)
def condambigqa_paper(**options: Any) -> Task:
    ...
