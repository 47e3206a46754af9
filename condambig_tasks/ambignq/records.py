"""The typed AmbigNQ record every loader produces (annotation types live with the metrics)."""

from __future__ import annotations

from dataclasses import dataclass

from condambig_metrics.ambignq import (
    Annotation,
    GoldQAPair,
    MultipleQAs,
    PredictedPair,
    SingleAnswer,
    is_multi,
)

__all__ = [
    "AmbigNQQuestion", "Annotation", "GoldQAPair", "MultipleQAs", "PredictedPair", "SingleAnswer",
]


@dataclass(frozen=True)
class AmbigNQQuestion:
    """One prompt question with its annotations (each annotator's answer or QA pairs)."""

    id: str
    question: str
    annotations: tuple[Annotation, ...]

    @property
    def is_multi(self) -> bool:
        """Every annotation has several QA pairs (the official script's "multi" subset)."""
        return is_multi(self.annotations)

    @property
    def has_multiple_qa_pairs(self) -> bool:
        """At least one annotator found several interpretations."""
        return any(isinstance(a, MultipleQAs) and len(a.pairs) > 1 for a in self.annotations)
