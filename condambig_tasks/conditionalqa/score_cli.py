"""Score ConditionalQA predictions exactly like the official evaluate.py (official or raw format).

``condambig-score conditionalqa --pred PRED --ref REF [--documents DOCS]``

PRED is either the official prediction file, ``[{"id": ..., "answers": [[answer,
[condition elements]], ...]}]``, or raw model outputs, ``[{"id": ..., "output": "..."}]``
(JSON or JSON Lines), which are parsed as the tasks parse them; raw outputs cite element
numbers, so they need the documents (``--documents``, else ``documents.json`` from
``$CONDAMBIG_DATA_DIR/conditionalqa/`` or upstream) and the same ``--max-document-words``
as the run that produced them. The printed JSON has the official structure
(``total``/``yesno``/``extractive``/``conditional`` x ``EM``/``EM_with_conditions``/``F1``/
``F1_with_conditions``); raw outputs add a ``parsing`` block. As in the official script,
questions of REF without a prediction are left out of the averages (with a warning). A
breakdown with no question is ``null`` (the official script divides by zero there).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from condambig_metrics.conditionalqa import question_categories, score_question, summarize
from condambig_tasks import data
from condambig_tasks.conditionalqa.loader import (
    join_documents,
    load_documents,
    load_questions,
)
from condambig_tasks.conditionalqa.parser import parse_official_answers
from condambig_tasks.conditionalqa.records import ConditionalQuestion
from condambig_tasks.conditionalqa.scoring import (
    official_report,
    parsing_report,
    score_item_output,
)
from condambig_tasks.conditionalqa.task_items import (
    DEFAULT_MAX_DOCUMENT_WORDS,
    TaskConfig,
    build_item,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pred", required=True, type=Path, help="predictions: official format or raw [{id, output}]")
    parser.add_argument(
        "--ref", type=Path, default=None,
        help="reference questions in the upstream format (default: the dev split from the data directory)",
    )
    parser.add_argument(
        "--documents", type=Path, default=None,
        help="documents.json (raw outputs only; default: the data directory or upstream)",
    )
    parser.add_argument(
        "--max-document-words", type=int, default=DEFAULT_MAX_DOCUMENT_WORDS,
        help=f"raw outputs only: the budget the outputs were produced with (default {DEFAULT_MAX_DOCUMENT_WORDS}; 0 = whole documents)",
    )


def _warn(message: str) -> None:
    print(f"condambig-score conditionalqa: warning: {message}", file=sys.stderr)


def read_predictions(path: Path) -> tuple[str, dict[str, Any]]:
    """("official" | "raw", id -> answers or output); format errors are ValueErrors."""
    if not path.is_file():
        raise FileNotFoundError(f"prediction file {path} does not exist")
    records = data.read_json(path)
    if not isinstance(records, list) or not all(isinstance(r, dict) and "id" in r for r in records):
        raise ValueError(f"{path}: expected a JSON list of objects with an 'id' field")
    has_answers = [("answers" in record) for record in records]
    has_output = [("output" in record) for record in records]
    if records and all(has_answers):
        return "official", {
            str(r["id"]): parse_official_answers(r["answers"], f"{path} ({r['id']})") for r in records
        }
    if records and all(has_output):
        return "raw", {str(r["id"]): r["output"] for r in records}
    if not records:
        raise ValueError(f"{path}: no predictions")
    raise ValueError(
        f"{path}: every record needs either 'answers' (official format) or 'output' (raw model output)"
    )


def _matched_questions(
    questions: list[ConditionalQuestion], predictions: Mapping[str, Any]
) -> list[ConditionalQuestion]:
    """The reference questions that have a prediction (the official script's behaviour)."""
    known = {question.id for question in questions}
    missing = [question.id for question in questions if question.id not in predictions]
    unknown = [identifier for identifier in predictions if identifier not in known]
    if missing:
        _warn(
            f"{len(missing)} of {len(questions)} reference questions have no prediction "
            f"(e.g. {missing[0]}); as in the official evaluate.py they are left out of the averages"
        )
    if unknown:
        _warn(f"{len(unknown)} predictions have ids not in the reference file (e.g. {unknown[0]}); ignored")
    matched = [question for question in questions if question.id in predictions]
    if not matched:
        raise ValueError("no prediction id matches a reference question id")
    return matched


def score_official(
    questions: list[ConditionalQuestion], predictions: Mapping[str, list[tuple[str, list[str]]]]
) -> dict[str, Any]:
    scored = []
    for question in _matched_questions(questions, predictions):
        references = question.official_answers()
        scored.append(
            (score_question(predictions[question.id], references), question_categories(references))
        )
    return summarize(scored)


def score_raw(
    questions: list[ConditionalQuestion], outputs: Mapping[str, Any], documents_path: Path | None,
    max_document_words: int,
) -> dict[str, Any]:
    matched = _matched_questions(questions, outputs)
    config = TaskConfig(max_document_words=max_document_words or None)
    documents = load_documents(documents_path)
    items = [build_item(entry, config) for entry in join_documents(matched, documents)]
    scored = [score_item_output(outputs[item.id], item) for item in items]
    return {**official_report(scored), "parsing": parsing_report(scored)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.max_document_words < 0:
        raise ValueError("--max-document-words must be >= 0 (0 = whole documents)")
    kind, predictions = read_predictions(args.pred)
    if args.ref is not None and not args.ref.is_file():
        raise FileNotFoundError(f"reference file {args.ref} does not exist")
    questions = load_questions("dev", path=args.ref)
    if kind == "official":
        return score_official(questions, predictions)
    if args.documents is not None and not args.documents.is_file():
        raise FileNotFoundError(f"documents file {args.documents} does not exist")
    return score_raw(questions, predictions, args.documents, args.max_document_words)
