"""CondAmbigQA metrics (Li et al., CondAmbigQA), as pure functions.

Citation score (eq. 1), greedy matching of generated pairs to gold properties, and the
authors' "balanced" scores: the three balanced parts and their mean, the combined score,
with its over/under-generation penalties, the balanced answer and citation of the settings
without generated conditions (Fig. 4), and the closed-book balanced answer score.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass


def citation_score(cited: Sequence[int], gold: Sequence[int],
                   invalid: Iterable[str] = ()) -> float:
    """|M ∩ G| / |M|; 0 when the model cited nothing (eq. 1: a precision).

    M holds the distinct cited fragment numbers and the distinct ``invalid`` entries
    (citations naming no existing fragment: "Fragment 25" of 20, "Fragment X",
    "Condition 1"). Eq. 1 counts every cited entry, and an invalid one is never in G, as in
    the authors' ``evaluate_citation_correctness`` (which keeps such entries in the set).
    """
    model = set(cited)
    size = len(model) + len(set(invalid))
    if not size:
        return 0.0
    return len(model & set(gold)) / size


@dataclass(frozen=True)
class MatchWeights:
    """Weights of the matching objective; a missing component has weight 0."""

    condition: float = 0.0
    answer: float = 0.0
    citation: float = 0.0


def greedy_match(
    generated_count: int,
    gold_count: int,
    pair_score: Callable[[int, int], float | tuple[float, ...]],
) -> list[tuple[int, int]]:
    """Match generated pairs (in generation order) each to the best unused gold property.

    ``pair_score(i, j)`` is the objective (a number, or a tuple compared lexicographically);
    ties keep the lower gold index. Generated pairs beyond the gold count stay unmatched.
    """
    used: set[int] = set()
    matches: list[tuple[int, int]] = []
    for i in range(generated_count):
        best_j, best = None, None
        for j in range(gold_count):
            if j in used:
                continue
            value = pair_score(i, j)
            if best is None or value > best:
                best_j, best = j, value
        if best_j is None:
            break
        used.add(best_j)
        matches.append((i, best_j))
    return matches


def _clip01(value: float) -> float:
    return min(1.0, max(0.0, value))


@dataclass(frozen=True)
class CombinedInputs:
    condition: float  # c: the question's mean condition score over matched pairs
    answer: float  # a
    citation: float  # t
    gold_count: int
    generated_count: int
    # k: mean over the generated pairs of the length of each pair's citation list as
    # written (every entry, repeated or invalid ones included), as the authors' table code
    # takes it
    mean_citations_per_pair: float


def quantity_factor(gold_count: int, generated_count: int, answer: float) -> float:
    """The count penalty of the authors' balanced score (constants from their release)."""
    n = max(gold_count, 1)
    d = generated_count - gold_count
    f = min(1.0, max(0.5, answer / 0.5))
    if n + d == 1 and n > 1:  # a single pair where several were expected
        return 0.1
    if d < 0:
        return 1.0 - min(abs(d) / n * 0.6 * (2 - f), 0.2)
    if d > 0:
        r = d / n
        p = min(0.3 * r, 0.15) if r > 1 else min(0.15 * r, 0.075)
        return 1.0 - p * (2 - f)
    return 1.0


@dataclass(frozen=True)
class BalancedParts:
    """One question's balanced condition, answer and citation scores (each in [0, 1])."""

    condition: float  # clip(c·F)
    answer: float  # clip(a·F)
    citation: float  # clip(q_cit·F)

    @property
    def combined(self) -> float:
        """The combined score: the mean of the three parts."""
        return (self.condition + self.answer + self.citation) / 3


def balanced_parts(inputs: CombinedInputs) -> BalancedParts:
    """clip(c·F), clip(a·F), clip(q_cit·F) with q_cit = t·(1 + 0.3·min(k, 3)) and
    F = 0.6·quality + 0.4·quantity, quality = 0.5·(c + a)/2 + 0.5·q_cit.

    The authors' table code computes these per question and reports their means as the
    condition, answer and citation columns of Table 2 (and their mean as Combined).
    """
    c, a, t = inputs.condition, inputs.answer, inputs.citation
    q_cit = t * (1 + 0.3 * min(inputs.mean_citations_per_pair, 3))
    quality = 0.5 * (c + a) / 2 + 0.5 * q_cit
    quantity = quantity_factor(inputs.gold_count, inputs.generated_count, a)
    factor = 0.6 * quality + 0.4 * quantity
    return BalancedParts(_clip01(c * factor), _clip01(a * factor), _clip01(q_cit * factor))


def combined_score(inputs: CombinedInputs) -> float:
    """mean(clip(c·F), clip(a·F), clip(q_cit·F)): the mean of :func:`balanced_parts`."""
    return balanced_parts(inputs).combined


def figure_balanced_parts(answer: float, citation: float, citations_per_pair: float,
                          expected_count: int, generated_count: int) -> BalancedParts:
    """The authors' figure rule for the settings without generated conditions (Fig. 4;
    ``calculate_balanced_scores`` in their ``visualization/comp_experiment_stats_viz.py``):
    :func:`balanced_parts` with a condition score of 0, so quality = 0.5·a/2 + 0.5·q_cit.

    ``expected_count`` is the count the penalty compares ``generated_count`` with: the gold
    count without conditions; with gold conditions the figure code takes it from the output's
    own pairs, so there the two are equal and the count penalty is 1.
    """
    return balanced_parts(CombinedInputs(
        condition=0.0, answer=answer, citation=citation, gold_count=expected_count,
        generated_count=generated_count, mean_citations_per_pair=citations_per_pair))


def closed_book_balanced_answer(answer_scores: Sequence[float], gold_count: int) -> float:
    """The authors' closed-book value of one question (Table 3; ``calculate_balanced_scores``
    in their ``core/pure_llm_experiment.py``): clip(a·(0.6·a + 0.4·quantity)).

    ``answer_scores`` holds one judged answer score per generated answer, 0 for an answer left
    without a gold property; a is their mean (0 without answers), and quantity is the main
    setting's count penalty with d = generated − gold. Unlike :func:`balanced_parts`, the
    quality term is a alone: the closed book has no condition or citation.
    """
    a = sum(answer_scores) / len(answer_scores) if answer_scores else 0.0
    quantity = quantity_factor(gold_count, len(answer_scores), a)
    return _clip01(a * (0.6 * a + 0.4 * quantity))
