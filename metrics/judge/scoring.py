"""Reading a score from a judge reply, weighted by token probabilities when available.

G-Eval (Liu et al., 2023) and DeepEval replace the sampled integer by its expectation
over the judge's distribution at the score token: ``sum p(s)*s / sum p(s)`` over the top
alternatives that are integers 0..10. Without logprobs the parsed integer is used.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from condambig_metrics.judge.errors import UnparseableReplyError
from condambig_metrics.judge.prompt import SCORE_MAX, SCORE_MIN
from condambig_metrics.judge.records import JudgeCompletion, TokenLogprobs
from condambig_metrics.text import reasoning_spans, unwrap_code_fence

# "score": 7 / 'score' = 7 / score: "7" / Score: 7/10 -- the first such key wins.
_SCORE_KEY = re.compile(r"""["']?\bscore\b["']?\s*[:=]\s*["']?(\d+(?:\.\d+)?)""", re.IGNORECASE)
# A reply that is just a number, or starts with one ("7", "7/10", "8 - mostly right").
_LEADING_NUMBER = re.compile(r"^\s*(\d+(?:\.\d+)?)(?![\d.])")
# Characters a tokenizer may glue to a digit ("7," or ":7"); stripped before reading a token.
_TOKEN_PUNCTUATION = " \t\r\n\"',.:;{}[]()"


@dataclass(frozen=True)
class ParsedScore:
    """A score located in the reply text: value and its character span."""

    value: float
    start: int
    end: int
    reason: str


@dataclass(frozen=True)
class Judgement:
    """What one reply yields: the 0..10 score (maybe weighted) and the stated reason."""

    raw_score: float
    weighted: bool
    reason: str


def parse_reply(text: str) -> ParsedScore:
    """Find the score in a reply; raise :class:`UnparseableReplyError` when there is none."""
    visible = _blank_reasoning(text)
    match = _SCORE_KEY.search(visible) or _LEADING_NUMBER.search(visible)
    if match is None:
        raise UnparseableReplyError(f"no score in judge reply: {_preview(text)}")
    value = float(match.group(1))
    if not SCORE_MIN <= value <= SCORE_MAX:
        raise UnparseableReplyError(
            f"judge score {match.group(1)} outside {SCORE_MIN}..{SCORE_MAX}: {_preview(text)}"
        )
    return ParsedScore(value=value, start=match.start(1), end=match.end(1),
                       reason=_reason(visible))


def judge_reply(completion: JudgeCompletion) -> Judgement:
    """The judgement in a completion: probability-weighted when the score token is found."""
    parsed = parse_reply(completion.text)
    if completion.token_logprobs:
        weighted = _weighted_score(completion.token_logprobs, parsed)
        if weighted is not None:
            return Judgement(raw_score=weighted, weighted=True, reason=parsed.reason)
    return Judgement(raw_score=parsed.value, weighted=False, reason=parsed.reason)


def score_of_token(token: str) -> int | None:
    """The integer 0..10 a token stands for (" 7", "7,", ":7"), or None."""
    stripped = token.strip(_TOKEN_PUNCTUATION)
    if not stripped.isascii() or not stripped.isdigit() or len(stripped) > 2:
        return None
    value = int(stripped)
    return value if SCORE_MIN <= value <= SCORE_MAX else None


def weighted_mean(top: Mapping[str, float] | None) -> float | None:
    """sum p(s)*s / sum p(s) over the integer alternatives; None when there are none."""
    mass: dict[int, float] = {}
    for token, logprob in (top or {}).items():
        value = score_of_token(token)
        if value is None or logprob is None or math.isnan(logprob):
            continue
        mass[value] = mass.get(value, 0.0) + math.exp(logprob)
    total = sum(mass.values())
    if total <= 0.0:
        return None
    return sum(value * probability for value, probability in mass.items()) / total


def token_logprobs(
    token: str, logprob: float | None, alternatives: Iterable[tuple[str, float | None]]
) -> TokenLogprobs:
    """Build one token's entry from a backend's (token, logprob) top alternatives.

    Alternatives that decode to the same string share one entry (probabilities add); the
    generated token itself is included when the backend left it out of the top list.
    """
    top: dict[str, float] = {}
    for alternative, alternative_logprob in alternatives:
        if alternative_logprob is None or math.isnan(alternative_logprob):
            continue
        if alternative in top:
            top[alternative] = math.log(math.exp(top[alternative]) + math.exp(alternative_logprob))
        else:
            top[alternative] = alternative_logprob
    if token not in top and logprob is not None and not math.isnan(logprob):
        top[token] = logprob
    return TokenLogprobs(token=token, top=top)


def _weighted_score(tokens: list[TokenLogprobs], parsed: ParsedScore) -> float | None:
    """Weighted score at the token that carries the parsed score, if it carries all of it."""
    joined = "".join(token.token for token in tokens)
    try:
        located = parse_reply(joined)
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


def _blank_reasoning(text: str) -> str:
    """``text`` with each ``<think>`` block replaced by as many spaces (offsets stay aligned)."""
    pieces: list[str] = []
    position = 0
    for start, end in reasoning_spans(text):
        pieces.append(text[position:start])
        pieces.append(" " * (end - start))
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def _reason(text: str) -> str:
    """The ``reason`` field of a JSON reply (fenced or not), else ''."""
    candidate = text.strip()
    fenced = unwrap_code_fence(candidate)
    if fenced is not None:
        candidate = fenced
    start, end = candidate.find("{"), candidate.rfind("}")
    if start == -1 or end <= start:
        return ""
    try:
        payload = json.loads(candidate[start:end + 1])
    except ValueError:
        return ""
    reason = payload.get("reason") if isinstance(payload, dict) else None
    return reason.strip() if isinstance(reason, str) else ""


def _preview(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")
