"""AmbigNQ metrics, as the official ``ambigqa_evaluate_script.py`` (shmsw25/AmbigQA) computes them.

* ``F1 answer``: answers match when their SQuAD-normalised strings are equal to any acceptable
  string of a gold answer; predicted and gold answers are paired greedily one to one (gold
  answers in order, each taking the first unused matching prediction); F1 of that pairing; per
  question the maximum over its annotations. Reported on all questions and on "multi"
  questions (every annotation is ``multipleQAs``).
* ``F1 bleu1..4`` / ``F1 edit-f1`` (multi questions, predictions with questions): every (gold
  pair, predicted pair) whose answers match gets a question-similarity score; pairs are taken
  greedily by descending score without reuse; F1 = 2 * sum(score) / (#gold + #predicted).
  BLEU is between the disambiguated questions; EDIT-F1 is the F1 between the added/deleted
  unigrams of the gold and the predicted rewrite relative to the prompt question.

Differences from the official script (which needs Java): questions are tokenised by the rules
of NLTK's ``TreebankWordTokenizer`` (:func:`ptb_tokens`) instead of Stanford's PTBTokenizer, and BLEU is NLTK's
``corpus_bleu`` (computed here on n-gram counts made once per question; the tests check it
equals NLTK's own) with a smoothing that adds pycocoevalcap's epsilons (1e-15 / 1e-9)
instead of pycocoevalcap's ``Bleu``. Answer F1 does not involve either and is identical; see the task README for the
(small) effects on the question metrics.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from condambig_metrics.text import normalize_answer

QUESTION_METRICS = ("f1_bleu1", "f1_bleu2", "f1_bleu3", "f1_bleu4", "f1_edit_f1")
"""Question-similarity metric names, in output order (the official ``F1 bleu1`` ... ``F1 edit-f1``)."""

# pycocoevalcap's PTBTokenizer drops these tokens after tokenising.
_PTB_PUNCTUATION = frozenset(
    ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-",
     "--", "...", ";", "(", ")", "{", "}", "[", "]"]
)
# Stanford's tokenizer rewrites typographic quotes to ASCII ones (then dropped); NLTK does not.
_ASCII_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})


@dataclass(frozen=True)
class SingleAnswer:
    """A ``singleAnswer`` annotation: one answer given as a list of acceptable strings."""

    answers: tuple[str, ...]


@dataclass(frozen=True)
class GoldQAPair:
    """One disambiguated question (``|`` separates alternative phrasings) and its answers."""

    question: str
    answers: tuple[str, ...]


@dataclass(frozen=True)
class MultipleQAs:
    """A ``multipleQAs`` annotation: several disambiguated question-answer pairs."""

    pairs: tuple[GoldQAPair, ...]


Annotation = SingleAnswer | MultipleQAs


@dataclass(frozen=True)
class PredictedPair:
    """One predicted answer, with its disambiguated question (None: answers-only prediction)."""

    answer: str
    question: str | None = None


@dataclass(frozen=True)
class QuestionScores:
    """Per-question scores; question metrics are None when they were not computed."""

    is_multi: bool
    f1_answer: float
    f1_bleu1: float | None = None
    f1_bleu2: float | None = None
    f1_bleu3: float | None = None
    f1_bleu4: float | None = None
    f1_edit_f1: float | None = None

    def question_metric(self, name: str) -> float | None:
        return getattr(self, name)


def is_multi(annotations: Sequence[Annotation]) -> bool:
    """The official "multi" subset: no annotation is ``singleAnswer``."""
    return not any(isinstance(annotation, SingleAnswer) for annotation in annotations)


_normalised_answer = lru_cache(maxsize=65536)(normalize_answer)
"""``normalize_answer`` once per string: every gold answer is compared with every prediction."""


def answer_matches(acceptable: Sequence[str], prediction: str) -> bool:
    """True when the prediction equals any acceptable string after normalisation."""
    normalised = _normalised_answer(prediction)
    return any(_normalised_answer(candidate) == normalised for candidate in acceptable)


def greedy_set_f1(
    gold: Sequence[object], predicted: Sequence[object], is_equal: Callable[[object, object], bool]
) -> float:
    """The official ``get_f1``: greedy one-to-one matching in order, then F1 of the pairing.

    Each gold item, in order, takes the first still-unused predicted item equal to it.
    Returns 0.0 when either side is empty (the official script asserts instead).
    """
    if not gold or not predicted:
        return 0.0
    used_predictions = [False] * len(predicted)
    matched = 0
    for gold_item in gold:
        for index, prediction in enumerate(predicted):
            if not used_predictions[index] and is_equal(gold_item, prediction):
                used_predictions[index] = True
                matched += 1
                break
    recall, precision = matched / len(gold), matched / len(predicted)
    if recall + precision == 0:
        return 0.0
    return 2 * recall * precision / (recall + precision)


def answer_set_f1(gold_answers: Sequence[Sequence[str]], predictions: Sequence[str]) -> float:
    """F1 between gold answers (each a list of acceptable strings) and predicted answers."""
    return greedy_set_f1(gold_answers, predictions, lambda g, p: answer_matches(g, p))


# The Penn Treebank tokenizer's rules (Robert MacIntyre's tokenizer.sed), in the order and
# form NLTK's ``TreebankWordTokenizer.tokenize`` applies them (nltk.tokenize.treebank, 3.9),
# compiled with the standard library: NLTK 3.9 runs every pattern through a wall-clock
# ReDoS timer (``nltk.redos``; 1.8x slower here) and importing ``nltk`` pulls in
# ``scipy.stats`` (~1.6 s per process). tests/ambignq/test_ptb_tokens.py checks the tokens
# equal NLTK's on the fixture, on random text and on every real dev question.
_PTB_BEFORE_PADDING = tuple((re.compile(pattern), replacement) for pattern, replacement in (
    (r'^"', "``"),  # starting quotes
    (r"(``)", r" \1 "),
    (r"([ \(\[{<])(\"|\'{2})", r"\1 `` "),
    (r"([:,])([^\d])", r" \1 \2"),  # punctuation
    (r"([:,])$", r" \1 "),
    (r"\.\.\.", " ... "),
    (r"[;@#$%&]", r" \g<0> "),
    (r"([^\.])(\.)([\]\)}>\"\']*)\s*$", r"\1 \2\3 "),
    (r"[?!]", r" \g<0> "),
    (r"([^'])' ", r"\1 ' "),
    (r"[\]\[\(\)\{\}\<\>]", r" \g<0> "),  # parentheses and brackets
    (r"--", " -- "),  # double dashes
))
_PTB_AFTER_PADDING = tuple((re.compile(pattern, flags), replacement)
                           for pattern, flags, replacement in (
    ("''", 0, " '' "),  # ending quotes
    ('"', 0, " '' "),
    (r"([^' ])('[sS]|'[mM]|'[dD]|') ", 0, r"\1 \2 "),
    (r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", 0, r"\1 \2 "),
    *((rf"\b({left})({right}){end}", re.IGNORECASE, r" \1 \2 ")  # contractions
      for left, right, end in (("can", "not", r"\b"), ("d", "'ye", r"\b"), ("gim", "me", r"\b"),
                               ("gon", "na", r"\b"), ("got", "ta", r"\b"), ("lem", "me", r"\b"),
                               ("more", "'n", r"\b"), ("wan", "na", r"(?=\s)"))),
    *((rf" ('t)({right})\b", re.IGNORECASE, r" \1 \2 ") for right in ("is", "was")),
))


def ptb_tokens(text: str) -> list[str]:
    """Penn Treebank tokens of ``text``, as NLTK's ``TreebankWordTokenizer().tokenize``."""
    for pattern, replacement in _PTB_BEFORE_PADDING:
        text = pattern.sub(replacement, text)
    text = f" {text} "
    for pattern, replacement in _PTB_AFTER_PADDING:
        text = pattern.sub(replacement, text)
    return text.split()


