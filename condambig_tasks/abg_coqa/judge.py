"""The optional LLM-judge rate for clarification questions (G-Eval, shared engine).

The paper's human evaluation asks whether a generated clarification question "is reasonable
and helpful for clarifying the existing ambiguity" (BART: 56.0%). The judge sees the prompt
the model saw, the model's question and the annotator's question, and scores 0-10 (normalised
to [0, 1]). Reported: ``judge_helpfulness`` (mean score), ``judge_helpful_rate`` (share of
questions scored >= 0.5, comparable to the paper's accuracy) and ``judge_failed`` (count;
failed judgements are left out of both means, never scored 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from condambig_metrics.judge import JudgeCriterion, JudgeRequest
from condambig_tasks.abg_coqa.prompts import build_prompt
from condambig_tasks.abg_coqa.samples import AbgCoQASample

CLARIFICATION_HELPFULNESS = JudgeCriterion(
    name="Clarification Helpfulness",
    criteria=(
        "Determine whether the actual output is a reasonable clarification question that would "
        "help resolve the ambiguity of the last question in the conversation; the expected "
        "output is the clarification question a person asked for the same ambiguity."
    ),
    evaluation_steps=(
        "Using the story, the conversation and the expected output, identify what makes the "
        "last question ambiguous (which readings it has).",
        "Check that the actual output is a question to the user whose answer would tell which "
        "reading the user intends; it may ask differently from the expected output.",
        "Heavily penalise outputs that ignore the ambiguity, ask about something else, answer "
        "the question instead of asking, or cannot be understood.",
    ),
)
HELPFUL_THRESHOLD = 0.5
JUDGE_METRICS = ("judge_helpfulness", "judge_helpful_rate", "judge_failed")


def clarification_request(sample: AbgCoQASample, question: str) -> JudgeRequest:
    """The judgement of one generated clarification question."""
    return JudgeRequest(
        criterion=CLARIFICATION_HELPFULNESS, input=build_prompt(sample), actual_output=question,
        expected_output=" / ".join(sample.turn.reference_clarification_questions),
    )


def summarise_judgements(scores: Sequence[float | None]) -> dict[str, float]:
    """Means over successful judgements (None = failed, excluded and counted)."""
    judged = [score for score in scores if score is not None]
    return {
        "judge_helpfulness": math.fsum(judged) / len(judged) if judged else math.nan,
        "judge_helpful_rate": (
            sum(score >= HELPFUL_THRESHOLD for score in judged) / len(judged) if judged else math.nan
        ),
        "judge_failed": float(len(scores) - len(judged)),
    }
