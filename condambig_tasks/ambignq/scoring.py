"""Scoring one AmbigNQ output and summarising a run, shared by lm-eval, Inspect and
``condambig-score`` so that the same replies get the same numbers everywhere."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from condambig_metrics.ambignq import QuestionScores, aggregate, score_question
from condambig_tasks.ambignq.parser import parse_reply
from condambig_tasks.ambignq.records import AmbigNQQuestion


@dataclass(frozen=True)
class ScoredReply:
    scores: QuestionScores
    parsed: bool


def score_output(record: AmbigNQQuestion, output: str) -> ScoredReply:
    """Parse a raw output (the task asks for question-answer pairs) and score it."""
    reply = parse_reply(output)
    return ScoredReply(score_question(record.question, record.annotations, reply.pairs), reply.parsed)


def summarise(replies: Sequence[ScoredReply]) -> dict[str, float]:
    """The official corpus numbers plus the share of outputs that parsed."""
    result = aggregate([reply.scores for reply in replies])
    result["parse_rate"] = (
        math.fsum(float(reply.parsed) for reply in replies) / len(replies) if replies else math.nan
    )
    return result
