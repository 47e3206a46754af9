"""CondAmbigQA in Inspect: ``inspect eval condambig/condambigqa -T setting=main``.

The judge is Inspect's ``grader`` model role (``--model-role grader=openai/gpt-4o-mini``);
without one (or with ``-T judge=false``) only the judge-free metrics are reported.
"""

from __future__ import annotations

from inspect_ai import Task, task

from condambig._factory import benchmark_task


@task
def condambigqa(
    setting: str = "main",
    release: str = "2k",
    max_conditions: int = 5,
    judge: bool = True,
    matching: str = "judge",
    judge_weighting: str = "condambig",
    max_tokens: int | None = None,
    hub_revision: str | None = None,
    judge_max_failed: int | None = None,
) -> Task:
    """CondAmbigQA (Li et al.): conditions, answers and citations for ambiguous questions.

    Args:
        setting: main | gold_conditions | no_conditions | closed_book | closed_book_conditions.
        release: "2k" (2,000 questions) or "200" (the original release); a local
            CONDAMBIG_DATA_DIR/condambigqa/ folder takes precedence.
        max_conditions: the N of "up to N conditions" in the prompt (paper: 5).
        judge: score conditions/answers with the `grader` role when one is set.
        matching: "judge" (the paper's weighted matching) or "exact" (citations, then
            answer token F1).
        judge_weighting: "condambig" (default: expectation over the 0-10 alternatives at
            the score token) or "deepeval" (DeepEval's G-Eval rule, the paper's judge).
        max_tokens: generation budget (default: per setting, 512-1536).
        hub_revision: a Hugging Face commit sha to pin the dataset.
        judge_max_failed: how many judgements may finally fail before the judged metrics
            and the headline are withheld (NaN, the reason in the log's
            ``null_reasons``); default ``CONDAMBIG_JUDGE_MAX_FAILED``, else 0.
    """
    return benchmark_task(
        "condambigqa",
        {"setting": setting, "release": release, "max_conditions": max_conditions,
         "matching": matching, "judge_weighting": judge_weighting,
         "hub_revision": hub_revision},
        judge=judge, max_tokens=max_tokens, dataset_name=f"condambigqa_{setting}",
        judge_max_failed=judge_max_failed,
    )
