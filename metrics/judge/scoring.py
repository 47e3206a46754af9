"""Reading a score from a judge reply, weighted by token probabilities when available.

G-Eval (Liu et al., 2023) replaces the sampled integer by its expectation over the judge's
distribution at the score token, ``sum p(s)*s / sum p(s)``. Two rules are implemented:

- ``"condambig"`` (default): at the token that carries the parsed score (the whole number
  in one token; spaces and punctuation glued to it allowed), over every top alternative
  that reads as an integer 0..10.
- ``"deepeval"``: DeepEval's G-Eval (``GEval.generate_weighted_summed_score``, deepeval
  1.4.2, the version Li et al. used for CondAmbigQA): the first generated token whose text
  equals the score's text, alternatives with probability under 1 % dropped, then every
  alternative whose text is decimal digits (``str.isdecimal``) counted at ``int(text)``.

Without logprobs, or when a rule cannot weight the reply, the parsed number is the score
and the judgement is marked unweighted.

The score is read from the verdict the judge gives last: the ``"score"`` key of the last
top-level JSON object in the reply that has one (outside ``<think>`` blocks; a code fence
around it is fine), and its ``"reason"`` from the same object. A judge that restates the
output under evaluation, which may itself hold ``{"score": 10}``, before its own verdict is
therefore not hijacked by it. Only a reply with no JSON object at all falls back to a number
it starts with ("7", "8 - mostly right"). A ``score:`` written anywhere else (in a reason
before the JSON, or in the reason's text) is never read.

Finding the objects is linear in the reply: the reply is read left to right, an object found
is skipped whole (objects inside it are its fields, not verdicts), and a ``{"`` that starts
no valid object costs one attempt, of which at most :data:`MAX_BROKEN_OBJECT_STARTS` are
made (each may scan the rest of the reply once); a reply with more is unreadable rather than
read up to where the attempts ran out.

Text of the reply that repeats the prompt's delimited blocks (a judge that echoes its
prompt) is not read for a verdict: each span from an opening ``<`` run as long as the
prompt's delimiter to the next closing ``>`` run (to the end of the reply when it is not
closed), and each verbatim copy of a block's text that could hold an object (has a ``{``).
The output under evaluation sits in such a block, and may hold ``{"score": 10}``; with no
verdict outside them the reply is unreadable (the judgement is retried, then fails).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from condambig_metrics.judge.errors import UnparseableReplyError
from condambig_metrics.judge.prompt import delimited_blocks
from condambig_metrics.judge.records import (
    DEFAULT_JUDGE_WEIGHTING,
    JUDGE_WEIGHTINGS,
    SCORE_MAX,
    SCORE_MIN,
    WEIGHTING_DEEPEVAL,
    JudgeCompletion,
    JudgeResult,
    TokenLogprobs,
)
from condambig_metrics.text import reasoning_spans, replace_lone_surrogates

SCORE_FIELD = "score"
REASON_FIELD = "reason"
# A reply with no JSON object that starts with a number ("7", "7/10", "8 - mostly right").
_LEADING_NUMBER = re.compile(r"^\s*(\d+(?:\.\d+)?)(?![\d.])")
# A JSON string's body, a quoted number's text.
_JSON_WHITESPACE = " \t\r\n"
_NUMBER_TEXT = re.compile(r"\d+(?:\.\d+)?")
_DECODER = json.JSONDecoder()
# A "{" that can start a JSON object: whitespace, then a key's quote or the closing brace.
_OBJECT_START = re.compile(r'\{[ \t\r\n]*["}]')
MAX_BROKEN_OBJECT_STARTS = 64
"""Attempts at a ``{"`` that starts no valid JSON object before a reply is unreadable: each
failed attempt may scan (and :class:`json.JSONDecodeError` count the lines of) the rest of
the reply, so the attempts are capped to keep reading linear."""
# Characters a tokenizer may glue to a digit ("7," or ":7"); stripped before reading a token.
_TOKEN_PUNCTUATION = " \t\r\n\"',.:;{}[]()"
# DeepEval's G-Eval drops alternatives with log-probability below log(0.01).
_DEEPEVAL_MIN_LOGPROB = math.log(0.01)


@dataclass(frozen=True)
class ParsedScore:
    """A score located in the reply text: value and its character span."""

    value: float
    start: int
    end: int
    reason: str
    text: str = ""  # the number as written in the reply ("7", "7.0")


def parse_reply(text: str, prompt: str | None = None) -> ParsedScore:
    """Find the score in a reply; raise :class:`UnparseableReplyError` when there is none.

    The ``"score"`` (a number, or a string holding one) of the last top-level JSON object
    that has one; with no JSON object in the reply, a number the reply starts with. Text
    repeating ``prompt``'s delimited blocks is not read.
    """
    # <think> blocks and copies of the prompt's blocks become spaces: offsets stay aligned
    visible = _blank_echoes(_blank_spans(text, reasoning_spans(text)), prompt)
    found = last_scored_object(visible)
    if found is None:
        match = _LEADING_NUMBER.search(visible)
        if match is None:
            raise UnparseableReplyError(f"no score in judge reply: {_preview(text)}")
        return _checked(float(match.group(1)), match.start(1), match.end(1), "", text)
    payload, start, end = found
    reason = payload.get(REASON_FIELD)
    # a JSON escape can spell a lone surrogate, which neither sqlite nor JSON output takes
    reason = replace_lone_surrogates(reason.strip()) if isinstance(reason, str) else ""
    span = _field_value_span(visible, start, end, SCORE_FIELD)
    value = payload.get(SCORE_FIELD)
    if span is None:
        raise UnparseableReplyError(f"no score field in judge reply: {_preview(text)}")
    value_start, value_end = span
    if isinstance(value, str):
        number = _NUMBER_TEXT.fullmatch(value.strip())
        if number is None or visible[value_start + 1:value_end - 1] != value:
            raise UnparseableReplyError(f"judge score {value!r} is not a number: "
                                        f"{_preview(text)}")
        # the digits inside the quotes (the string has no escapes: it equals its source)
        offset = value_start + 1 + value.index(number.group())
        return _checked(float(number.group()), offset, offset + len(number.group()), reason,
                        text)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UnparseableReplyError(f"judge score {value!r} is not a number: {_preview(text)}")
    return _checked(float(value), value_start, value_end, reason, text)


def last_scored_object(text: str) -> tuple[dict, int, int] | None:
    """The last top-level JSON object in ``text`` with a ``"score"`` key, with its start
    and end offsets. None when ``text`` holds no JSON object at all; when it holds objects
    but none with a score, the last object (whose missing score makes the reply unreadable).

    The objects not inside another are read left to right. Linear: a found object is
    skipped whole, and after :data:`MAX_BROKEN_OBJECT_STARTS` starts that decode to nothing
    the reply is unreadable.
    """
    chosen = None
    broken = 0
    position = 0
    while (match := _OBJECT_START.search(text, position)) is not None:
        start = match.start()
        try:
            payload, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            broken += 1
            if broken >= MAX_BROKEN_OBJECT_STARTS:
                raise UnparseableReplyError(
                    f"judge reply has {broken} or more broken JSON objects: "
                    f"{_preview(text)}") from None
            position = start + 1
            continue
        if chosen is None or SCORE_FIELD in payload or SCORE_FIELD not in chosen[0]:
            chosen = (payload, start, end)
        position = end
    return chosen


def _field_value_span(text: str, start: int, end: int, field: str) -> tuple[int, int] | None:
    """Offsets of the value of the object's top-level key ``field`` in ``text[start:end]``
    (the last one when the key is repeated, as ``json.loads`` keeps the last)."""
    found = None
    position = start + 1
    while position < end:
        position = _skip_whitespace(text, position)
        if text[position] == "}":
            break
        key, position = _DECODER.raw_decode(text, position)  # a valid object: keys are strings
        position = _skip_whitespace(text, position) + 1  # past ":"
        value_start = _skip_whitespace(text, position)
        _, value_end = _DECODER.raw_decode(text, value_start)
        if key == field:
            found = (value_start, value_end)
        position = _skip_whitespace(text, value_end)
        if text[position] == ",":
            position += 1
    return found


def _skip_whitespace(text: str, position: int) -> int:
    while position < len(text) and text[position] in _JSON_WHITESPACE:
        position += 1
    return position


def _checked(value: float, start: int, end: int, reason: str, text: str) -> ParsedScore:
    if not SCORE_MIN <= value <= SCORE_MAX:
        raise UnparseableReplyError(
            f"judge score {value:g} outside {SCORE_MIN}..{SCORE_MAX}: {_preview(text)}")
    return ParsedScore(value=value, start=start, end=end, reason=reason, text=text[start:end])


def judge_reply(completion: JudgeCompletion, weighting: str = DEFAULT_JUDGE_WEIGHTING,
                prompt: str | None = None) -> JudgeResult:
    """The judgement in a completion, probability-weighted by ``weighting`` when it can be;
    ``prompt`` (the one sent) marks the text a reply may copy from it."""
    if weighting not in JUDGE_WEIGHTINGS:
        raise ValueError(f"judge weighting must be one of {', '.join(JUDGE_WEIGHTINGS)}; "
                         f"got {weighting!r}")
    parsed = parse_reply(completion.text, prompt)
    if completion.token_logprobs:
        if weighting == WEIGHTING_DEEPEVAL:
            weighted = deepeval_weighted_score(completion.token_logprobs, parsed.text)
        else:
            weighted = _weighted_score(completion.token_logprobs, parsed, prompt)
        if weighted is not None:
            return JudgeResult.judged(weighted, True, parsed.reason)
    return JudgeResult.judged(parsed.value, False, parsed.reason)


def deepeval_weighted_score(tokens: list[TokenLogprobs], score_text: str) -> float | None:
    """DeepEval's G-Eval weighted summed score, or None where DeepEval falls back to the
    parsed score (no token equals ``score_text``, or no alternative survives the filter).

    The first token whose text is exactly ``score_text`` (``"7"``; not ``" 7"``, and a
    ``"10"`` generated as ``"1"`` + ``"0"`` is not found there) is read; of its top
    alternatives, those under 1 % probability and those that are not decimal digits are
    dropped; the rest give ``sum p*int(t) / sum p``. As in DeepEval the values are not
    limited to 0..10 (an alternative ``"90"`` above 1 % counts as 90).
    """
    entry = next((token for token in tokens if token.token == score_text), None)
    if entry is None:
        return None
    alternatives = entry.alternatives or tuple(entry.top.items())
    return _expectation((int(text), logprob) for text, logprob in alternatives
                        if text.isdecimal() and logprob is not None
                        and not math.isnan(logprob) and logprob >= _DEEPEVAL_MIN_LOGPROB)


def score_of_token(token: str) -> int | None:
    """The integer 0..10 a token stands for (" 7", "7,", ":7"), or None."""
    stripped = token.strip(_TOKEN_PUNCTUATION)
    if not stripped.isascii() or not stripped.isdigit() or len(stripped) > 2:
        return None
    value = int(stripped)
    return value if SCORE_MIN <= value <= SCORE_MAX else None


def weighted_mean(top: Mapping[str, float] | None) -> float | None:
    """sum p(s)*s / sum p(s) over the integer alternatives; None when there are none."""
    return _expectation((score_of_token(token), logprob) for token, logprob in (top or {}).items()
                        if logprob is not None and not math.isnan(logprob))


def _expectation(alternatives: Iterable[tuple[int | None, float]]) -> float | None:
    """sum p*v / sum p over ``(v, log p)`` pairs (v None: not a score, left out); None
    when no probability is left."""
    mass: dict[int, float] = {}
    for value, logprob in alternatives:
        if value is not None:
            mass[value] = mass.get(value, 0.0) + math.exp(logprob)
    total = sum(mass.values())
    if total <= 0.0:
        return None
    return sum(value * probability for value, probability in mass.items()) / total


def token_logprobs(
    token: str, logprob: float | None, alternatives: Iterable[tuple[str, float | None]]
) -> TokenLogprobs:
    """Build one token's entry from a backend's (token, logprob) top alternatives.

    In ``top``, alternatives that decode to the same string share one entry (probabilities
    add) and the generated token itself is included when the backend left it out of the top
    list; ``alternatives`` keeps the backend's list unmerged (what DeepEval's rule reads).
    """
    top: dict[str, float] = {}
    kept: list[tuple[str, float]] = []
    for alternative, alternative_logprob in alternatives:
        if alternative_logprob is None or math.isnan(alternative_logprob):
            continue
        kept.append((alternative, alternative_logprob))
        if alternative in top:
            top[alternative] = math.log(math.exp(top[alternative]) + math.exp(alternative_logprob))
        else:
            top[alternative] = alternative_logprob
    if token not in top and logprob is not None and not math.isnan(logprob):
        top[token] = logprob
    return TokenLogprobs(token=token, top=top, alternatives=tuple(kept))


def _weighted_score(tokens: list[TokenLogprobs], parsed: ParsedScore,
                    prompt: str | None = None) -> float | None:
    """Weighted score at the token that carries the parsed score, if it carries all of it."""
    joined = "".join(token.token for token in tokens)
    try:
        located = parse_reply(joined, prompt)
    except UnparseableReplyError:
        return None
    if located.value != parsed.value or not parsed.value.is_integer():
        return None
    position = 0
    for token in tokens:
        token_end = position + len(token.token)
        if position <= located.start < token_end:
            # The whole number must sit in this one token ("10" split as "1","0" cannot be weighted).
            if located.end > token_end or score_of_token(token.token) != int(parsed.value):
                return None
            top = dict(token.top) if token.top else {token.token: 0.0}
            return weighted_mean(top)
        position = token_end
    return None


def _blank_echoes(text: str, prompt: str | None) -> str:
    """``text`` with what it copies of ``prompt``'s delimited blocks blanked (offsets stay
    aligned): a verdict the output under evaluation carries is not the judge's."""
    found = delimited_blocks(prompt) if prompt else None
    if found is None:
        return text
    length, blocks = found
    spans = []
    for opening in re.finditer(f"<{{{length},}}", text):
        close = text.find(">" * length, opening.end())
        spans.append((opening.start(), len(text) if close < 0 else close + length))
    for block in blocks:
        if "{" not in block:
            continue  # a copy without a brace holds no object to mistake for a verdict
        start = text.find(block)
        while start >= 0:
            spans.append((start, start + len(block)))
            start = text.find(block, start + len(block))
    return _blank_spans(text, spans)


def _blank_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    characters = list(text)
    for start, end in spans:
        characters[start:end] = " " * (end - start)
    return "".join(characters)


def _preview(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")
