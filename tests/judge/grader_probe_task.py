"""A minimal Inspect task whose scorer judges through the grader role (used by the e2e test).

Not a benchmark: it checks that ``--model-role grader=...`` reaches the judge engine, that
the engine gets logprobs from the grader, and that a missing grader is reported.
"""

from __future__ import annotations

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import TaskState, generate

from condambig.judge_backend import grader_judge_engine
from condambig_metrics.judge import JudgeCriterion, JudgeRequest

CORRECTNESS = JudgeCriterion(
    name="Answer Correctness",
    criteria="Whether the actual answer is factually correct based on the expected answer.",
    evaluation_steps=("Check whether the actual answer contradicts the expected answer.",),
)


@scorer(metrics=[mean()])
def judged_correctness():
    async def score(state: TaskState, target: Target) -> Score:
        engine = grader_judge_engine()
        if engine is None:
            return Score(value=0.0, explanation="no grader role",
                         metadata={"grader": None})
        [result] = await engine.judge_many([JudgeRequest(
            CORRECTNESS, input=state.input_text, actual_output=state.output.completion,
            expected_output=target.text)])
        return Score(
            value=result.score if result.score is not None else 0.0,
            answer=state.output.completion,
            explanation=result.reason,
            metadata={"grader": engine.model_name, "raw_score": result.raw_score,
                      "weighted": result.weighted, "failed": result.failed,
                      "cached": result.cached},
        )

    return score


@task
def grader_probe() -> Task:
    return Task(
        dataset=[Sample(id="france", input="Capital of France?", target="Paris"),
                 Sample(id="italy", input="Capital of Italy?", target="Rome")],
        solver=generate(),
        scorer=judged_correctness(),
    )
