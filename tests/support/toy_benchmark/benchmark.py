"""Toy benchmark: name the capital of a country, as ``Answer: <city>``.

Three metrics, one of each aggregation: ``exact_match`` (MEAN over all items),
``unanswered`` (SUM: outputs without a readable answer) and ``precision`` (CORPUS: correct
answers over answered items, computed in ``corpus_values`` from the details).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from condambig_tasks.benchmark import (
    CORPUS,
    SUM,
    Benchmark,
    MetricSpec,
    PredictionFiles,
    ScoredSample,
    Variant,
)

ITEMS_FILE = Path(__file__).with_name("capitals.json")
IGNORE_CASE = True
_ANSWER = re.compile(r"answer\s*:\s*([^\n]+)", re.IGNORECASE)


@dataclass(frozen=True)
class ToyOptions:
    ignore_case: bool = field(
        default=IGNORE_CASE, metadata={"help": "compare answers without regard to case"})


@dataclass(frozen=True)
class CapitalQuestion:
    id: str
    country: str
    capital: str


def parse_answer(output: str) -> str | None:
    """The city after the last ``Answer:``, or None when the output has none."""
    found = _ANSWER.findall(output)
    answer = found[-1].strip().strip(".!\"'").strip() if found else ""
    return answer or None


def _read_items(path: Any, options: ToyOptions) -> list[CapitalQuestion]:
    return [CapitalQuestion(str(row["id"]), row["country"], row["capital"])
            for row in json.loads(Path(path).read_text("utf-8"))]


class Toy(Benchmark[ToyOptions, CapitalQuestion]):
    name = "toy"
    title = "Toy capitals"
    version = "1-A"
    options_type = ToyOptions
    variants = (
        Variant("toy", "capitals, compared without regard to case"),
        Variant("toy_case_sensitive", "capitals, compared with case", {"ignore_case": False}),
    )
    metric_specs = (
        MetricSpec("exact_match", "answer equals the capital"),
        MetricSpec("unanswered", "outputs without 'Answer: <city>'", SUM, higher_is_better=False),
        MetricSpec("precision", "correct answers over answered items", CORPUS),
    )
    prediction_files = PredictionFiles(reference=_read_items)  # condambig-score --ref

    def load(self, options: ToyOptions) -> list[CapitalQuestion]:
        return _read_items(ITEMS_FILE, options)

    def from_record(self, record: dict[str, Any]) -> CapitalQuestion:
        return CapitalQuestion(str(record["id"]), record["country"], record["capital"])

    def prompt(self, item: CapitalQuestion, options: ToyOptions) -> str:
        return f"What is the capital of {item.country}? Reply as 'Answer: <city>'."

    def target(self, item: CapitalQuestion, options: ToyOptions) -> str:
        return item.capital

    def max_tokens(self, options: ToyOptions) -> int:
        return 16

    def score(self, item: CapitalQuestion, output: Any, options: ToyOptions) -> ScoredSample:
        answer = parse_answer(output if isinstance(output, str) else "")
        same = str.casefold if options.ignore_case else str
        correct = answer is not None and same(answer) == same(item.capital)
        return ScoredSample(
            id=item.id, values={"exact_match": float(correct), "unanswered": float(answer is None)},
            details={"answer": answer, "correct": correct},
            explanation=f"answer {answer!r}, expected {item.capital!r}")

    def corpus_values(self, samples: Sequence[ScoredSample], options: ToyOptions,
                      judged: bool) -> dict[str, float | None]:
        """Precision: correct answers among the answered (exact_match and unanswered are
        the per-sample MEAN and SUM the base class aggregates)."""
        answered = [s for s in samples if s.details.get("answer") is not None]
        correct = sum(bool(s.details.get("correct")) for s in answered)
        return {"precision": correct / len(answered) if answered else None}