@lru_cache(maxsize=65536)
def normalize_question(text: str) -> str:
    """PTB-tokenise, lower-case, drop punctuation tokens, then SQuAD-normalise (as the script)."""
    tokens = ptb_tokens(text.translate(_ASCII_QUOTES).lower())
    kept = " ".join(token for token in tokens if token not in _PTB_PUNCTUATION)
    return normalize_answer(kept)


def question_edits(prompt_tokens: Sequence[str], question_tokens: Sequence[str]) -> list[str]:
    """Deleted and added unigrams of a rewrite relative to the prompt (multiset difference)."""
    remaining_prompt = list(prompt_tokens)
    remaining_question = list(question_tokens)
    for token in list(remaining_question):
        if token in remaining_prompt:
            remaining_prompt.remove(token)
            remaining_question.remove(token)
    return [f"[DELETED]{t}" for t in remaining_prompt] + [f"[ADDED]{t}" for t in remaining_question]


@lru_cache(maxsize=65536)
def _edits(prompt: str, question: str) -> tuple[str, ...]:
    """:func:`question_edits` of two normalised questions, once per (prompt, question):
    a gold rewrite is compared with every predicted pair whose answer matches it."""
    return tuple(question_edits(prompt.split(" "), question.split(" ")))


def edit_f1(prompt: str, predicted: str, references: Sequence[str]) -> float:
    """EDIT-F1 of a predicted rewrite against gold rewrites (all normalised), max over references.

    1.0 when neither the reference nor the prediction edits the prompt; 0.0 when only one does.
    """
    predicted_edits = _edits(prompt, predicted)
    best = 0.0
    for reference in references:
        reference_edits = _edits(prompt, reference)
        if not reference_edits and not predicted_edits:
            best = max(best, 1.0)
        elif reference_edits and predicted_edits:
            best = max(best, greedy_set_f1(predicted_edits, reference_edits, lambda a, b: a == b))
    return best


