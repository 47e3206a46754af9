"""Score AmbigNQ predictions in the official format (id -> answers, or id -> [{question, answer}]).

``condambig-score ambignq --pred PRED --ref REF``: REF is ``dev_light.json`` (or any file in
that format; default: the configured data source). Prints ``f1_answer_all``,
``f1_answer_multi`` and, for predictions with questions, ``f1_bleu1`` ... ``f1_bleu4`` and
``f1_edit_f1``, as the official ``ambigqa_evaluate_script.py`` computes them. PRED may also be
raw model outputs, ``[{"id", "output"}]``, parsed as the tasks parse them (``parse_rate`` is
then reported too).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from condambig_metrics.ambignq import aggregate, score_question
from condambig_tasks.ambignq.loader import load_questions, parse_records
from condambig_tasks.ambignq.parser import parse_reply
from condambig_tasks.ambignq.records import AmbigNQQuestion, PredictedPair
from condambig_tasks.data import read_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pred", required=True, type=Path,
                        help="JSON object: id -> list of answers, or id -> list of {question, answer}")
    parser.add_argument("--ref", type=Path, default=None,
                        help="reference file in the dev_light.json format (default: the data source)")
    parser.add_argument("--only-predicted", action="store_true",
                        help="score only the reference questions that have a prediction "
                             "(default: every reference question must have one, as officially)")


def predictions_from_outputs(raw: list[Any], source: str) -> tuple[dict[str, list[PredictedPair]], float]:
    """Raw model outputs ``[{"id", "output"}]`` parsed as the tasks parse them; the parse rate."""
    predictions: dict[str, list[PredictedPair]] = {}
    parsed = 0
    for item in raw:
        if not (isinstance(item, dict) and "id" in item and isinstance(item.get("output"), str)):
            raise ValueError(f"{source}: raw outputs must be objects with 'id' and a string 'output'.")
        reply = parse_reply(item["output"])
        predictions[str(item["id"])] = list(reply.pairs)
        parsed += reply.parsed
    return predictions, parsed / len(raw) if raw else 0.0


def predictions_from_json(raw: Any, source: str) -> tuple[dict[str, list[PredictedPair]], bool]:
    """The official prediction file, and whether it carries questions (pairs, not answers).

    A bare string is one answer, as in the official loader.
    """
    if not isinstance(raw, dict):
        raise ValueError(f"{source}: expected a JSON object mapping question ids to predictions.")
    predictions: dict[str, list[PredictedPair]] = {}
    kinds: set[str] = set()
    for key, value in raw.items():
        items = [value] if isinstance(value, (str, dict)) else value
        if not isinstance(items, list):
            raise ValueError(f"{source}: prediction for {key} must be a list, got {type(value).__name__}.")
        pairs: list[PredictedPair] = []
        for item in items:
            if isinstance(item, str):
                kinds.add("answers")
                pairs.append(PredictedPair(answer=item))
            elif isinstance(item, dict) and isinstance(item.get("answer"), str) \
                    and isinstance(item.get("question"), str):
                kinds.add("pairs")
                pairs.append(PredictedPair(answer=item["answer"], question=item["question"]))
            else:
                raise ValueError(
                    f"{source}: prediction for {key} has an item that is neither an answer string "
                    "nor an object with string fields 'question' and 'answer'."
                )
        predictions[str(key)] = pairs
    if len(kinds) > 1:
        raise ValueError(
            f"{source}: mixes answer strings and question-answer objects; use one format "
            "throughout, as the official script requires."
        )
    # Only bare answer strings mean "no questions" (all-empty predictions score 0 everywhere).
    return predictions, kinds != {"answers"}


def select_references(
    references: list[AmbigNQQuestion], predictions: dict[str, list[PredictedPair]], only_predicted: bool
) -> list[AmbigNQQuestion]:
    missing = [record.id for record in references if record.id not in predictions]
    if only_predicted:
        selected = [record for record in references if record.id in predictions]
        if not selected:
            raise ValueError("no prediction id matches a reference question id.")
        return selected
    if missing:
        raise ValueError(
            f"{len(missing)} of {len(references)} reference questions have no prediction "
            f"(first: {missing[0]}); add them or pass --only-predicted."
        )
    return references


def run(args: argparse.Namespace) -> dict[str, Any]:
    raw = read_json(args.pred)
    parse_rate = None
    if isinstance(raw, list):
        predictions, parse_rate = predictions_from_outputs(raw, str(args.pred))
        with_questions = True
    else:
        predictions, with_questions = predictions_from_json(raw, str(args.pred))
    references = (
        parse_records(read_json(args.ref), str(args.ref)) if args.ref is not None else load_questions()
    )
    selected = select_references(references, predictions, args.only_predicted)
    scores = [
        score_question(r.question, r.annotations, predictions[r.id], with_questions)
        for r in selected
    ]
    result: dict[str, Any] = aggregate(scores)
    if parse_rate is not None:
        result["parse_rate"] = parse_rate
    result["n_questions"] = len(scores)
    result["n_multi"] = sum(score.is_multi for score in scores)
    return result

