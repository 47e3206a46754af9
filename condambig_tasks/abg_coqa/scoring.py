"""Scoring one Abg-CoQA reply per subtask, and the corpus values computed from many.

Per-sample numbers (``answer_f1``, clarified-QA ``f1``, ``parse_rate``) go in
``ScoredSample.values``; what a corpus metric needs (the ambiguity labels for P/R/F1, the
question and its references for BLEU) goes in ``ScoredSample.details``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from condambig_metrics.abg_coqa import corpus_bleu, detection_scores, leave_one_out_f1
from condambig_tasks.abg_coqa.parser import (
    DetectionReply,
    TextReply,
    parse_detection,
    parse_text,
)
from condambig_tasks.abg_coqa.samples import AbgCoQASample
from condambig_tasks.benchmark import ScoredSample

Reply = DetectionReply | TextReply
DETECTION_METRICS = ("precision", "recall", "f1")
BLEU_METRICS = ("bleu1", "bleu2", "bleu3", "bleu4")


def _failure_note(parsed: bool) -> str:
    return "" if parsed else "; empty reply: counted as a parse failure"


def score_detection(sample: AbgCoQASample, reply: DetectionReply) -> ScoredSample:
    """The ambiguity label, and answer F1 on non-ambiguous turns (None on ambiguous ones)."""
    answer_f1 = None
    if not sample.turn.ambiguous:
        answered = reply.parsed and not reply.ambiguous
        answer_f1 = leave_one_out_f1([sample.turn.target.answer], reply.answer) if answered else 0.0
    label = "ambiguous" if reply.ambiguous else "answered"
    return ScoredSample(
        id=sample.id, values={"answer_f1": answer_f1, "parse_rate": float(reply.parsed)},
        details={"predicted_ambiguous": reply.ambiguous, "gold_ambiguous": sample.turn.ambiguous,
                 "answer": reply.answer},
        explanation=f"{label} (gold: {'ambiguous' if sample.turn.ambiguous else 'answerable'})"
                    + _failure_note(reply.parsed),
    )


def score_clarification(sample: AbgCoQASample, reply: TextReply) -> ScoredSample:
    """The question and its reference questions, for corpus BLEU."""
    return ScoredSample(
        id=sample.id, values={"parse_rate": float(reply.parsed)},
        details={"question": reply.text,
                 "references": list(sample.turn.reference_clarification_questions)},
        explanation=f"question: {reply.text}" + _failure_note(reply.parsed),
    )


def score_clarified_qa(sample: AbgCoQASample, reply: TextReply) -> ScoredSample:
    """CoQA leave-one-out F1 against the reply's answers."""
    references = sample.reply.answers if sample.reply is not None else ()
    f1 = leave_one_out_f1(references, reply.text) if reply.parsed and references else 0.0
    return ScoredSample(
        id=sample.id, values={"f1": f1, "parse_rate": float(reply.parsed)},
        details={"answer": reply.text}, explanation=f"F1 {f1:.3f}" + _failure_note(reply.parsed),
    )


def score_reply(sample: AbgCoQASample, reply: str | Reply) -> ScoredSample:
    """A raw model output (parsed the way the subtask asks for it) or a parsed reply."""
    raw = isinstance(reply, str)
    if sample.subtask == "detection":
        if not isinstance(reply, DetectionReply):
            reply = parse_detection(reply if isinstance(reply, str) else "")
        scored = score_detection(sample, reply)
    else:
        if not isinstance(reply, TextReply):
            reply = parse_text(reply if isinstance(reply, str) else "")
        scored = (score_clarification(sample, reply) if sample.subtask == "clarification"
                  else score_clarified_qa(sample, reply))
    truncated = float(reply.truncated) if raw else None  # structured predictions: no text
    return replace(scored, values={**scored.values, "outputs_truncated": truncated})


def detection_corpus(samples: Sequence[ScoredSample]) -> dict[str, float]:
    """Precision / recall / F1 of the "ambiguous" class over every turn."""
    scores = detection_scores([bool(s.details["predicted_ambiguous"]) for s in samples],
                              [bool(s.details["gold_ambiguous"]) for s in samples])
    return {"precision": scores.precision, "recall": scores.recall, "f1": scores.f1}


def clarification_corpus(samples: Sequence[ScoredSample]) -> dict[str, float]:
    """Corpus BLEU-1..4 (0-100) against one or two reference questions per turn."""
    return corpus_bleu([str(s.details["question"]) for s in samples],
                       [list(s.details["references"]) for s in samples])
