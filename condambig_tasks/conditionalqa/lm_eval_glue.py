"""lm-eval adapter for ConditionalQA: docs, prompt, per-document scores, subset aggregations.

The task folder's ``utils.py`` re-exports these (lm-eval loads it by file path; functions
defined here stay picklable). Each breakdown metric carries ``(is_member, score)`` per
document, and :func:`agg_subset_mean` averages over the members only, so ``yesno_em`` is
the mean over yes/no questions exactly as in the official script.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from condambig_metrics.conditionalqa import METRIC_KEYS
from condambig_tasks.conditionalqa.scoring import score_item_output
from condambig_tasks.conditionalqa.task_items import TaskConfig, TaskItem, load_task_items

BREAKDOWNS = ("yesno", "extractive", "conditional")
TOTAL_METRICS = tuple(key.lower() for key in METRIC_KEYS)
"""em, em_with_conditions, f1, f1_with_conditions (over all questions)."""


def load_docs(**options: Any) -> dict[str, Any]:
    """``custom_dataset``: lm-eval passes the task metadata and ``--metadata`` keys.

    Options read: ``split`` (dev | train) and ``max_document_words`` (0 = whole documents);
    other keys (model arguments, other tasks' options) are ignored.
    """
    import datasets

    config = TaskConfig.from_options(options)
    records = [item.to_record() for item in load_task_items(config)]
    return {"test": datasets.Dataset.from_list(records)}


def doc_to_text(doc: dict[str, Any]) -> str:
    return doc["prompt"]


def doc_to_target(doc: dict[str, Any]) -> str:
    """The reference answers in the official format (shown in logs; scoring uses the doc)."""
    return json.dumps(json.loads(doc["reference_answers_json"]), ensure_ascii=False)


def process_results(doc: dict[str, Any], results: Sequence[str]) -> dict[str, Any]:
    item = TaskItem.from_record(doc)
    scored = score_item_output(results[0] if results else "", item)
    values: dict[str, Any] = {}
    for name, score in zip(TOTAL_METRICS, scored.scores.values(), strict=True):
        values[name] = score
        for breakdown in BREAKDOWNS:
            values[f"{breakdown}_{name}"] = (item.categories.member_of(breakdown), score)
    values["parse_rate"] = float(scored.parsed.parsed)
    values["out_of_range_citations"] = scored.parsed.out_of_range_citations
    values["truncated_documents"] = int(item.truncated)
    return values


def agg_subset_mean(items: Sequence[Sequence[Any]]) -> float:
    """Mean of the scores whose membership flag is set; NaN when the subset is empty."""
    chosen = [float(score) for member, score in items if member]
    return sum(chosen) / len(chosen) if chosen else math.nan


def agg_sum(items: Sequence[int]) -> int:
    """Counts over the whole run (citations out of range, truncated documents)."""
    return int(sum(items))
