"""Text primitives shared by the benchmarks: answer normalisation and token F1, Markdown code
fences, and ``<think>`` reasoning traces.

Answers: the official scripts of SQuAD, HotpotQA, ConditionalQA, AmbigQA and CoQA share one
normalisation (lower-case, drop punctuation, drop the articles a/an/the, collapse
whitespace; Rajpurkar et al., 2016, SQuAD v1.1 ``evaluate-v1.1.py``) and one token F1. The
benchmark modules keep their scripts' own rules explicit on top of :func:`f1_from_tokens`
(HotpotQA's yes/no rule, the empty-answer rules of CoQA and SQuAD 2.0).

Fences and reasoning traces are found with ``str.find``-style scans, linear in the length of
the text (no backtracking regular expression over unbounded model output).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
# the scripts' ``"".join(ch for ch in text if ch not in exclude)`` as one C-level pass
_WITHOUT_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower-case, remove punctuation, articles and extra whitespace (SQuAD v1.1)."""
    text = text.lower()
    text = text.translate(_WITHOUT_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_tokens(text: str) -> list[str]:
    """Tokens of the normalised answer."""
    return normalize_answer(text).split()


def exact_match(prediction: str, reference: str) -> float:
    """1.0 when the normalised strings are equal."""
    return float(normalize_answer(prediction) == normalize_answer(reference))


def f1_from_tokens(predicted_tokens: Sequence[str], gold_tokens: Sequence[str]) -> float:
    """Token F1 over already-normalised token lists (multiset overlap, SQuAD ``f1_score``).

    0.0 when nothing overlaps, which includes either side being empty: the scripts that
    score empty answers differently check that before calling this.
    """
    overlap = sum((Counter(predicted_tokens) & Counter(gold_tokens)).values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(predicted_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD token F1 between two answers (0.0 when either side has no token)."""
    return f1_from_tokens(answer_tokens(prediction), answer_tokens(reference))


# --- Markdown code fences -------------------------------------------------------------------

FENCE = "```"


@dataclass(frozen=True)
class CodeFence:
    """One fenced block: the text after its opening ``` (language tag included) up to its
    closing ``` or, for an unclosed last fence, to the end of the text."""

    body: str
    closed: bool


def code_fences(text: str) -> list[CodeFence]:
    """The fenced blocks of ``text`` in order; each closing ``` ends the block it closes."""
    fences: list[CodeFence] = []
    position = 0
    while (opening := text.find(FENCE, position)) != -1:
        start = opening + len(FENCE)
        closing = text.find(FENCE, start)
        if closing == -1:
            fences.append(CodeFence(text[start:], closed=False))
            break
        fences.append(CodeFence(text[start:closing], closed=True))
        position = closing + len(FENCE)
    return fences


def without_language_tag(body: str, tags: Iterable[str]) -> str:
    """``body`` minus its leading language tag: the first of ``tags`` it starts with."""
    for tag in tags:
        if body.startswith(tag):
            return body[len(tag):]
    return body


def unwrap_code_fence(text: str) -> str | None:
    """The inside of a reply that is one fenced block (optional ``json`` tag, any case),
    stripped; None when the stripped reply does not start and end with a fence."""
    candidate = text.strip()
    if len(candidate) < 2 * len(FENCE) or not (
        candidate.startswith(FENCE) and candidate.endswith(FENCE)
    ):
        return None
    inner = candidate[len(FENCE):-len(FENCE)]
    if inner[:4].casefold() == "json":
        inner = inner[4:]
    return inner.strip()


# --- lone surrogates ------------------------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(text: str) -> str:
    """``text`` with each surrogate code point (U+D800-U+DFFF) replaced by U+FFFD.

    Decoded text never holds them (a surrogate pair is one character in Python), but model
    output can: they cannot be encoded as UTF-8, so tokenizers and HTTP clients fail on them.
    Linear: one encoding check, and one character-class substitution when it fails.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


# --- <think> reasoning traces ---------------------------------------------------------------

THINK_OPEN = re.compile(re.escape("<think>"), re.IGNORECASE)
THINK_CLOSE = re.compile(re.escape("</think>"), re.IGNORECASE)


def reasoning_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each closed ``<think>...</think>`` block, tags included (any case).

    Each block runs from an opening tag to the first closing tag after it; an opening tag
    with no closing tag after it starts no block.
    """
    spans: list[tuple[int, int]] = []
    position = 0
    while (opening := THINK_OPEN.search(text, position)) is not None:
        closing = THINK_CLOSE.search(text, opening.end())
        if closing is None:
            break
        spans.append((opening.start(), closing.end()))
        position = closing.end()
    return spans


def strip_reasoning(text: str) -> str:
    """Drop ``<think>`` blocks; an unclosed one hides everything after it (no answer yet).

    A closing tag left after that (its opener was part of the prompt) hides everything
    before it. The result is stripped of surrounding whitespace.
    """
    pieces: list[str] = []
    position = 0
    for start, end in reasoning_spans(text):
        pieces.append(text[position:start])
        position = end
    pieces.append(text[position:])
    text = "".join(pieces)
    closings = list(THINK_CLOSE.finditer(text))
    if closings:
        text = text[closings[-1].end():]
    opened = THINK_OPEN.search(text)
    if opened:
        text = text[: opened.start()]
    return text.strip()
