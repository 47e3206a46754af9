"""Reading Abg-CoQA replies: an answer, the ambiguity label, or a clarification question.

Total: any string gives a reply; an empty reply (or a ``<think>`` trace never closed) is a
recorded parse failure that scores as "not ambiguous, empty answer / empty question".
The first non-empty line is the reply, without a leading ``Answer:``-style label (or the
sentence-style "The answer to this question is:" real models write) or quotes.
The shared first step (``condambig_tasks.parsing.model_answer``) caps the output (a cut
output is ``truncated``) and replaces lone surrogates; every pattern here is linear.
Structured prediction files (a label, a question or an answer per sample) give the same
replies, already parsed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from condambig_tasks.abg_coqa.records import clarified_qa_sample_id, split_clarified_qa_sample_id
from condambig_tasks.errors import PredictionFileError
from condambig_tasks.parsing import model_answer

_LABEL = re.compile(
    r"^\s*(?:final answer|answer|a|clarification question|clarification|question|q"
    r"|the (?:final |correct |short )?answer(?: to (?:this|the|your) question)? is)\s*:\s*",
    re.IGNORECASE,
)
_DECORATION = " \t*_`\"'\u201c\u201d"
_AMBIGUOUS = re.compile(r"^\W*(?:the (?:last )?question is )?ambiguous\b", re.IGNORECASE)
MAX_LINE_CHARS = 2_000
"""A reply line is cut here (answers and questions are short; junk can be huge)."""


@dataclass(frozen=True)
class TextReply:
    """The reply line; ``parsed`` is False when there was none."""

    text: str
    parsed: bool
    truncated: bool = False
    """The output was longer than the parsing caps and was cut."""


@dataclass(frozen=True)
class DetectionReply:
    """Detection: either the ambiguity label or an answer."""

    ambiguous: bool
    answer: str
    parsed: bool
    truncated: bool = False


def parse_text(output: str) -> TextReply:
    """The first non-empty line without its label; a failure when there is none."""
    if not isinstance(output, str):
        return TextReply(text="", parsed=False)
    answer = model_answer(output)
    for line in answer.text.splitlines():
        cleaned = _LABEL.sub("", line.strip(_DECORATION)).strip(_DECORATION)
        if cleaned:
            return TextReply(text=cleaned[:MAX_LINE_CHARS], parsed=True,
                             truncated=answer.truncated)
    return TextReply(text="", parsed=False, truncated=answer.truncated)


def parse_detection(output: str) -> DetectionReply:
    """``AMBIGUOUS`` (or a line starting "ambiguous") is the label; anything else an answer."""
    reply = parse_text(output)
    if reply.parsed and _AMBIGUOUS.match(reply.text):
        return DetectionReply(ambiguous=True, answer="", parsed=True, truncated=reply.truncated)
    return DetectionReply(ambiguous=False, answer=reply.text, parsed=reply.parsed,
                          truncated=reply.truncated)


def read_structured_predictions(raw: Any, subtask: str, source: str) -> dict[str, Any] | None:
    """Sample id -> reply (or raw text for rows with ``output``); None when ``raw`` is not a
    list of objects with an ``id``. Clarified QA rows name their reply by ``"reply": k`` or
    the sample id ``<id>#<k>``."""
    if not isinstance(raw, list) or not raw or not all(
            isinstance(row, dict) and "id" in row for row in raw):
        return None
    predictions: dict[str, Any] = {}
    for row in raw:
        key = _prediction_id(row, subtask, source)
        if key in predictions:
            raise PredictionFileError(f"{source}: id {key!r} appears more than once.")
        predictions[key] = _prediction(row, key, subtask, source)
    return predictions


def _prediction_id(row: Mapping[str, Any], subtask: str, source: str) -> str:
    identifier = str(row["id"])
    if subtask != "clarified_qa":
        return identifier
    if "reply" in row:
        reply = row["reply"]
        if isinstance(reply, bool) or not isinstance(reply, int):
            raise PredictionFileError(
                f"{source}: prediction {identifier}: 'reply' must be an integer index.")
        return clarified_qa_sample_id(identifier, reply)
    if split_clarified_qa_sample_id(identifier) is None:
        raise PredictionFileError(
            f"{source}: prediction {identifier}: clarified QA predictions need 'reply': k or "
            "an id '<id>#<k>'.")
    return identifier


def _prediction(row: Mapping[str, Any], key: str, subtask: str, source: str) -> Any:
    if "output" in row:
        if not isinstance(row["output"], str):
            raise PredictionFileError(f"{source}: prediction {key}: 'output' must be a string.")
        return row["output"]
    if subtask == "detection":
        if not isinstance(row.get("ambiguous"), bool):
            raise PredictionFileError(
                f"{source}: prediction {key}: detection needs 'ambiguous': true/false "
                "(or 'output').")
        answer = row.get("answer")
        if not isinstance(answer, (str, type(None))):  # CoQA's answers are strings
            raise PredictionFileError(
                f"{source}: prediction {key}: 'answer' must be a string (or absent), not "
                f"{type(answer).__name__}.")
        return DetectionReply(ambiguous=row["ambiguous"], answer=answer or "", parsed=True)
    name = "question" if subtask == "clarification" else "answer"
    if not isinstance(row.get(name), str):
        raise PredictionFileError(
            f"{source}: prediction {key}: needs a string '{name}' (or 'output').")
    return TextReply(text=row[name], parsed=True)
