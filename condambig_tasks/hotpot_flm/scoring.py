"""One example's scores: HotpotQA answer F1 / EM on x_i, x_r and x_c (pure, no model).

The answer metrics are ``hotpot_evaluate_v1.py``'s (Yang et al., 2018) F1 and normalised
EM, and the authors' raw-string EM (Toles et al.'s tables), through
:mod:`condambig_metrics.hotpot_flm`; the corpus numbers (recovery, MFRR, improved rate)
come from these rows in :func:`condambig_metrics.hotpot_flm.summarise`.
"""

from __future__ import annotations

from collections.abc import Mapping

from condambig_metrics.hotpot_flm import CONTEXTS, answer_em, answer_em_raw, answer_f1
from condambig_tasks.hotpot_flm.records import FlmExample


def score_row(
    example: FlmExample, answers: Mapping[str, str], masked_returned: bool,
) -> dict[str, float]:
    """``f1_<context>`` / ``em_<context>`` (normalised) / ``em_raw_<context>`` (raw strings)
    of the downstream answers, and whether f* came back."""
    row = {}
    for context in CONTEXTS:
        row[f"f1_{context}"] = answer_f1(answers[context], example.answer)
        row[f"em_{context}"] = answer_em(answers[context], example.answer)
        row[f"em_raw_{context}"] = answer_em_raw(answers[context], example.answer)
    row["masked_fact_returned"] = float(masked_returned)
    return row
