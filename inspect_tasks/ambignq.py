"""Inspect task ``condambig/ambignq``: closed-book AmbigNQ, every plausible answer with a
disambiguated question, scored as the official AmbigQA script (see the lm-eval task README).

    inspect eval condambig/ambignq --model openai/gpt-4o-mini [-T hub_revision=<commit>]
"""

from __future__ import annotations

import math

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import Metric, SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import TaskState, generate

from condambig_metrics.ambignq import QUESTION_METRICS, QuestionScores
from condambig_tasks.ambignq.loader import (
    AmbigNQDataConfig,
    annotations_to_json,
    load_questions,
    normalise_record,
)
from condambig_tasks.ambignq.prompts import build_prompt
from condambig_tasks.ambignq.records import AmbigNQQuestion, SingleAnswer
from condambig_tasks.ambignq.scoring import ScoredReply, score_output, summarise


def _target(record: AmbigNQQuestion) -> list[str]:
    """Every acceptable answer string (for display; scoring reads the annotations)."""
    answers: list[str] = []
    for annotation in record.annotations:
        groups = [annotation.answers] if isinstance(annotation, SingleAnswer) else [
            pair.answers for pair in annotation.pairs
        ]
        answers += [answer for group in groups for answer in group if answer not in answers]
    return answers


def record_to_sample(record: AmbigNQQuestion) -> Sample:
    return Sample(
        id=record.id, input=build_prompt(record), target=_target(record),
        metadata={
            "question": record.question, "is_multi": record.is_multi,
            "annotations": annotations_to_json(record.annotations),
        },
    )


def _nan_if_none(value: float | None) -> float:
    return math.nan if value is None else value


def _scored_reply(sample_score: SampleScore) -> ScoredReply:
    value = sample_score.score.value
    assert isinstance(value, dict)

    def number(key: str) -> float | None:
        raw = value.get(key)
        return None if raw is None or (isinstance(raw, float) and math.isnan(raw)) else float(raw)

    scores = QuestionScores(
        is_multi=bool(value["is_multi"]), f1_answer=float(value["f1_answer"]),
        **{name: number(name) for name in QUESTION_METRICS},
    )
    return ScoredReply(scores=scores, parsed=bool(value["parsed"]))


@metric
def ambignq_metrics() -> Metric:
    """f1_answer_all, f1_answer_multi, f1_bleu1..4, f1_edit_f1 (multi questions), parse_rate."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        return summarise([_scored_reply(score) for score in scores])

    return compute


@scorer(metrics=[ambignq_metrics()])
def ambignq_scorer():
    async def score(state: TaskState, target: Target) -> Score:
        metadata = state.metadata
        record = normalise_record({
            "id": state.sample_id, "question": metadata["question"],
            "annotations": metadata["annotations"],
        })
        reply = score_output(record, state.output.completion)
        values = {
            "f1_answer": reply.scores.f1_answer, "is_multi": float(reply.scores.is_multi),
            **{name: _nan_if_none(reply.scores.question_metric(name)) for name in QUESTION_METRICS},
            "parsed": float(reply.parsed),
        }
        explanation = (
            f"answer F1 {reply.scores.f1_answer:.3f}"
            + ("" if reply.parsed else " (output did not parse: no question-answer pairs)")
        )
        return Score(value=values, answer=state.output.completion, explanation=explanation)

    return score


@task
def ambignq(hub_revision: str | None = None, max_tokens: int = 512) -> Task:
    """AmbigNQ light development set (2,002 questions), closed book.

    Args:
        hub_revision: commit of ``sewon/ambig_qa`` on the hub (ignored with CONDAMBIG_DATA_DIR).
        max_tokens: generation budget (raise it for reasoning models).
    """
    records = load_questions(AmbigNQDataConfig(hub_revision=hub_revision))
    return Task(
        dataset=MemoryDataset([record_to_sample(record) for record in records], name="ambignq"),
        solver=generate(),
        scorer=ambignq_scorer(),
        config=GenerateConfig(max_tokens=max_tokens),
    )
