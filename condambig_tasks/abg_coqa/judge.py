"""The optional LLM-judge rate for clarification questions (G-Eval, shared engine).

The paper's human evaluation asks whether a generated clarification question "is reasonable
and helpful for clarifying the existing ambiguity" (BART: 56.0%). The judge sees the prompt
the model saw, the model's question and the annotator's question, and scores 0-10 (normalised
to [0, 1]). Reported: ``judge_helpfulness`` (mean score), ``judge_helpful_rate`` (share of
questions scored >= 0.5, comparable to the paper's accuracy) and ``judge_failed`` (count;
failed judgements are left out of both means, never scored 0).
"""

from __future__ import annotations

from condambig_metrics.judge import JudgeCriterion, JudgeRequest, JudgeResult
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


def judgement_values(result: JudgeResult) -> dict[str, float | None]:
    """One judgement as per-sample values: a failed one counts in ``judge_failed`` only."""
    if result.score is None:
        return {"judge_helpfulness": None, "judge_helpful_rate": None, "judge_failed": 1.0}
    return {"judge_helpfulness": result.score,
            "judge_helpful_rate": float(result.score >= HELPFUL_THRESHOLD), "judge_failed": 0.0}
