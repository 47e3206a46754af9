"""Total, bounded extraction of a JSON value from free model text (shared by the parsers).

Handles reasoning traces (``<think>...</think>``), Markdown fences, prose around the JSON,
trailing commas and truncated output (through the maintained ``json-repair`` package).
Never raises: returns ``ExtractedJson(value=None, error=...)`` when nothing usable is there.

A valid JSON answer is read whole before anything else: the output itself, the output after
its leading ``<think>`` blocks, or either inside one enclosing code fence. Reasoning-trace
stripping and fence detection only act on an answer that is not JSON as a whole, so a
``</think>`` or a fenced snippet inside one of its strings never cuts it.

Every step is linear in the output's length or capped, so adversarial output (thousands of
spaces, backticks or brackets, deep nesting, huge numbers, lone surrogates) costs a bounded
time per output:

1. :func:`model_answer` is the first step on a raw output: it cuts the output at
   :data:`MAX_OUTPUT_CHARACTERS` (recorded as ``truncated``), replaces lone surrogates, drops
   the ``<think>`` trace and cuts the answer at :data:`MAX_PARSED_CHARACTERS`.
2. :func:`decode_json` is strict JSON with bad numbers kept as data: an integer literal longer
   than :data:`MAX_INTEGER_DIGITS` characters, ``NaN``, ``Infinity`` and a float that
   overflows stay the text the model wrote (a string), so only the value holding them is
   unusable, never the whole output. A value nested deeper than :data:`MAX_JSON_DEPTH` is
   not read (a linear pre-scan checks it).
3. ``json-repair`` gets at most :data:`MAX_REPAIRED_CHARACTERS` per output of JSON that is
   only cut short or has trailing commas (a linear token check tells), and at most
   :data:`MAX_IRREGULAR_REPAIRED_CHARACTERS` of anything else (it is quadratic on some
   junk), cut before the bracket nesting deeper than :data:`MAX_JSON_DEPTH` (it is slow on
   deep nesting).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from condambig_metrics.text import (
    THINK_CLOSE,
    THINK_OPEN,
    code_fences,
    reasoning_spans,
    replace_lone_surrogates,
    strip_reasoning,
    unwrap_code_fence,
    without_language_tag,
)

__all__ = [
    "MAX_JSON_CANDIDATES",
    "MAX_JSON_DEPTH",
    "MAX_OUTPUT_CHARACTERS",
    "MAX_PARSED_CHARACTERS",
    "MAX_REPAIRED_CHARACTERS",
    "ExtractedJson",
    "ModelAnswer",
    "decode_json",
    "extract_json",
    "find_json",
    "json_depth_exceeded_at",
    "labelled_answer",
    "labelled_pairs",
    "model_answer",
    "replace_lone_surrogates",
    "strip_reasoning",
]

MAX_OUTPUT_CHARACTERS = 200_000
"""A raw output is cut here before any other step (about 50,000 tokens: beyond every task's
``max_gen_toks`` and a long reasoning trace); a cut output is ``truncated``."""
MAX_PARSED_CHARACTERS = 100_000
"""The answer left after the reasoning trace is cut here (no benchmark answer needs more)."""
MAX_JSON_CANDIDATES = 64
"""JSON candidates (fenced blocks, start positions) tried per output."""
MAX_REPAIRED_CHARACTERS = 10_000
"""Characters handed to json-repair per output, over all candidates: JSON cut short (the
generation limit) or with trailing commas, on which it is linear (about 0.15 s for this
many on junk such as ``[NaN, NaN, ...``); every task's ``max_gen_toks`` stays under it."""
MAX_IRREGULAR_REPAIRED_CHARACTERS = 1_000
"""Of those, characters of any other text (single quotes, missing commas, prose): json-repair
is quadratic on some of it, about 0.2 s at worst for this many."""
MAX_JSON_DEPTH = 32
"""Deepest bracket nesting read as JSON; answers nest three or four levels."""
MAX_INTEGER_DIGITS = 100
"""Longer integer literals (sign included) stay strings: Python refuses to convert more than
4,300 digits, and no answer or citation is a 100-digit number."""

# Language tags dropped from a fence's first line; any other tag stays part of the block.
_FENCE_TAGS = ("json", "JSON", "javascript")
# A JSON string (possibly unterminated) or one bracket: strings are skipped whole, so
# brackets inside them do not count. Both alternatives match without backtracking.
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_CONSTANTS = {math.inf: "Infinity", -math.inf: "-Infinity"}
_INTEGER_LIMIT = 10**MAX_INTEGER_DIGITS


@dataclass(frozen=True)
class ModelAnswer:
    """The answer part of an output: capped, surrogate-free, without its reasoning trace."""

    text: str
    truncated: bool = False


@dataclass(frozen=True)
class ExtractedJson:
    value: Any
    error: str | None = None
    truncated: bool = False
    """The output was longer than the parsing caps and was cut (counted by the benchmarks)."""

    @property
    def ok(self) -> bool:
        return self.error is None


def model_answer(output: str) -> ModelAnswer:
    """The first step on a raw output: cap, replace lone surrogates, strip ``<think>``."""
    truncated = len(output) > MAX_OUTPUT_CHARACTERS
    text = replace_lone_surrogates(output[:MAX_OUTPUT_CHARACTERS])
    answer = strip_reasoning(text)
    if len(answer) > MAX_PARSED_CHARACTERS:
        answer, truncated = answer[:MAX_PARSED_CHARACTERS], True
    return ModelAnswer(answer, truncated)


def extract_json(text: object) -> ExtractedJson:
    """The JSON object or array of a raw output: the output when it is JSON as a whole
    (after leading ``<think>`` blocks, in a fence or not), else the first one found in its
    answer (:func:`find_json`), repaired when needed."""
    if not isinstance(text, str):
        return ExtractedJson(None, f"output is {type(text).__name__}, not text")
    capped = replace_lone_surrogates(text[:MAX_OUTPUT_CHARACTERS])
    for start in _answer_starts(capped):
        whole = _whole_json(capped[start:])
        if whole is not None:
            return ExtractedJson(whole, truncated=len(text) > MAX_OUTPUT_CHARACTERS)
    answer = model_answer(text)
    found = find_json(answer.text)
    return ExtractedJson(found.value, found.error, answer.truncated)


def find_json(answer: str) -> ExtractedJson:
    """The first non-empty JSON object or array in an answer already through
    :func:`model_answer`: the answer when it is JSON as a whole, then fenced blocks, then
    the first bracket of the answer."""
    if not answer:
        return ExtractedJson(None, "empty output")
    whole = _whole_json(answer)
    if whole is not None:
        return ExtractedJson(whole)
    candidates = [block for block in _fenced_blocks(answer) if block.strip()]
    candidates = candidates[: MAX_JSON_CANDIDATES - 1] + [answer]
    budget = _RepairBudget()
    for candidate in candidates:
        value = _decode(candidate, budget)
        if isinstance(value, (dict, list)) and value:
            return ExtractedJson(value)
    return ExtractedJson(None, "no JSON object or array in the output")


def _whole_json(text: str) -> Any:
    """The non-empty object or array ``text`` is as a whole (surrounding whitespace and one
    enclosing code fence allowed), or None. At most two strict decodes: linear."""
    for candidate in (text, unwrap_code_fence(text)):
        if candidate is None:
            continue
        start = _JSON_SPACE.match(candidate).end()
        if candidate[start:start + 1] not in ("{", "["):
            continue
        decoded = decode_json(candidate, start, whole=True)
        if decoded is not None and isinstance(decoded[0], (dict, list)) and decoded[0]:
            return decoded[0]
    return None


def _answer_starts(text: str) -> list[int]:
    """Where the answer of a raw output may start: after the ``<think>`` blocks it starts
    with (0 when none), and after the first ``</think>`` when the trace's opening tag was
    part of the prompt."""
    position = 0
    for start, end in reasoning_spans(text):
        if text[position:start].strip():
            break
        position = end
    starts = [position]
    closing = THINK_CLOSE.search(text, position)
    if closing is not None and not THINK_OPEN.search(text, position, closing.start()):
        starts.append(closing.end())
    return starts


def decode_json(text: str, start: int = 0, *, whole: bool = False) -> tuple[Any, int] | None:
    """``(value, end)`` of the strict JSON value at ``text[start:]`` (after JSON whitespace),
    or None. With ``whole``, only whitespace may follow it (``json.loads``). Numbers Python
    cannot hold stay their text, strings lose lone surrogates, and a value nested deeper
    than :data:`MAX_JSON_DEPTH` is None."""
    start = _JSON_SPACE.match(text, start).end()
    try:
        value, end = _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    if whole and _JSON_SPACE.match(text, end).end() != len(text):
        return None
    if json_depth_exceeded_at(text, start, end) is not None:
        return None
    return _as_data(value), end


def json_depth_exceeded_at(text: str, start: int = 0, end: int | None = None) -> int | None:
    """Position of the first bracket in ``text[start:end]`` nesting deeper than
    :data:`MAX_JSON_DEPTH` (strings skipped), or None. One linear scan."""
    depth = 0
    for match in _STRUCTURE.finditer(text, start, len(text) if end is None else end):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return match.start()
        elif token in "]}":
            depth = max(depth - 1, 0)
    return None


def _parse_int(literal: str) -> int | str:
    return int(literal) if len(literal) <= MAX_INTEGER_DIGITS else literal


def _parse_float(literal: str) -> float | str:
    value = float(literal)
    return value if math.isfinite(value) else literal


_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float, parse_constant=str)


