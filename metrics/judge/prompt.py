"""The G-Eval prompt: criteria, evaluation steps, the three texts, and a 0-10 score request.

The reply format is JSON with the score first, ``{"score": N, "reason": "..."}``, so the
score is one of the first tokens the judge writes and can be located among the returned
tokens for log-probability weighting.
"""

from __future__ import annotations

from condambig_metrics.judge.records import JudgeRequest

SCORE_MIN = 0
SCORE_MAX = 10

_TEMPLATE = """\
You are an evaluator. Judge the ACTUAL OUTPUT of a question-answering system against the \
EXPECTED OUTPUT, using the metric below.

Metric: {name}

Evaluation criteria:
{criteria}

Evaluation steps:
{steps}

INPUT (what the system was given):
<<<
{input}
>>>

ACTUAL OUTPUT:
<<<
{actual}
>>>

EXPECTED OUTPUT:
<<<
{expected}
>>>

Follow the evaluation steps, then give an integer score from {low} (does not meet the \
criteria at all) to {high} (fully meets the criteria).
Reply with one JSON object and nothing else, with the score first:
{{"score": <integer {low}-{high}>, "reason": "<one or two sentences>"}}"""


def render_prompt(request: JudgeRequest) -> str:
    """The full judge prompt for one request (also the cache key, with the judge model)."""
    criterion = request.criterion
    steps = "\n".join(
        f"{number}. {step.strip()}"
        for number, step in enumerate(criterion.evaluation_steps, start=1)
    )
    return _TEMPLATE.format(
        name=criterion.name.strip(),
        criteria=criterion.criteria.strip(),
        steps=steps or "1. Compare the actual output with the expected output.",
        input=request.input.strip(),
        actual=request.actual_output.strip(),
        expected=request.expected_output.strip(),
        low=SCORE_MIN,
        high=SCORE_MAX,
    )
