"""Turn any model output into condition-answer-citation pairs, or a counted parse failure.

Citations come in every form models write: "Fragment 3", "[3]", "3", 3, "F3",
"Fragment 3 - Title", "Fragments 1 and 2". They become 1-based fragment numbers;
numbers outside 1..#fragments are dropped and counted, duplicates are merged and counted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from condambig_tasks.condambigqa.records import Setting
from condambig_tasks.parsing import extract_json, strip_reasoning

_LIST_KEYS = ("conditions", "answers", "results", "pairs", "items", "responses", "output")
_CONDITION_KEYS = ("condition", "conditions", "interpretation", "assumption")
_ANSWER_KEYS = ("answer", "answers", "response", "groundtruth", "ground_truth", "text")
_CITATION_KEYS = ("citations", "citation", "sources", "source", "fragments", "references")

_LEADING_NUMBER = re.compile(r"^\W*(?:fragments?|frag\.?|f)?\s*#?\s*(\d+)", re.IGNORECASE)
_MORE_NUMBERS = re.compile(
    r"^(?:(?:\s*(?:,|;|&|and|\]|\[|\)|\(|fragments?|f)\s*)+#?\s*\d+)*\s*[\])]?\s*$", re.IGNORECASE
)


@dataclass(frozen=True)
class GeneratedPair:
    condition: str
    answer: str
    citations: tuple[int, ...] = ()


@dataclass(frozen=True)
class ParsedResponse:
    pairs: tuple[GeneratedPair, ...]
    parsed: bool
    error: str | None = None
    out_of_range_citations: int = 0
    duplicate_citations: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)


def parse_response(text: object, setting: Setting, fragment_count: int) -> ParsedResponse:
    """Total: returns pairs, or ``parsed=False`` with the reason. Never raises."""
    try:
        return _parse(text, Setting(setting), fragment_count)
    except Exception as error:  # a bug here must not crash an evaluation run
        return ParsedResponse((), False, f"parser error: {type(error).__name__}: {error}")


def _parse(text: object, setting: Setting, fragment_count: int) -> ParsedResponse:
    extracted = extract_json(text)
    if not extracted.ok:
        if setting is Setting.CLOSED_BOOK and isinstance(text, str):
            plain = strip_reasoning(text).strip()
            if plain:  # a closed-book answer in plain prose is still one answer
                return ParsedResponse((GeneratedPair("", plain[:2000]),), True,
                                      notes=("plain-text answer",))
        return ParsedResponse((), False, extracted.error)
    items = _items(extracted.value)
    if items is None:
        return ParsedResponse((), False, "JSON has no list of conditions/answers")
    pairs: list[GeneratedPair] = []
    out_of_range = duplicates = 0
    for item in items:
        if isinstance(item, str) and setting is not Setting.CLOSED_BOOK:
            continue  # a bare string is an answer only where no structure was asked for
        condition, answer, raw_citations = _fields(item)
        if not answer and not condition:
            continue
        numbers: tuple[int, ...] = ()
        if setting.cites:  # closed-book settings show no fragments: citations are ignored
            numbers, dropped, repeated = _citation_numbers(raw_citations, fragment_count)
            out_of_range += dropped
            duplicates += repeated
        pairs.append(GeneratedPair(condition, answer, numbers))
    if items and not pairs:
        return ParsedResponse((), False, "JSON has no object with a condition or an answer",
                              out_of_range, duplicates)
    return ParsedResponse(tuple(pairs), True, None, out_of_range, duplicates)


def _items(value: Any) -> list | None:
    if isinstance(value, list):
        return value
    if isinstance(value, Mapping):
        lowered = {str(k).lower(): v for k, v in value.items()}
        for key in _LIST_KEYS:
            if isinstance(lowered.get(key), list):
                return lowered[key]
        if any(k in lowered for k in _ANSWER_KEYS + _CONDITION_KEYS):
            return [value]  # a single pair without the wrapping list
        lists = [v for v in value.values() if isinstance(v, list)]
        if len(lists) == 1:
            return lists[0]
    return None


def _fields(item: Any) -> tuple[str, str, Any]:
    if isinstance(item, str):
        return "", item.strip(), None
    if not isinstance(item, Mapping):
        return "", "", None
    lowered = {str(k).lower().strip(): v for k, v in item.items()}
    condition = _text(next((lowered[k] for k in _CONDITION_KEYS if k in lowered), ""))
    answer = _text(next((lowered[k] for k in _ANSWER_KEYS if k in lowered), ""))
    citations = next((lowered[k] for k in _CITATION_KEYS if k in lowered), None)
    return condition, answer, citations


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (list, tuple)):
        return " ".join(_text(v) for v in value if _text(v))
    if isinstance(value, Mapping):
        return " ".join(_text(v) for v in value.values() if _text(v))
    return str(value).strip()


def _citation_numbers(raw: Any, fragment_count: int) -> tuple[tuple[int, ...], int, int]:
    """(numbers in first-cited order, out-of-range count, duplicate count)."""
    found: list[int] = []
    for entry in _citation_entries(raw):
        found.extend(_numbers_in(entry))
    kept: list[int] = []
    out_of_range = duplicates = 0
    for number in found:
        if not 1 <= number <= fragment_count:
            out_of_range += 1
        elif number in kept:
            duplicates += 1
        else:
            kept.append(number)
    return tuple(kept), out_of_range, duplicates


def _citation_entries(raw: Any) -> list[str]:
    if raw is None or isinstance(raw, bool):
        return []
    if isinstance(raw, (int, float)):
        return [str(int(raw))]
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, Mapping):
        return [e for v in raw.values() for e in _citation_entries(v)]
    if isinstance(raw, (list, tuple)):
        return [e for v in raw for e in _citation_entries(v)]
    return []


def _numbers_in(entry: str) -> list[int]:
    """"Fragment 3 - 2010 Cup" -> [3]; "Fragments 1, 2 and 5" -> [1, 2, 5]; "Title" -> []."""
    entry = entry[:200]  # a citation is short; this also bounds the regex work on junk
    match = _LEADING_NUMBER.match(entry)
    if not match:
        return []
    numbers = [int(match.group(1))]
    rest = entry[match.end():]
    if _MORE_NUMBERS.match(rest):
        numbers.extend(int(n) for n in re.findall(r"\d+", rest))
    return numbers
