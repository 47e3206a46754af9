"""The G-Eval prompt: criteria, evaluation steps, the three texts, and a 0-10 score request.

The reply format is JSON with the score first, ``{"score": N, "reason": "..."}``, so the
score is one of the first tokens the judge writes and can be located among the returned
tokens for log-probability weighting.

The three texts (input, actual output, expected output) are not trusted: each sits between
an opening line of ``<`` and a closing line of ``>``, and both runs are one character longer
than the longest run of ``<`` or ``>`` in any of the texts (at least three). A text can
therefore never close its block and write a section of its own (a fake "EXPECTED OUTPUT:").
Texts without a run of three ``<`` or ``>`` are delimited by ``<<<`` / ``>>>``.
Lone surrogates (U+D800..U+DFFF, which no UTF-8 request can carry) become U+FFFD.
:func:`delimited_blocks` gives a rendered prompt's blocks back, so that a reply repeating
them is not read for a verdict (``scoring.parse_reply``).
"""

from __future__ import annotations

import re

from condambig_metrics.judge.records import SCORE_MAX, SCORE_MIN, JudgeRequest
from condambig_metrics.text import replace_lone_surrogates

MIN_DELIMITER_LENGTH = 3

_ANGLE_RUN = re.compile(r"<+|>+")

_TEMPLATE = """\
You are an evaluator. Judge the ACTUAL OUTPUT of a question-answering system against the \
EXPECTED OUTPUT, using the metric below.

Metric: {name}

Evaluation criteria:
{criteria}

Evaluation steps:
{steps}

INPUT (what the system was given):
{open}
{input}
{close}

ACTUAL OUTPUT:
{open}
{actual}
{close}

EXPECTED OUTPUT:
{open}
{expected}
{close}

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
    texts = [replace_lone_surrogates(text.strip()) for text in
             (request.input, request.actual_output, request.expected_output)]
    # one more than the longest run of "<" or ">" in the texts, and at least 3
    longest = max((len(run.group()) for text in texts for run in _ANGLE_RUN.finditer(text)),
                  default=0)
    length = max(MIN_DELIMITER_LENGTH, longest + 1)
    return _TEMPLATE.format(
        name=criterion.name.strip(),
        criteria=criterion.criteria.strip(),
        steps=steps or "1. Compare the actual output with the expected output.",
        input=texts[0],
        actual=texts[1],
        expected=texts[2],
        open="<" * length,
        close=">" * length,
        low=SCORE_MIN,
        high=SCORE_MAX,
    )


def delimited_blocks(prompt: str) -> tuple[int, list[str]] | None:
    """The delimiter length of a prompt :func:`render_prompt` wrote and the texts of its
    blocks (None: not such a prompt)."""
    opening = re.search(f"^(<{{{MIN_DELIMITER_LENGTH},}})$", prompt, re.MULTILINE)
    if opening is None:
        return None
    length = len(opening.group(1))
    blocks = re.findall(f"^<{{{length}}}\n(.*?)\n>{{{length}}}$", prompt,
                        re.MULTILINE | re.DOTALL)
    return length, blocks
