"""Total parsing of a model's ConditionalQA reply into answers with condition elements.

Any string yields a :class:`ParsedAnswers`: either the answers (possibly none, meaning
"not answerable") or a recorded failure. Accepted: the requested JSON object, the same
inside a Markdown fence or surrounded by prose, a bare list of answers, answers as objects,
``[answer, [numbers]]`` pairs or plain strings, and a reasoning model's ``<think>...</think>``
trace before the reply (``condambig_tasks.parsing`` strips it, and repairs truncated JSON
when no complete JSON value has the answers structure). A reply without JSON that states one
labelled answer ("Answer: Yes", "The answer to the question is: Yes") or is only yes / no is
that answer, with no conditions. Cited element numbers are mapped
back to the element strings the model was shown; numbers that were not shown (or unreadable
citations) are dropped and counted in ``out_of_range_citations``.

Bounded: the shared first step caps the output (``truncated``), at most
``MAX_JSON_CANDIDATES`` fenced blocks and start positions are decoded, every regular
expression here is linear, and a number the model wrote that Python cannot hold (a huge
integer, ``NaN``) is a string that names no element, so only that citation is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from condambig_metrics.text import code_fences, normalize_answer, without_language_tag
from condambig_tasks.conditionalqa.records import ConditionalAnswer
from condambig_tasks.parsing import (
    MAX_JSON_CANDIDATES,
    decode_json,
    find_json,
    labelled_answer,
    model_answer,
)

# Language tags dropped from a closed fence's first line (after spaces or tabs).
_FENCE_TAGS = ("json", "JSON")
# Matched against the stripped citation: no two adjacent parts can share a space, so the
# match is linear (a leading "\s*" before an optional "[" and another "\s*" is quadratic).
_NUMBER_CITATION = re.compile(r"^(?:element\s*)?(?:[\[(#]\s*)?(\d+)(?:\s*[\])])?$", re.IGNORECASE)
_MAX_CITATION_DIGITS = 9
"""A cited number with more digits names no element (and is never converted to int)."""
_NUMBER_LIST = re.compile(r"^[\s\d,;\[\]#()]+$")
_NO_ANSWER_TEXTS = frozenset(
    {"not answerable", "unanswerable", "notanswerable", "no answer", "cannot be answered"}
)
# "The answer to the question is "yes"", "The answer is yes to ...", "The answer to the
# question "<restated question>" is "Yes."": a yes / no stated in a sentence (no label
# colon). Bounded quantifiers, anchored on the words "the answer": linear. A statement
# followed by "or" ("yes" or "no") is a hedge, not an answer.
_STATED_YES_NO = re.compile(
    r"\bthe answer(?: to (?:this|the|your) question)?(?: \"[^\"\n]{0,300}\")? is"
    r"[ \t]{0,4}[:\"\u201c'*]{0,3}[ \t]{0,2}(yes|no)\b(?P<hedge>[\"\u201d'*.]{0,3}[ \t]{1,4}or\b)?",
    re.IGNORECASE)
_MAX_STATEMENTS = 200
"""Yes / no statements read in one reply (a reply looping to its budget has fewer)."""
_ANSWER_TEXT_KEYS = ("answer", "text", "span")
_CONDITION_KEYS = ("conditions", "condition", "condition_elements", "citations", "elements")


@dataclass(frozen=True)
class ParsedAnswers:
    """A reply read as answers (empty = not answerable), or a parse failure."""

    answers: tuple[ConditionalAnswer, ...]
    parsed: bool
    failure: str | None = None
    out_of_range_citations: int = 0
    truncated: bool = False
    """The output was longer than the parsing caps (``condambig_tasks.parsing``) and was cut."""

    def official_answers(self) -> list[tuple[str, list[str]]]:
        return [answer.as_official() for answer in self.answers]


def _failure(reason: str, truncated: bool = False) -> ParsedAnswers:
    return ParsedAnswers(answers=(), parsed=False, failure=reason, truncated=truncated)


class _ShapeError(ValueError):
    """The JSON value is not an answers structure."""


def json_candidates(text: str) -> list[Any]:
    """Top-level JSON values in ``text``: fenced blocks first, then by position.

    A value nested inside one already decoded is not a candidate of its own, so a malformed
    ``{"answers": [...]}`` is never replaced by a fragment of it.
    """
    values: list[Any] = []
    for block in _closed_fence_blocks(text)[:MAX_JSON_CANDIDATES]:
        decoded = decode_json(block, whole=True)
        if decoded is not None:
            values.append(decoded[0])
    attempts = 0
    decoded_until = 0
    for match in re.finditer(r"[\[{]", text):
        if match.start() < decoded_until:
            continue
        attempts += 1
        if attempts > MAX_JSON_CANDIDATES:
            break
        decoded = decode_json(text, match.start())
        if decoded is not None:
            value, decoded_until = decoded
            values.append(value)
    return values


def _closed_fence_blocks(text: str) -> list[str]:
    """The content of each closed fence: after spaces/tabs, a language tag, spaces/tabs and
    one newline."""
    blocks = []
    for fence in code_fences(text):
        if fence.closed:
            body = without_language_tag(fence.body.lstrip(" \t"), _FENCE_TAGS).lstrip(" \t")
            blocks.append(body.removeprefix("\n"))
    return blocks


def _answer_items(value: Any) -> list[Any]:
    """The list of answer items in a decoded value, or _ShapeError."""
    if isinstance(value, list):
        # A bare list of numbers is a list of citations, not of answers.
        if any(isinstance(item, (int, float)) for item in value):
            raise _ShapeError("a bare list of numbers")
        return value
    if not isinstance(value, dict):
        raise _ShapeError("not an object or a list")
    if value.get("not_answerable") is True or value.get("answerable") is False:
        return []
    if "answers" in value:
        answers = value["answers"]
        if answers is None:
            return []
        return answers if isinstance(answers, list) else [answers]
    if any(key in value for key in _ANSWER_TEXT_KEYS):
        return [value]
    raise _ShapeError("no 'answers' field")


def _answer_text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return value.strip()
    raise _ShapeError(f"answer text of type {type(value).__name__}")


def _split_item(item: Any) -> tuple[str, Any]:
    """(answer text, raw citations) from one answer item."""
    if isinstance(item, dict):
        key = next((k for k in _ANSWER_TEXT_KEYS if k in item), None)
        if key is None:
            raise _ShapeError("an answer object without 'answer'")
        citations = next((item[k] for k in _CONDITION_KEYS if k in item), None)
        return _answer_text(item[key]), citations
    if isinstance(item, (list, tuple)):
        if len(item) == 1:
            return _answer_text(item[0]), None
        if len(item) == 2 and isinstance(item[1], (list, type(None))):
            return _answer_text(item[0]), item[1]
        raise _ShapeError("an answer list that is not [answer, [conditions]]")
    return _answer_text(item), None


def _citation_list(citations: Any, elements: Mapping[int, str]) -> list[Any]:
    if citations is None:
        return []
    if isinstance(citations, list):
        return citations
    if isinstance(citations, str) and citations not in elements.values():
        if not citations.strip():
            return []
        if _NUMBER_LIST.match(citations):
            return re.findall(r"\d+", citations)
    return [citations]


def resolve_citation(citation: Any, elements: Mapping[int, str]) -> str | None:
    """The element string a citation names (a shown number or an exact element string)."""
    number: int | None = None
    if isinstance(citation, bool):
        return None
    if isinstance(citation, int):
        number = citation
    elif isinstance(citation, float) and citation.is_integer():
        number = int(citation)
    elif isinstance(citation, str):
        match = _NUMBER_CITATION.match(citation.strip())
        if match:
            digits = match.group(1)
            number = int(digits) if len(digits) <= _MAX_CITATION_DIGITS else None
        else:
            stripped = citation.strip()
            for element in elements.values():
                if element == citation or element == stripped:
                    return element
            return None
    if number is None:
        return None
    return elements.get(number)


def _read_answers(value: Any, elements: Mapping[int, str], truncated: bool) -> ParsedAnswers:
    answers: list[ConditionalAnswer] = []
    out_of_range = 0
    for item in _answer_items(value):
        text, raw_citations = _split_item(item)
        if not normalize_answer(text) or normalize_answer(text) in _NO_ANSWER_TEXTS:
            continue
        conditions: list[str] = []
        for citation in _citation_list(raw_citations, elements):
            element = resolve_citation(citation, elements)
            if element is None:
                out_of_range += 1
            else:
                conditions.append(element)
        answers.append(ConditionalAnswer(text=text, conditions=tuple(conditions)))
    return ParsedAnswers(
        answers=tuple(answers), parsed=True, out_of_range_citations=out_of_range,
        truncated=truncated,
    )


def stated_yes_no(text: str) -> str | None:
    """"yes" / "no" when every yes / no the reply states in a sentence ("The answer to the
    question is "yes"") is the same and none is hedged ("yes" or "no"); else None."""
    stated = set()
    for number, match in enumerate(_STATED_YES_NO.finditer(text)):
        if number >= _MAX_STATEMENTS or match["hedge"]:
            return None
        stated.add(match[1].lower())
    return stated.pop() if len(stated) == 1 else None


def _plain_answer(text: str) -> tuple[ConditionalAnswer, ...] | None:
    """One answer without conditions from a reply with no JSON, as real models write it:
    a labelled answer ("Answer: Yes", "The answer to the question is: Yes"), a reply that
    is only "yes" / "no", or a yes / no stated in a sentence, the same every time it is
    stated ("The answer to the question is "yes""); "not answerable" is no answer. None for
    any other prose."""
    answer = labelled_answer(text)
    if answer is None and normalize_answer(text) in ("yes", "no"):
        answer = text.strip()
    if answer is None:
        answer = stated_yes_no(text)
    if answer is None:
        return None
    if normalize_answer(answer) in _NO_ANSWER_TEXTS:
        return ()
    return (ConditionalAnswer(text=answer, conditions=()),)


def parse_model_output(output: Any, elements: Mapping[int, str]) -> ParsedAnswers:
    """Read one reply; ``elements`` maps each shown element number to its string."""
    try:
        if not isinstance(output, str):
            return _failure(f"output is {type(output).__name__}, not text")
        answer = model_answer(output)
        text, truncated = answer.text, answer.truncated
        if not text:
            return _failure("empty output (or a <think> trace that never closed)", truncated)
        # Prefer an object carrying "answers" over a bare list met earlier in the text.
        ranked = sorted(
            json_candidates(text),
            key=lambda value: 0 if isinstance(value, dict) and "answers" in value else 1,
        )
        reasons: list[str] = []
        for value in ranked:
            try:
                return _read_answers(value, elements, truncated)
            except _ShapeError as error:
                reasons.append(str(error))
        # Last resort: the shared extractor repairs truncated JSON / trailing commas.
        repaired = find_json(text)
        if repaired.ok:
            try:
                return _read_answers(repaired.value, elements, truncated)
            except _ShapeError as error:
                reasons.append(str(error))
        if not reasons:
            plain = _plain_answer(text)
            if plain is not None:
                return ParsedAnswers(answers=plain, parsed=True, truncated=truncated)
            return _failure(repaired.error or "no JSON found", truncated)
        return _failure(f"JSON without the answers structure ({reasons[0]})", truncated)
    except Exception as error:  # total by design: bad model output is data
        return _failure(f"unreadable output ({type(error).__name__})")


def parse_official_answers(value: Any, where: str) -> list[tuple[str, list[str]]]:
    """The official prediction format ``[[answer, [conditions...]], ...]`` (a user file, strict)."""
    if not isinstance(value, list):
        raise ValueError(f"{where}: 'answers' must be a list of [answer, [conditions]] pairs")
    pairs: list[tuple[str, list[str]]] = []
    for index, pair in enumerate(value):
        if (
            not isinstance(pair, (list, tuple))
            or len(pair) != 2
            or not isinstance(pair[0], str)
            or not isinstance(pair[1], Sequence)
            or isinstance(pair[1], str)
            or not all(isinstance(condition, str) for condition in pair[1])
        ):
            raise ValueError(
                f"{where}: answer {index} must be [answer text, [condition element strings]], "
                f"got {pair!r:.200}"
            )
        pairs.append((pair[0], list(pair[1])))
    return pairs
