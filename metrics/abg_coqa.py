"""Abg-CoQA metrics (Guo et al., 2021; CoQA's official ``evaluate-v1.0.py``, Reddy et al., 2019).

* Answers: CoQA's official F1 (SQuAD normalisation; when either side has no token, 1.0 iff
  both have none) with CoQA's leave-one-out averaging over n references: for each reference,
  the maximum F1 against the *other* references, averaged over the n choices (n = 3 for
  clarified QA; with a single reference, plain F1).
* Ambiguity detection: precision / recall / F1 of the "ambiguous" class (0.0 when undefined,
  e.g. precision with no positive prediction).
* Clarification questions: corpus BLEU-1..4 (0-100) with sacreBLEU against one or two
  reference questions per turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from condambig_metrics.text import answer_tokens, f1_from_tokens


def coqa_tokens(text: str) -> list[str]:
    """CoQA's ``get_tokens``: normalised tokens, none for an empty (or missing) answer."""
    return answer_tokens(text) if text else []


def coqa_f1(reference: str, prediction: str) -> float:
    """CoQA's ``compute_f1``: token F1, except that empty vs empty scores 1.0."""
    gold, predicted = coqa_tokens(reference), coqa_tokens(prediction)
    if not gold or not predicted:
        return float(gold == predicted)
    return f1_from_tokens(predicted, gold)


def leave_one_out_f1(references: Sequence[str], prediction: str) -> float:
    """CoQA's turn F1: mean over references left out of the max F1 against the others."""
    if not references:
        raise ValueError("leave_one_out_f1 needs at least one reference answer")
    if len(references) == 1:
        return coqa_f1(references[0], prediction)
    total = 0.0
    for left_out in range(len(references)):
        others = [ref for index, ref in enumerate(references) if index != left_out]
        total += max(coqa_f1(ref, prediction) for ref in others)
    return total / len(references)


@dataclass(frozen=True)
class DetectionScores:
    """Precision, recall and F1 of the ambiguous class, with the counts behind them."""

    precision: float
    recall: float
    f1: float
    true_positives: int
    predicted_ambiguous: int
    gold_ambiguous: int


def detection_scores(predicted_ambiguous: Sequence[bool], gold_ambiguous: Sequence[bool]) -> DetectionScores:
    """Binary P/R/F1 of "ambiguous"; an undefined ratio (0/0) is reported as 0.0."""
    if len(predicted_ambiguous) != len(gold_ambiguous):
        raise ValueError("detection_scores: predictions and references differ in length")
    true_positives = sum(p and g for p, g in zip(predicted_ambiguous, gold_ambiguous, strict=True))
    n_predicted, n_gold = sum(map(bool, predicted_ambiguous)), sum(map(bool, gold_ambiguous))
    precision = true_positives / n_predicted if n_predicted else 0.0
    recall = true_positives / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return DetectionScores(precision, recall, f1, true_positives, n_predicted, n_gold)


BLEU_ORDERS = (1, 2, 3, 4)


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> dict[str, float]:
    """Corpus BLEU-1..4 (cumulative, 0-100; sacreBLEU 13a tokenisation, cased, exp smoothing).

    ``references[i]`` holds one or more reference questions for ``hypotheses[i]``.
    Returns ``{"bleu1": ..., "bleu4": ...}``; all 0.0 for an empty corpus.
    """
    from sacrebleu.metrics import BLEU

    if len(hypotheses) != len(references):
        raise ValueError("corpus_bleu: hypotheses and references differ in length")
    if not hypotheses:
        return {f"bleu{order}": 0.0 for order in BLEU_ORDERS}
    if any(not refs for refs in references):
        raise ValueError("corpus_bleu: every hypothesis needs at least one reference")
    width = max(len(refs) for refs in references)
    streams = [[refs[k] if k < len(refs) else None for refs in references] for k in range(width)]
    return {
        f"bleu{order}": float(BLEU(max_ngram_order=order).corpus_score(list(hypotheses), streams).score)
        for order in BLEU_ORDERS
    }


def bleu_statistics(hypotheses: Sequence[str],
                    references: Sequence[Sequence[str]]) -> list[list[int]]:
    """Each hypothesis's sacreBLEU sufficient statistics ``[hypothesis length, closest
    reference length, correct 1..4-grams, total 1..4-grams]``: their sums give
    :func:`corpus_bleu` through :func:`bleu_from_statistics` (what sacreBLEU's own
    bootstrap resamples, ``sacrebleu/significance.py``)."""
    from sacrebleu.metrics import BLEU

    if len(hypotheses) != len(references):
        raise ValueError("bleu_statistics: hypotheses and references differ in length")
    if not hypotheses:
        return []
    width = max(len(refs) for refs in references)
    streams = [[refs[k] if k < len(refs) else None for refs in references] for k in range(width)]
    bleu = BLEU(max_ngram_order=max(BLEU_ORDERS))
    return [list(map(int, row)) for row in
            bleu._extract_corpus_statistics(list(hypotheses), streams)]


def bleu_from_statistics(totals: Sequence[float]) -> dict[str, float]:
    """Corpus BLEU-1..4 from the summed :func:`bleu_statistics` of a corpus."""
    from sacrebleu.metrics import BLEU

    top = max(BLEU_ORDERS)
    counts = [int(round(value)) for value in totals]
    correct, total = counts[2: 2 + top], counts[2 + top: 2 + 2 * top]
    return {f"bleu{order}": float(BLEU.compute_bleu(
        correct[:order], total[:order], counts[0], counts[1], smooth_method="exp",
        max_ngram_order=order).score) for order in BLEU_ORDERS}
