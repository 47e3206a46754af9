"""Inspect tasks for Abg-CoQA: ``condambig/abg_coqa_detection``, ``condambig/abg_coqa_clarification``,
``condambig/abg_coqa_clarified_qa`` (and ``condambig/abg_coqa -T subtask=...``).

    inspect eval condambig/abg_coqa_detection --model openai/gpt-4o-mini -T split=test
    inspect eval-set condambig/abg_coqa_detection condambig/abg_coqa_clarification \\
        condambig/abg_coqa_clarified_qa --log-dir logs/abg_coqa --model ...

Metrics are those of the lm-eval tasks (see their README): ambiguity P/R/F1 and answer F1,
corpus BLEU-1..4, CoQA leave-one-out F1; each with ``parse_rate``. With a ``grader`` model role
(``--model-role grader=openai/gpt-4o-mini``) the clarification task adds the judge's
``judge_helpfulness``, ``judge_helpful_rate`` and ``judge_failed``.
"""

from __future__ import annotations

import math

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, model_roles
from inspect_ai.scorer import Metric, SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import TaskState, generate

from condambig.judge_backend import GRADER_ROLE, grader_judge_engine
from condambig_tasks.abg_coqa.judge import clarification_request, summarise_judgements
from condambig_tasks.abg_coqa.loader import (
    AbgCoQADataConfig,
    load_turns,
    normalise_record,
    to_upstream,
)
from condambig_tasks.abg_coqa.prompts import AMBIGUOUS_LABEL, build_prompt
from condambig_tasks.abg_coqa.samples import AbgCoQASample, build_samples, check_subtask
from condambig_tasks.abg_coqa.scoring import (
    ClarificationOutcome,
    ClarifiedQAOutcome,
    DetectionOutcome,
    Outcome,
    score_output,
    summarise,
)

MAX_TOKENS = 128


def _target(sample: AbgCoQASample) -> list[str]:
    turn = sample.turn
    if sample.subtask == "detection":
        return [AMBIGUOUS_LABEL if turn.ambiguous else turn.target.answer]
    if sample.subtask == "clarification":
        return list(turn.reference_clarification_questions)
    return list(sample.reply.answers) if sample.reply else []


def to_inspect_sample(sample: AbgCoQASample) -> Sample:
    return Sample(
        id=sample.id, input=build_prompt(sample), target=_target(sample),
        metadata={
            "subtask": sample.subtask, "turn": to_upstream(sample.turn),
            "reply_index": sample.reply_index, "source": sample.turn.source,
        },
    )


def from_metadata(sample_id: str, metadata: dict) -> AbgCoQASample:
    return AbgCoQASample(
        id=sample_id, subtask=metadata["subtask"], turn=normalise_record(metadata["turn"]),
        reply_index=metadata.get("reply_index"),
    )


def _values(outcome: Outcome) -> dict[str, float]:
    """Numeric per-sample values (Inspect reduces dict scores key by key)."""
    values = {"parsed": float(outcome.parsed)}
    if isinstance(outcome, DetectionOutcome):
        values.update(
            predicted_ambiguous=float(outcome.predicted_ambiguous),
            gold_ambiguous=float(outcome.gold_ambiguous),
            answer_f1=math.nan if outcome.answer_f1 is None else outcome.answer_f1,
        )
    elif isinstance(outcome, ClarifiedQAOutcome):
        values["f1"] = outcome.f1
    return values


def _outcome(sample_score: SampleScore) -> Outcome:
    value = sample_score.score.value
    assert isinstance(value, dict)
    parsed = bool(value["parsed"])
    metadata = sample_score.score.metadata or {}
    if "predicted_ambiguous" in value:
        answer_f1 = value.get("answer_f1")
        answer_f1 = None if answer_f1 is None or math.isnan(float(answer_f1)) else float(answer_f1)
        return DetectionOutcome(
            predicted_ambiguous=float(value["predicted_ambiguous"]) >= 0.5,
            gold_ambiguous=float(value["gold_ambiguous"]) >= 0.5, answer_f1=answer_f1, parsed=parsed,
        )
    if "f1" in value:
        return ClarifiedQAOutcome(f1=float(value["f1"]), parsed=parsed)
    return ClarificationOutcome(
        question=str(metadata.get("question", "")),
        references=tuple(metadata.get("references", ())), parsed=parsed,
    )


def _judge_scores(scores: list[SampleScore]) -> list[float | None] | None:
    """Per-sample judge scores (None = failed), or None when the run had no judge."""
    values = [score.score.value for score in scores if isinstance(score.score.value, dict)]
    if not any("judge_failed" in value for value in values):
        return None
    return [None if value.get("judge_failed") else float(value["judge_score"]) for value in values]


