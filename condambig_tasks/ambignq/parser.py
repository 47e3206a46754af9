"""Parsing a model's AmbigNQ reply into predicted (question, answer) pairs. Never raises.

Accepted: a JSON list of ``{"question", "answer"}`` objects, optionally fenced, wrapped in an
object (``{"pairs": [...]}``), after prose or a ``<think>`` trace, or cut off by the generation
limit (the shared :mod:`condambig_tasks.parsing` extracts and repairs the JSON). A reply with
no JSON is read as labelled plain text, as real instruction-tuned models often write it:
"Question: ... / Answer: ..." lines give pairs, and one "Answer: ..." (or "The answer to
this question is: ...") gives one answer; the paper's task is a set of answers, whatever
their layout. Items without
a question (or bare answer strings) get the empty question: they count for answer F1, and
their question metrics are scored against "". Anything else is a recorded parse failure with
no pairs (0.0 on every metric). Parsing is bounded by the shared module's caps (an output cut
by them is ``truncated``); a number Python cannot hold (an integer of thousands of digits,
``NaN``) is read as the text the model wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from condambig_tasks.ambignq.records import PredictedPair
from condambig_tasks.parsing import extract_json, labelled_answer, labelled_pairs, model_answer


@dataclass(frozen=True)
class ParsedReply:
    """The pairs found in one output; ``parsed`` is False when none could be read."""

    pairs: tuple[PredictedPair, ...]
    parsed: bool
    error: str | None = None
    truncated: bool = False
    """The output was longer than the parsing caps (``condambig_tasks.parsing``) and was cut."""


def _as_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return next((text for text in map(_as_text, value) if text), None)
    return None


def _pair(item: Any) -> PredictedPair | None:
    if isinstance(item, dict):
        lowered = {str(key).strip().lower(): value for key, value in item.items()}
        answer = _as_text(lowered.get("answer"))
        if answer is None:
            return None
        question = lowered.get("question", lowered.get("disambiguated_question"))
        return PredictedPair(answer=answer, question=question.strip() if isinstance(question, str) else "")
    answer = _as_text(item) if isinstance(item, (str, int, float)) else None
    return PredictedPair(answer=answer, question="") if answer else None


def _pairs_from_list(items: list[Any]) -> list[PredictedPair]:
    return [pair for pair in map(_pair, items) if pair is not None]


def _pairs_from_value(value: Any) -> list[PredictedPair]:
    """Pairs from a list, a single pair object, or an object wrapping a list."""
    if isinstance(value, list):
        return _pairs_from_list(value)
    if isinstance(value, dict):
        single = _pair(value)
        if single is not None:
            return [single]
        for nested in value.values():
            if isinstance(nested, list) and (pairs := _pairs_from_list(nested)):
                return pairs
    return []


def _plain_text_pairs(output: str) -> list[PredictedPair]:
    """Pairs from labelled plain text (no JSON in the reply)."""
    answer = model_answer(output).text
    pairs = [PredictedPair(answer=a, question=q) for q, a in labelled_pairs(answer)]
    if pairs:
        return pairs
    single = labelled_answer(answer)
    return [PredictedPair(answer=single, question="")] if single else []


def parse_reply(output: str) -> ParsedReply:
    """The predicted pairs in one model output (a parse failure yields no pairs)."""
    extracted = extract_json(output)
    if not extracted.ok:
        plain = _plain_text_pairs(output) if isinstance(output, str) else []
        if plain:
            return ParsedReply(pairs=tuple(plain), parsed=True, truncated=extracted.truncated)
        return ParsedReply(pairs=(), parsed=False, error=extracted.error,
                           truncated=extracted.truncated)
    pairs = _pairs_from_value(extracted.value)
    if not pairs:
        return ParsedReply(pairs=(), parsed=False, error="no question-answer pairs in the JSON",
                           truncated=extracted.truncated)
    return ParsedReply(pairs=tuple(pairs), parsed=True, truncated=extracted.truncated)
