"""SQuAD-style answer normalisation, exact match and token F1.

The official scripts of SQuAD, HotpotQA, ConditionalQA, AmbigQA and CoQA share this
normalisation (lower-case, drop punctuation, drop the articles a/an/the, collapse
whitespace); the benchmark modules add their own rules on top (HotpotQA's yes/no rule,
CoQA's leave-one-out) and reuse these functions otherwise.
"""

from __future__ import annotations

import re
import string
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower-case, remove punctuation, articles and extra whitespace (SQuAD v1.1)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_tokens(text: str) -> list[str]:
    """Tokens of the normalised answer."""
    return normalize_answer(text).split()


def exact_match(prediction: str, reference: str) -> float:
    """1.0 when the normalised strings are equal."""
    return float(normalize_answer(prediction) == normalize_answer(reference))


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD token F1 between two answers (0.0 when either side has no token)."""
    predicted = answer_tokens(prediction)
    gold = answer_tokens(reference)
    common = Counter(predicted) & Counter(gold)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(predicted)
    recall = overlap / len(gold)
    return 2 * precision * recall / (precision + recall)
