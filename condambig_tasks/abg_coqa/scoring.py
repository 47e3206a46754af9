"""Per-sample outcomes and corpus summaries for the three subtasks, shared by lm-eval, Inspect
and ``condambig-score`` so that the same replies get the same numbers everywhere."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from condambig_metrics.abg_coqa import corpus_bleu, detection_scores, leave_one_out_f1
from condambig_tasks.abg_coqa.parser import (
    DetectionReply,
    TextReply,
    parse_detection,
    parse_text,
)
from condambig_tasks.abg_coqa.samples import AbgCoQASample


@dataclass(frozen=True)
class DetectionOutcome:
    predicted_ambiguous: bool
    gold_ambiguous: bool
    answer_f1: float | None  # None on ambiguous turns (answer F1 covers the others)
    parsed: bool


@dataclass(frozen=True)
class ClarificationOutcome:
    question: str
    references: tuple[str, ...]
    parsed: bool


@dataclass(frozen=True)
class ClarifiedQAOutcome:
    f1: float
    parsed: bool


Outcome = DetectionOutcome | ClarificationOutcome | ClarifiedQAOutcome


def score_detection(sample: AbgCoQASample, reply: DetectionReply) -> DetectionOutcome:
    answer_f1 = None
    if not sample.turn.ambiguous:
        answered = reply.parsed and not reply.ambiguous
        answer_f1 = leave_one_out_f1([sample.turn.target.answer], reply.answer) if answered else 0.0
    return DetectionOutcome(reply.ambiguous, sample.turn.ambiguous, answer_f1, reply.parsed)


def score_clarification(sample: AbgCoQASample, reply: TextReply) -> ClarificationOutcome:
    return ClarificationOutcome(
        question=reply.text, references=sample.turn.reference_clarification_questions,
        parsed=reply.parsed,
    )


def score_clarified_qa(sample: AbgCoQASample, reply: TextReply) -> ClarifiedQAOutcome:
    references = sample.reply.answers if sample.reply is not None else ()
    f1 = leave_one_out_f1(references, reply.text) if reply.parsed and references else 0.0
    return ClarifiedQAOutcome(f1=f1, parsed=reply.parsed)


def score_output(sample: AbgCoQASample, output: str) -> Outcome:
    """Parse a raw model output the way the task asks for it, then score it."""
    if sample.subtask == "detection":
        return score_detection(sample, parse_detection(output))
    if sample.subtask == "clarification":
        return score_clarification(sample, parse_text(output))
    return score_clarified_qa(sample, parse_text(output))


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else float("nan")


def _parse_rate(outcomes: Sequence[Outcome]) -> float:
    return _mean([float(outcome.parsed) for outcome in outcomes])


def summarise_detection(outcomes: Sequence[DetectionOutcome]) -> dict[str, float]:
    """precision / recall / f1 of "ambiguous", answer F1 on non-ambiguous turns, parse rate."""
    scores = detection_scores(
        [o.predicted_ambiguous for o in outcomes], [o.gold_ambiguous for o in outcomes]
    )
    return {
        "precision": scores.precision, "recall": scores.recall, "f1": scores.f1,
        "answer_f1": _mean([o.answer_f1 for o in outcomes if o.answer_f1 is not None]),
        "parse_rate": _parse_rate(outcomes),
        "n_turns": len(outcomes), "n_gold_ambiguous": scores.gold_ambiguous,
        "n_predicted_ambiguous": scores.predicted_ambiguous,
    }


def summarise_clarification(outcomes: Sequence[ClarificationOutcome]) -> dict[str, float]:
    """Corpus BLEU-1..4 (0-100) against one or two reference questions, parse rate."""
    result: dict[str, float] = corpus_bleu(
        [o.question for o in outcomes], [list(o.references) for o in outcomes]
    )
    result["parse_rate"] = _parse_rate(outcomes)
    result["n_questions"] = len(outcomes)
    return result


def summarise_clarified_qa(outcomes: Sequence[ClarifiedQAOutcome]) -> dict[str, float]:
    """CoQA leave-one-out F1 averaged over (turn, reply) samples, parse rate."""
    return {
        "f1": _mean([o.f1 for o in outcomes]), "parse_rate": _parse_rate(outcomes),
        "n_replies": len(outcomes),
    }


def summarise(subtask: str, outcomes: Sequence[Outcome]) -> dict[str, float]:
    if subtask == "detection":
        return summarise_detection(outcomes)  # type: ignore[arg-type]
    if subtask == "clarification":
        return summarise_clarification(outcomes)  # type: ignore[arg-type]
    return summarise_clarified_qa(outcomes)  # type: ignore[arg-type]
