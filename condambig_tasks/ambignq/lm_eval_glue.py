"""lm-eval adapter for AmbigNQ: documents, prompt, per-question scores (re-exported by the task
folder's ``utils.py``). Documents are flat: annotations travel as a JSON string in the original
format, so one parser (:func:`loader.normalise_record`) serves files, the hub and lm-eval."""

from __future__ import annotations

import json
import math
from typing import Any

from condambig_metrics.ambignq import QUESTION_METRICS
from condambig_tasks.ambignq.loader import (
    AmbigNQDataConfig,
    annotations_to_json,
    load_questions,
    normalise_record,
)
from condambig_tasks.ambignq.prompts import build_prompt
from condambig_tasks.ambignq.records import AmbigNQQuestion, SingleAnswer
from condambig_tasks.ambignq.scoring import score_output


def data_config_from_options(options: dict[str, Any]) -> AmbigNQDataConfig:
    """Task options (lm-eval ``--metadata`` keys) -> data configuration."""
    revision = options.get("hub_revision")
    return AmbigNQDataConfig(hub_revision=str(revision) if revision else None)


def record_to_doc(record: AmbigNQQuestion) -> dict[str, Any]:
    return {
        "id": record.id,
        "question": record.question,
        "annotations": json.dumps(annotations_to_json(record.annotations), ensure_ascii=False),
        "is_multi": record.is_multi,
    }


def doc_to_record(doc: dict[str, Any]) -> AmbigNQQuestion:
    return normalise_record({
        "id": doc["id"], "question": doc["question"], "annotations": json.loads(doc["annotations"]),
    })


def load_docs(**options: Any) -> dict[str, Any]:
    """``custom_dataset`` hook: every question as the ``test`` split."""
    import datasets

    records = load_questions(data_config_from_options(options))
    return {"test": datasets.Dataset.from_list([record_to_doc(record) for record in records])}


def doc_to_text(doc: dict[str, Any]) -> str:
    return build_prompt(doc_to_record(doc))


def doc_to_target(doc: dict[str, Any]) -> str:
    """The first annotation's answers (for logs; scoring uses every annotation)."""
    annotation = doc_to_record(doc).annotations[0]
    if isinstance(annotation, SingleAnswer):
        return annotation.answers[0] if annotation.answers else ""
    return " | ".join(pair.answers[0] for pair in annotation.pairs if pair.answers)


def doc_values(record: AmbigNQQuestion, output: str) -> dict[str, float]:
    """Per-question values with the corpus metric names; NaN marks "not in this subset"
    (lm-eval's ``nanmean`` then averages over multi questions only)."""
    reply = score_output(record, output)
    scores = reply.scores
    values = {
        "f1_answer_all": scores.f1_answer,
        "f1_answer_multi": scores.f1_answer if scores.is_multi else math.nan,
    }
    for metric in QUESTION_METRICS:
        value = scores.question_metric(metric)
        values[metric] = value if value is not None else math.nan
    values["parse_rate"] = float(reply.parsed)
    return values


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, float]:
    return doc_values(doc_to_record(doc), results[0] if results else "")