def _as_data(value: Any) -> Any:
    """``value`` with lone surrogates replaced in its strings and keys, non-finite floats as
    their JSON text and integers longer than :data:`MAX_INTEGER_DIGITS` as their digits
    (json-repair's output has them). Depth is bounded by :data:`MAX_JSON_DEPTH`."""
    if isinstance(value, str):
        return replace_lone_surrogates(value)
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return _CONSTANTS.get(value, "NaN")
    if isinstance(value, int) and abs(value) >= _INTEGER_LIMIT:
        return str(value)  # at most 4,300 digits: json-repair keeps longer literals as text
    if isinstance(value, list):
        return [_as_data(item) for item in value]
    if isinstance(value, dict):
        return {_as_data(key): _as_data(item) for key, item in value.items()}
    return value


def _fenced_blocks(text: str) -> list[str]:
    """Each fence's content after its language tag and leading whitespace; an unclosed last
    fence runs to the end of the text (less one final newline)."""
    blocks = []
    for fence in code_fences(text):
        block = without_language_tag(fence.body, _FENCE_TAGS).lstrip()
        if not fence.closed and block.endswith("\n"):
            block = block[:-1]
        blocks.append(block)
    return blocks


def _decode(candidate: str, budget: _RepairBudget) -> Any:
    start = _first_bracket(candidate)
    if start is None:
        return None
    decoded = decode_json(candidate, start)
    if decoded is not None:
        return decoded[0]
    return _repair(candidate[start:], budget)