_BLEU_WEIGHTS = [(1.0,), (0.5, 0.5), (1 / 3, 1 / 3, 1 / 3), (0.25, 0.25, 0.25, 0.25)]
_BLEU_ORDERS = len(_BLEU_WEIGHTS)


@dataclass(frozen=True)
class _Ngrams:
    """A normalised question's length and n-gram counts (n = 1..4)."""

    length: int
    counts: tuple[dict[tuple[str, ...], int], ...]


@lru_cache(maxsize=65536)
def _ngrams(text: str) -> _Ngrams:
    """Once per question text: a gold phrasing is the reference of every predicted pair
    whose answer matches it, a predicted question the hypothesis of every gold pair."""
    tokens = text.split()
    counts = []
    for n in range(1, _BLEU_ORDERS + 1):
        found: dict[tuple[str, ...], int] = {}
        for start in range(len(tokens) - n + 1):
            ngram = tuple(tokens[start:start + n])
            found[ngram] = found.get(ngram, 0) + 1
        counts.append(found)
    return _Ngrams(len(tokens), tuple(counts))


def question_bleu(predicted: str, references: Sequence[str]) -> tuple[float, float, float, float]:
    """Sentence BLEU-1..4 (cumulative, closest reference length) between normalised questions.

    NLTK's ``corpus_bleu`` over one hypothesis, smoothed by adding pycocoevalcap's epsilons
    (1e-15 / 1e-9) to every n-gram precision's numerator / denominator, step for step (``modified_precision``, ``closest_ref_length``, ``brevity_penalty``; the same
    integer counts and float operations, so the same numbers), on n-gram counts computed
    once per question text instead of once per (gold, predicted) pair."""
    hypothesis = _ngrams(predicted)
    reference_ngrams = [_ngrams(reference) for reference in references]
    if not hypothesis.length or not any(ref.length for ref in reference_ngrams):
        return (0.0, 0.0, 0.0, 0.0)
    numerators, denominators = [], []
    for order in range(_BLEU_ORDERS):
        counts = hypothesis.counts[order]
        matched = 0
        for ngram, count in counts.items():
            matched += min(count, max(ref.counts[order].get(ngram, 0)
                                      for ref in reference_ngrams))
        numerators.append(matched)
        denominators.append(max(1, sum(counts.values())))
    if numerators[0] == 0:  # NLTK returns a bare 0 when no unigram matches
        return (0.0, 0.0, 0.0, 0.0)
    hyp_len = hypothesis.length
    closest = min((ref.length for ref in reference_ngrams),
                  key=lambda ref_len: (abs(ref_len - hyp_len), ref_len))
    penalty = 1 if hyp_len > closest else math.exp(1 - closest / hyp_len)
    precisions = [(numerator + 1e-15) / (denominator + 1e-9)  # pycocoevalcap's epsilons
                  for numerator, denominator in zip(numerators, denominators, strict=True)]
    scores = []
    for weights in _BLEU_WEIGHTS:
        logs = (w * math.log(p) for w, p in zip(weights, precisions, strict=False) if p > 0)
        scores.append(float(penalty * math.exp(math.fsum(logs))))
    return tuple(scores)  # type: ignore[return-value]