def _subtask_metric(subtask: str):
    def compute(scores: list[SampleScore]) -> dict[str, float]:
        summary = summarise(subtask, [_outcome(score) for score in scores])
        result = {key: float(value) for key, value in summary.items() if not key.startswith("n_")}
        judged = _judge_scores(scores) if subtask == "clarification" else None
        if judged is not None:
            result.update(summarise_judgements(judged))
        return result

    return compute


@metric
def abg_coqa_detection_metrics() -> Metric:
    """precision, recall, f1 of the ambiguous class; answer_f1 on non-ambiguous turns; parse_rate."""
    return _subtask_metric("detection")


@metric
def abg_coqa_clarification_metrics() -> Metric:
    """Corpus bleu1..bleu4 (0-100) against the reference clarification question(s); parse_rate."""
    return _subtask_metric("clarification")


@metric
def abg_coqa_clarified_qa_metrics() -> Metric:
    """CoQA leave-one-out f1 over the reply's three answers; parse_rate."""
    return _subtask_metric("clarified_qa")


_METRICS = {
    "detection": abg_coqa_detection_metrics,
    "clarification": abg_coqa_clarification_metrics,
    "clarified_qa": abg_coqa_clarified_qa_metrics,
}


async def _score(state: TaskState, judged: bool = False) -> Score:
    sample = from_metadata(str(state.sample_id), state.metadata)
    completion = state.output.completion
    outcome = score_output(sample, completion)
    values = _values(outcome)
    metadata = None
    explanation = "parsed" if outcome.parsed else "empty reply: counted as a parse failure"
    if isinstance(outcome, ClarificationOutcome):
        metadata = {"question": outcome.question, "references": list(outcome.references)}
        engine = grader_judge_engine() if judged else None
        if engine is not None:
            [result] = await engine.judge_many([clarification_request(sample, outcome.question)])
            values["judge_failed"] = float(result.failed)
            if result.score is not None:
                values["judge_score"] = result.score
            explanation += f"; judge: {result.reason or result.error or ''}"
    return Score(value=values, answer=completion, explanation=explanation, metadata=metadata)


@scorer(metrics=[abg_coqa_detection_metrics()])
def abg_coqa_detection_scorer():
    async def score(state: TaskState, target: Target) -> Score:
        return await _score(state)

    return score


@scorer(metrics=[abg_coqa_clarification_metrics()])
def abg_coqa_clarification_scorer(judged: bool = False):
    """BLEU inputs per question; with ``judged``, the grader's helpfulness judgement too."""

    async def score(state: TaskState, target: Target) -> Score:
        return await _score(state, judged)

    return score


@scorer(metrics=[abg_coqa_clarified_qa_metrics()])
def abg_coqa_clarified_qa_scorer():
    async def score(state: TaskState, target: Target) -> Score:
        return await _score(state)

    return score


def _task(subtask: str, split: str, max_tokens: int, judge: bool = True) -> Task:
    samples = build_samples(load_turns(AbgCoQADataConfig(split=split)), check_subtask(subtask))
    if subtask == "detection":
        task_scorer = abg_coqa_detection_scorer()
    elif subtask == "clarification":
        task_scorer = abg_coqa_clarification_scorer(bool(judge) and GRADER_ROLE in model_roles())
    else:
        task_scorer = abg_coqa_clarified_qa_scorer()
    return Task(
        dataset=MemoryDataset([to_inspect_sample(s) for s in samples], name=f"abg_coqa_{subtask}"),
        solver=generate(),
        scorer=task_scorer,
        # no temperature here: Inspect's hf provider rejects 0.0; set --temperature instead
        config=GenerateConfig(max_tokens=max_tokens),
    )


@task
def abg_coqa_detection(split: str = "test", max_tokens: int = MAX_TOKENS) -> Task:
    """Every turn: answer it, or reply AMBIGUOUS (ambiguity P/R/F1, answer F1)."""
    return _task("detection", split, max_tokens)


@task
def abg_coqa_clarification(split: str = "test", max_tokens: int = MAX_TOKENS, judge: bool = True) -> Task:
    """Ambiguous turns: ask one clarification question (corpus BLEU-1..4; with a ``grader``
    role and ``judge`` on, the judge's helpfulness rate)."""
    return _task("clarification", split, max_tokens, judge)


@task
def abg_coqa_clarified_qa(split: str = "test", max_tokens: int = MAX_TOKENS) -> Task:
    """One sample per (ambiguous turn, clarification reply): answer as clarified (CoQA F1)."""
    return _task("clarified_qa", split, max_tokens)


@task
def abg_coqa(
    subtask: str = "detection", split: str = "test", max_tokens: int = MAX_TOKENS, judge: bool = True
) -> Task:
    """One Abg-CoQA subtask by name: detection, clarification or clarified_qa."""
    return _task(subtask, split, max_tokens, judge)