@dataclass
class _RepairBudget:
    """Characters json-repair may still receive for one output: in all, and of text that is
    not JSON cut short or with trailing commas (json-repair is quadratic on some of that:
    1,000 characters of ``"a"a"a...`` take about 0.2 s, 8,000 take 10 s)."""

    total: int = MAX_REPAIRED_CHARACTERS
    irregular: int = MAX_IRREGULAR_REPAIRED_CHARACTERS


def _repair(body: str, budget: _RepairBudget) -> Any:
    """json-repair on ``body`` within the budget: the first JSON value when it is only cut
    short or has trailing commas (json-repair is linear there), else a short prefix; cut
    before the first bracket nesting deeper than :data:`MAX_JSON_DEPTH`."""
    body = body[: budget.total]
    regular_end = _regular_json_end(body)
    if regular_end is None:
        body = body[: budget.irregular]
        budget.irregular -= len(body)
    else:
        body = body[:regular_end]
    too_deep = json_depth_exceeded_at(body)
    if too_deep is not None:
        body = body[:too_deep]
    if not body:
        return None
    budget.total -= len(body)
    try:
        import json_repair

        return _as_data(json_repair.loads(body))
    except Exception:  # json-repair is lenient, but any failure here is just "no JSON"
        return None


# One JSON token at a position; an unterminated string or a cut literal only at the end.
_JSON_TOKEN = re.compile(
    r"""(?P<space>[ \t\n\r]+)
    |(?P<string>"[^"\\]*(?:\\.[^"\\]*)*"?)
    |(?P<scalar>-?(?:\d+(?:\.\d*)?(?:[eE][+-]?\d*)?|Infinity)|NaN|true|false|null|[a-zA-Z]+\Z)
    |(?P<punctuation>[\[\]{},:])""",
    re.VERBOSE | re.DOTALL,
)