def _question_similarities(prompt: str, predicted: str, references: Sequence[str]) -> dict[str, float]:
    bleu = question_bleu(predicted, references)
    return {
        "f1_bleu1": bleu[0], "f1_bleu2": bleu[1], "f1_bleu3": bleu[2], "f1_bleu4": bleu[3],
        "f1_edit_f1": edit_f1(prompt, predicted, references),
    }


def _greedy_similarity_f1(
    matches: list[tuple[int, int, dict[str, float]]], metric: str, n_gold: int, n_predicted: int
) -> float:
    """Take matching pairs by descending score (stable), without reuse; F1 of the sum."""
    ranked = sorted(matches, key=lambda match: match[2][metric], reverse=True)
    used_gold: set[int] = set()
    used_predicted: set[int] = set()
    total = 0.0
    for gold_index, predicted_index, similarities in ranked:
        if gold_index in used_gold or predicted_index in used_predicted:
            continue
        used_gold.add(gold_index)
        used_predicted.add(predicted_index)
        total += similarities[metric]
    return 2 * total / (n_gold + n_predicted)


def _gold_question_references(question: str) -> list[str]:
    """A gold question's phrasings (``|``-separated), normalised; empty phrasings dropped."""
    return [normalize_question(part.strip()) for part in question.split("|") if part.strip()]


def score_question(
    prompt_question: str,
    annotations: Sequence[Annotation],
    predictions: Sequence[PredictedPair],
    with_questions: bool = True,
) -> QuestionScores:
    """All metrics of one question: the maximum over its annotations, as the official script.

    Question metrics are computed for multi questions when ``with_questions`` (the official
    script decides this from the prediction format: question-answer pairs, not bare answers);
    a pair whose question is None is scored against the empty question. An empty prediction
    scores 0.0 on everything.
    """
    multi = is_multi(annotations)
    answers = [pair.answer for pair in predictions]
    best_answer = 0.0
    best_question: dict[str, float] = dict.fromkeys(QUESTION_METRICS, 0.0)
    normalised_prompt = normalize_question(prompt_question) if with_questions and multi else ""
    for annotation in annotations:
        if isinstance(annotation, SingleAnswer):
            best_answer = max(best_answer, answer_set_f1([annotation.answers], answers))
            continue
        gold_answers = [pair.answers for pair in annotation.pairs]
        best_answer = max(best_answer, answer_set_f1(gold_answers, answers))
        if not (with_questions and multi) or not answers:
            continue
        matches: list[tuple[int, int, dict[str, float]]] = []
        for gold_index, gold_pair in enumerate(annotation.pairs):
            references: list[str] | None = None
            for predicted_index, predicted in enumerate(predictions):
                if not answer_matches(gold_pair.answers, predicted.answer):
                    continue
                if references is None:
                    references = _gold_question_references(gold_pair.question)
                similarities = _question_similarities(
                    normalised_prompt, normalize_question(predicted.question or ""), references
                )
                matches.append((gold_index, predicted_index, similarities))
        for metric in QUESTION_METRICS:
            value = _greedy_similarity_f1(matches, metric, len(annotation.pairs), len(predictions))
            best_question[metric] = max(best_question[metric], value)
    if not (with_questions and multi):
        return QuestionScores(is_multi=multi, f1_answer=best_answer)
    return QuestionScores(is_multi=multi, f1_answer=best_answer, **best_question)


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else float("nan")


def aggregate(scores: Sequence[QuestionScores]) -> dict[str, float]:
    """Corpus numbers with the official names: answer F1 on all and multi questions, and the
    question metrics on multi questions (keys absent when no multi question has them)."""
    multi = [score for score in scores if score.is_multi]
    result = {
        "f1_answer_all": _mean([score.f1_answer for score in scores]),
        "f1_answer_multi": _mean([score.f1_answer for score in multi]),
    }
    for metric in QUESTION_METRICS:
        values = [score.question_metric(metric) for score in multi]
        present = [value for value in values if value is not None]
        if present:
            result[metric] = _mean(present)
    return result
