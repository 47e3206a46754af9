"""Turn any model output into condition-answer-citation pairs, or a counted parse failure.

Citations come in every form models write: "Fragment 3", "[3]", "3", 3, "F3",
"Fragment 3 - Title". Each entry cites one fragment, its first number: "Fragment 18,
Fragment 19" is fragment 18, as the authors' ``format_fragment_citation`` reads it
(``evaluator.py``: the number after a leading "Fragment "). They become 1-based fragment
numbers, duplicates merged and counted. An entry that names no existing fragment (a number outside
1..#fragments, "Fragment X", "Condition 1") is kept apart as invalid and counted: eq. 1
counts it among the cited entries, where it can never be right.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from condambig_tasks.condambigqa.records import Setting
from condambig_tasks.parsing import extract_json, model_answer

_LIST_KEYS = ("conditions", "answers", "results", "pairs", "items", "responses", "output")
_CONDITION_KEYS = ("condition", "conditions", "interpretation", "assumption")
_ANSWER_KEYS = ("answer", "answers", "response", "groundtruth", "ground_truth", "text")
_CITATION_KEYS = ("citations", "citation", "sources", "source", "fragments", "references")

# No two adjacent parts of this pattern can match the same spaces, so matching is linear
# in the entry.
_LEADING_NUMBER = re.compile(r"^\W*(?:(?:fragments?|frag\.?|f)\s*)?(?:#\s*)?(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class GeneratedPair:
    condition: str
    answer: str
    citations: tuple[int, ...] = ()  # distinct valid fragment numbers, first-cited order
    # distinct cited entries naming no existing fragment ("F25" for an out-of-range 25, else
    # the entry's text, case-folded)
    invalid_citations: tuple[str, ...] = ()
    # length of the citation list as written (None: not known, taken as the distinct valid
    # and invalid entries)
    citation_list_length: int | None = None

    @property
    def cited_entry_count(self) -> int:
        """k's per-pair count: the citation list's length as the model wrote it."""
        if self.citation_list_length is not None:
            return self.citation_list_length
        return len(self.citations) + len(self.invalid_citations)


@dataclass(frozen=True)
class ParsedResponse:
    pairs: tuple[GeneratedPair, ...]
    parsed: bool
    error: str | None = None
    out_of_range_citations: int = 0
    duplicate_citations: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)
    truncated: bool = False  # the output was cut to the parsing cap first


def parse_response(text: object, setting: Setting, fragment_count: int) -> ParsedResponse:
    """Total: returns pairs, or ``parsed=False`` with the reason. Never raises."""
    try:
        return _parse(text, Setting(setting), fragment_count)
    except Exception as error:  # a bug here must not crash an evaluation run
        return ParsedResponse((), False, f"parser error: {type(error).__name__}: {error}")


def _parse(text: object, setting: Setting, fragment_count: int) -> ParsedResponse:
    extracted = extract_json(text)
    parsed = _pairs_of(extracted, text, setting, fragment_count)
    return replace(parsed, truncated=extracted.truncated)


def _pairs_of(extracted, text: object, setting: Setting, fragment_count: int) -> ParsedResponse:
    if not extracted.ok:
        if setting is Setting.CLOSED_BOOK and isinstance(text, str):
            plain = model_answer(text).text.strip()
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
        if not setting.cites:  # closed-book settings show no fragments: citations ignored
            pairs.append(GeneratedPair(condition, answer))
            continue
        numbers, invalid, dropped, repeated = _citation_numbers(raw_citations, fragment_count)
        out_of_range += dropped
        duplicates += repeated
        pairs.append(GeneratedPair(condition, answer, numbers, invalid,
                                   _list_length(raw_citations)))
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


def _citation_numbers(
    raw: Any, fragment_count: int,
) -> tuple[tuple[int, ...], tuple[str, ...], int, int]:
    """(valid numbers in first-cited order, distinct invalid entries, invalid-entry count,
    duplicate count). Blank entries cite nothing and are skipped."""
    kept: dict[int, None] = {}  # insertion-ordered sets: membership in O(1)
    invalid: dict[str, None] = {}
    invalid_count = duplicates = 0
    for entry in _citation_entries(raw):
        if not entry.strip():
            continue
        number = _number_in(entry)
        if number is None:  # "Fragment X", "Condition 1", a bare title
            invalid_count += 1
            invalid.setdefault(" ".join(entry.split()).casefold())
        elif not 1 <= number <= fragment_count:
            invalid_count += 1
            invalid.setdefault(f"F{number}")
        elif number in kept:
            duplicates += 1
        else:
            kept[number] = None
    return tuple(kept), tuple(invalid), invalid_count, duplicates


def _list_length(raw: Any) -> int:
    """The citation field's length as written: a list's (or mapping's) entries, 1 for a
    single value, 0 for none (the authors' table code takes ``len(citations)``)."""
    if raw is None or isinstance(raw, bool):
        return 0
    if isinstance(raw, (list, tuple, Mapping)):
        return len(raw)
    return 1


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


def _number_in(entry: str) -> int | None:
    """"Fragment 3 - 2010 Cup" -> 3; "Fragment 18, Fragment 19" -> 18 (the first number
    only, as the authors' evaluator reads an entry); "Title" -> None."""
    match = _LEADING_NUMBER.match(entry[:200])  # a citation is short: bound the regex work
    return int(match.group(1)) if match else None
