"""Reading Abg-CoQA replies: an answer, the ambiguity label, or a clarification question.

Total: any string gives a reply; an empty reply (or a ``<think>`` trace never closed) is a
recorded parse failure that scores as "not ambiguous, empty answer / empty question".
The first non-empty line is the reply, without a leading ``Answer:``-style label or quotes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from condambig_tasks.parsing import strip_reasoning

_LABEL = re.compile(
    r"^\s*(?:final answer|answer|a|clarification question|clarification|question|q)\s*:\s*",
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


@dataclass(frozen=True)
class DetectionReply:
    """Detection: either the ambiguity label or an answer."""

    ambiguous: bool
    answer: str
    parsed: bool


def parse_text(output: str) -> TextReply:
    """The first non-empty line without its label; a failure when there is none."""
    if not isinstance(output, str):
        return TextReply(text="", parsed=False)
    for line in strip_reasoning(output).splitlines():
        cleaned = _LABEL.sub("", line.strip(_DECORATION)).strip(_DECORATION)
        if cleaned:
            return TextReply(text=cleaned[:MAX_LINE_CHARS], parsed=True)
    return TextReply(text="", parsed=False)


def parse_detection(output: str) -> DetectionReply:
    """``AMBIGUOUS`` (or a line starting "ambiguous") is the label; anything else an answer."""
    reply = parse_text(output)
    if reply.parsed and _AMBIGUOUS.match(reply.text):
        return DetectionReply(ambiguous=True, answer="", parsed=True)
    return DetectionReply(ambiguous=False, answer=reply.text, parsed=reply.parsed)