def _regular_json_end(body: str) -> int | None:
    """End of the first JSON value in ``body`` when its tokens follow JSON's grammar except
    for trailing commas and a cut-off end (``len(body)`` if cut off); None otherwise.
    One linear pass over the tokens."""
    stack: list[str] = []
    expect = "value"  # value | key | colon | next (a comma or a closing bracket)
    position = 0
    while position < len(body):
        match = _JSON_TOKEN.match(body, position)
        if match is None:
            return None
        position, kind, token = match.end(), match.lastgroup, match.group()
        if kind == "space":
            continue
        if kind == "string" and expect == "key":
            expect = "colon"
        elif kind in ("string", "scalar") and expect == "value":
            expect = "next"
        elif token in "[{" and expect == "value":
            stack.append(token)
            expect = "value" if token == "[" else "key"
        elif token in "]}" and stack and stack[-1] == "[{"["]}".index(token)] and (
                expect == "next" or expect == ("value" if token == "]" else "key")):
            stack.pop()
            expect = "next"
        elif token == ":" and expect == "colon":
            expect = "value"
        elif token == "," and expect == "next" and stack:
            expect = "value" if stack[-1] == "[" else "key"
        else:
            return None
        if not stack:
            return position
    return len(body)


# ---------------------------------------------------------------- plain-text replies
# Real instruction-tuned models often answer in labelled plain text instead of the JSON asked
# for: "Answer: 1948", "The answer to this question is: 1948", or "Question: ...\nAnswer: ...".
# Every pattern is anchored at a line start with bounded quantifiers: linear per line.
_DECORATION = " \t*_`\"'\u201c\u201d"
_ANSWER_LABEL = re.compile(
    r"^[*_#>\-\s]{0,8}(?:final answer|answer|the (?:final |correct |short )?answer"
    r"(?: to (?:this|the|your) question)? is)[*_]{0,4}\s{0,4}[:\uff1a][*_]{0,4}[ \t]*",
    re.IGNORECASE)
_QUESTION_LABEL = re.compile(
    r"^[*_#>\-\s]{0,8}(?:disambiguated question|question)[*_]{0,4}\s{0,4}[:\uff1a][*_]{0,4}[ \t]*",
    re.IGNORECASE)
MAX_LABELLED_LINES = 2_000
"""Lines of an answer read for labels (a reply looping to its token budget has fewer)."""


def _clean(value: str) -> str:
    return value.strip().strip(_DECORATION).strip()


def labelled_answer(answer: str) -> str | None:
    """The answer a plain-text reply states after an answer label ("Answer:", "Final
    answer:", "The answer to this question is:"), from the first labelled line (or, when
    the label ends its line, the next non-empty line); None without such a label."""
    return next((value for _, value in _labelled(answer)), None)


def labelled_pairs(answer: str) -> list[tuple[str, str]]:
    """(question, answer) pairs written as "Question: ..." / "Answer: ..." lines: each
    labelled answer with the last labelled question before it ("" when none)."""
    return list(_labelled(answer))


def _labelled(answer: str) -> Iterator[tuple[str, str]]:
    """The labelled answers of a reply, in order, each with the last labelled question
    before it; lazily, so that :func:`labelled_answer` stops at the first."""
    question = ""
    waiting = False
    for line in answer.splitlines()[:MAX_LABELLED_LINES]:
        if waiting and _clean(line):
            yield question, _clean(line)
            waiting = False
            continue
        if (match := _QUESTION_LABEL.match(line)) is not None:
            question, waiting = _clean(line[match.end():]), False
        elif (match := _ANSWER_LABEL.match(line)) is not None:
            value = _clean(line[match.end():])
            if value:
                yield question, value
            else:
                waiting = True


def _first_bracket(text: str) -> int | None:
    positions = [p for p in (text.find("{"), text.find("[")) if p >= 0]
    return min(positions) if positions else None
