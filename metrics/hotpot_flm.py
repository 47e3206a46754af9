"""HotpotQA-FLM metrics: HotpotQA's official answer F1/EM, recovery, MFRR, improved rate.

Answer scoring follows ``hotpot_evaluate_v1.py`` (Yang et al., 2018): SQuAD normalisation
(shared with the other benchmarks through :mod:`condambig_metrics.text`), plus the rule
that a ``yes`` / ``no`` / ``noanswer`` prediction or reference scores F1 0 unless both
normalise to the same string. Beside that normalised EM, ``em_raw`` is the exact match the
authors' code (github.com/mtoles/qq) reported in Toles et al.'s tables: the decoded answer
and the gold answer compared as raw strings (``"Yes"`` vs ``"yes"`` is a miss). Corpus
numbers follow Toles et al. (§4.2): recovery is computed from the dataset means, not
averaged per example. The means are exact sums (``math.fsum``) divided by the count, and a
recovery is undefined when its gap R̄(x_c) − R̄(x_i) is within :data:`TIE_TOLERANCE` of 0:
two means that are equal in exact arithmetic can differ by one rounding step as floats, and
dividing by that step would report a recovery of ~1e17 percent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from condambig_metrics.text import exact_match, f1_from_tokens, normalize_answer

SPECIAL_ANSWERS = frozenset({"yes", "no", "noanswer"})

# |R̄(x_c) − R̄(x_i)| at or below this (means on 0–1) is a tie: the recovery is undefined.
# Far above float rounding of a mean (~1e-16), far below any gap a real run shows (1/n).
TIE_TOLERANCE = 1e-9

# The three contexts the downstream model answers on (paper: x^i, x^r, x^c).
CONTEXTS = ("incomplete", "response", "complete")
# Keys of one example's score row, shared by lm-eval, Inspect and condambig-score.
# em: HotpotQA's normalised exact match; em_raw: the authors' raw-string exact match.
ANSWER_METRICS = ("f1", "em", "em_raw")
ROW_KEYS = tuple(f"{metric}_{context}" for metric in ANSWER_METRICS for context in CONTEXTS) + (
    "masked_fact_returned",
)


def answer_f1(prediction: str, reference: str) -> float:
    """HotpotQA's official answer F1 (``f1_score`` of hotpot_evaluate_v1.py)."""
    predicted = normalize_answer(prediction)
    gold = normalize_answer(reference)
    if (predicted in SPECIAL_ANSWERS or gold in SPECIAL_ANSWERS) and predicted != gold:
        return 0.0
    return f1_from_tokens(predicted.split(), gold.split())


def answer_em(prediction: str, reference: str) -> float:
    """HotpotQA's official exact match (normalised strings equal)."""
    return exact_match(prediction, reference)


def answer_em_raw(prediction: str, reference: str) -> float:
    """The authors' exact match: 1.0 when the two strings are equal as they are (no case,
    punctuation, article or whitespace normalisation), else 0.0."""
    return float(prediction == reference)


def recovery(incomplete: float, response: float, complete: float) -> float:
    """ρ = 100·(R̄(x_r) − R̄(x_i)) / (R̄(x_c) − R̄(x_i)); NaN when x_c and x_i tie, i.e. the
    gap is within :data:`TIE_TOLERANCE` of 0 (undefined, not a huge number)."""
    gap = complete - incomplete
    if math.isnan(gap) or abs(gap) <= TIE_TOLERANCE:
        return math.nan
    return 100.0 * (response - incomplete) / gap


def _mean(values: Sequence[float]) -> float:
    """The exactly rounded sum over the count: the same rows in any order give one mean."""
    return math.fsum(values) / len(values) if values else math.nan


def summarise(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Corpus metrics from per-example rows holding :data:`ROW_KEYS`.

    F1/EM and rates are fractions in [0, 1]; ``f1_recovery`` / ``em_recovery`` /
    ``em_raw_recovery`` are percent, as the paper defines ρ (NaN when undefined).
    ``improved_rate`` is the share of examples with Δr = F1(x_r) − F1(x_i) > 0; ``mfrr``
    the share where the answering agent returned f*.
    """
    result: dict[str, float] = {key: _mean([float(r[key]) for r in rows]) for key in ROW_KEYS}
    for metric in ANSWER_METRICS:
        result[f"{metric}_recovery"] = recovery(
            result[f"{metric}_incomplete"], result[f"{metric}_response"],
            result[f"{metric}_complete"],
        )
    result["mfrr"] = result.pop("masked_fact_returned")
    result["improved_rate"] = _mean(
        [float(float(r["f1_response"]) > float(r["f1_incomplete"])) for r in rows]
    )
    return result
