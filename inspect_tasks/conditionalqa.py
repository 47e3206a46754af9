"""Inspect task ``condambig/conditionalqa``: answers with the document elements that condition them.

``inspect eval condambig/conditionalqa --model ... -T split=dev -T max_document_words=4000``

Prompts, parsing and scores come from ``condambig_tasks.conditionalqa`` (shared with lm-eval
and ``condambig-score``). Each breakdown is a custom metric averaging over its own questions.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState, generate

from condambig_tasks.conditionalqa.scoring import score_item_output
from condambig_tasks.conditionalqa.task_items import (
    DEFAULT_MAX_DOCUMENT_WORDS,
    TaskConfig,
    TaskItem,
    load_task_items,
)

SCORE_KEYS = ("em", "em_with_conditions", "f1", "f1_with_conditions")
BREAKDOWNS = ("yesno", "extractive", "conditional")


def _value(sample_score: SampleScore, key: str) -> float:
    value = sample_score.score.value
    return float(value[key]) if isinstance(value, dict) and value.get(key) is not None else 0.0


def _breakdown_means(scores: list[SampleScore], breakdown: str | None) -> dict[str, float]:
    """Mean of each score over the breakdown's questions (all when None); NaN when empty."""
    members = [s for s in scores if breakdown is None or _value(s, breakdown) > 0]
    prefix = "" if breakdown is None else f"{breakdown}_"
    return {
        f"{prefix}{key}": (sum(_value(s, key) for s in members) / len(members)) if members else math.nan
        for key in SCORE_KEYS
    }


def _breakdown_metric(breakdown: str | None) -> Callable[[], Metric]:
    def factory() -> Metric:
        def compute(scores: list[SampleScore]) -> dict[str, float]:
            return _breakdown_means(scores, breakdown)

        return compute

    return metric(name=f"conditionalqa_{breakdown or 'total'}")(factory)


conditionalqa_total = _breakdown_metric(None)
conditionalqa_yesno = _breakdown_metric("yesno")
conditionalqa_extractive = _breakdown_metric("extractive")
conditionalqa_conditional = _breakdown_metric("conditional")


@metric
def conditionalqa_parsing() -> Metric:
    """Share of parsed replies; counts of dropped citations and of truncated documents."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        count = len(scores)
        return {
            "parse_rate": sum(_value(s, "parsed") for s in scores) / count if count else math.nan,
            "out_of_range_citations": sum(_value(s, "out_of_range_citations") for s in scores),
            "truncated_documents": sum(_value(s, "truncated_document") for s in scores),
        }

    return compute


@scorer(
    metrics=[
        conditionalqa_total(), conditionalqa_yesno(), conditionalqa_extractive(),
        conditionalqa_conditional(), conditionalqa_parsing(),
    ]
)
def conditionalqa_scorer() -> Scorer:
    """The official metrics of one reply, with breakdown membership for the metrics."""

    async def score(state: TaskState, target: Target) -> Score:
        item = TaskItem.from_record(state.metadata)
        scored = score_item_output(state.output.completion, item)
        value: dict[str, float | int] = dict(zip(SCORE_KEYS, scored.scores.values(), strict=True))
        value.update({name: int(item.categories.member_of(name)) for name in BREAKDOWNS})
        value["parsed"] = int(scored.parsed.parsed)
        value["out_of_range_citations"] = scored.parsed.out_of_range_citations
        value["truncated_document"] = int(item.truncated)
        explanation = (
            f"parse failure: {scored.parsed.failure}" if not scored.parsed.parsed
            else f"parsed {len(scored.parsed.answers)} answer(s); "
            f"{scored.parsed.out_of_range_citations} citation(s) out of range"
        )
        return Score(
            value=value,
            answer=json.dumps(scored.parsed.official_answers(), ensure_ascii=False),
            explanation=explanation,
        )

    return score


def build_sample(item: TaskItem) -> Sample:
    record = item.to_record()
    record.pop("prompt")  # already the sample input
    return Sample(
        id=item.id,
        input=item.prompt,
        target=json.dumps([[text, list(conds)] for text, conds in item.reference_answers], ensure_ascii=False),
        metadata=record,
    )


@task
def conditionalqa(
    split: str = "dev",
    max_document_words: int = DEFAULT_MAX_DOCUMENT_WORDS,
    max_tokens: int = 512,
) -> Task:
    """ConditionalQA zero-shot.

    Args:
        split: dev (285 questions) or train.
        max_document_words: word budget per document (0 = whole documents); see the README
            for the truncation strategy.
        max_tokens: generation budget for the JSON reply (raise it for reasoning models).
    """
    config = TaskConfig.from_options({"split": split, "max_document_words": max_document_words})
    samples = [build_sample(item) for item in load_task_items(config)]
    return Task(
        dataset=MemoryDataset(samples, name=f"conditionalqa_{config.split}"),
        solver=[generate()],
        scorer=conditionalqa_scorer(),
        config=GenerateConfig(max_tokens=max_tokens),
    )
