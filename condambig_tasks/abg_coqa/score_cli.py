"""Score Abg-CoQA predictions for one subtask (detection, clarification, clarified_qa).

``condambig-score abg_coqa --subtask SUBTASK --pred PRED [--ref REF | --split SPLIT]``.
PRED is a JSON list, either raw model outputs ``[{"id", "output"}]`` (parsed as the tasks parse
them) or structured: detection ``[{"id", "ambiguous": bool, "answer": str}]``, clarification
``[{"id", "question": str}]``, clarified QA ``[{"id", "reply": k, "answer": str}]`` with k
indexing ``clarification_turn.answers``. For clarified QA, raw outputs carry ``"reply": k``
too, or the sample id ``"<id>#<k>"``. For clarification, a configured judge
(``--judge-model`` or ``CONDAMBIG_JUDGE_MODEL``) adds ``judge_helpfulness``,
``judge_helpful_rate`` and ``judge_failed``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from condambig_tasks import settings
from condambig_tasks.abg_coqa.judge import clarification_request, summarise_judgements
from condambig_tasks.abg_coqa.loader import SPLITS, AbgCoQADataConfig, load_turns, parse_file
from condambig_tasks.abg_coqa.parser import DetectionReply, TextReply
from condambig_tasks.abg_coqa.records import (
    SUBTASKS,
    clarified_qa_sample_id,
    split_clarified_qa_sample_id,
)
from condambig_tasks.abg_coqa.samples import AbgCoQASample, build_samples
from condambig_tasks.abg_coqa.scoring import (
    Outcome,
    score_clarification,
    score_clarified_qa,
    score_detection,
    score_output,
    summarise,
)
from condambig_tasks.data import read_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--subtask", required=True, choices=SUBTASKS)
    parser.add_argument("--pred", required=True, type=Path,
                        help="JSON list of raw outputs {id, output} or structured predictions")
    parser.add_argument("--ref", type=Path, default=None,
                        help="a coqa_abg_<split>.json file (default: --split from the data source)")
    parser.add_argument("--split", choices=SPLITS, default="test",
                        help="split to load when --ref is not given (default: test)")
    parser.add_argument("--only-predicted", action="store_true",
                        help="score only the samples that have a prediction (default: all must)")
    parser.add_argument("--judge-model", help="clarification only: judge model (else "
                        "$CONDAMBIG_JUDGE_MODEL); without one the judge metrics are skipped")
    parser.add_argument("--judge-base-url", help="OpenAI-compatible endpoint, e.g. a vLLM server")


def _sample_key(item: dict[str, Any], subtask: str) -> str:
    identifier = str(item["id"])
    if subtask != "clarified_qa":
        return identifier
    if "reply" in item:
        reply = item["reply"]
        if isinstance(reply, bool) or not isinstance(reply, int):
            raise ValueError(f"prediction {identifier}: 'reply' must be an integer index.")
        return clarified_qa_sample_id(identifier, reply)
    if split_clarified_qa_sample_id(identifier) is None:
        raise ValueError(
            f"prediction {identifier}: clarified QA predictions need 'reply': k or an id '<id>#<k>'."
        )
    return identifier


def _outcome(sample: AbgCoQASample, item: dict[str, Any]) -> Outcome:
    if "output" in item:
        if not isinstance(item["output"], str):
            raise ValueError(f"prediction {sample.id}: 'output' must be a string.")
        return score_output(sample, item["output"])
    if sample.subtask == "detection":
        ambiguous = item.get("ambiguous")
        if not isinstance(ambiguous, bool):
            raise ValueError(f"prediction {sample.id}: detection needs 'ambiguous': true/false (or 'output').")
        answer = item.get("answer") or ""
        return score_detection(sample, DetectionReply(ambiguous=ambiguous, answer=str(answer), parsed=True))
    field = "question" if sample.subtask == "clarification" else "answer"
    value = item.get(field)
    if not isinstance(value, str):
        raise ValueError(f"prediction {sample.id}: needs a string '{field}' (or 'output').")
    reply = TextReply(text=value, parsed=True)
    if sample.subtask == "clarification":
        return score_clarification(sample, reply)
    return score_clarified_qa(sample, reply)


def index_predictions(raw: Any, subtask: str, source: str) -> dict[str, dict[str, Any]]:
    if not isinstance(raw, list) or not all(isinstance(item, dict) and "id" in item for item in raw):
        raise ValueError(f"{source}: expected a JSON list of objects, each with an 'id'.")
    indexed: dict[str, dict[str, Any]] = {}
    for item in raw:
        key = _sample_key(item, subtask)
        if key in indexed:
            raise ValueError(f"{source}: two predictions for sample {key}.")
        indexed[key] = item
    return indexed


def run(args: argparse.Namespace) -> dict[str, Any]:
    predictions = index_predictions(read_json(args.pred), args.subtask, str(args.pred))
    turns = (
        parse_file(read_json(args.ref), str(args.ref)) if args.ref is not None
        else load_turns(AbgCoQADataConfig(split=args.split))
    )
    samples = build_samples(turns, args.subtask)
    known = {sample.id for sample in samples}
    unknown = sorted(set(predictions) - known)
    if unknown:
        raise ValueError(
            f"{len(unknown)} predictions match no {args.subtask} sample of the reference "
            f"(first: {unknown[0]}); check the split and the ids."
        )
    missing = [sample.id for sample in samples if sample.id not in predictions]
    if missing and not args.only_predicted:
        raise ValueError(
            f"{len(missing)} of {len(samples)} {args.subtask} samples have no prediction "
            f"(first: {missing[0]}); add them or pass --only-predicted."
        )
    scored = [sample for sample in samples if sample.id in predictions]
    if not scored:
        raise ValueError("no prediction to score.")
    outcomes = [_outcome(sample, predictions[sample.id]) for sample in scored]
    result: dict[str, Any] = summarise(args.subtask, outcomes)
    if args.subtask == "clarification":
        result.update(_judge_metrics(args, scored, outcomes))
    return result


def _judge_metrics(args: argparse.Namespace, samples: list[AbgCoQASample], outcomes: list) -> dict:
    config = settings.judge_config_from_environment(
        {"judge_model": args.judge_model, "judge_base_url": args.judge_base_url}
    )
    if config is None:
        print("condambig-score abg_coqa: no judge configured (--judge-model or "
              f"{settings.JUDGE_MODEL_VARIABLE}); judge metrics skipped", file=sys.stderr)
        return {}
    from condambig_metrics.judge import openai_judge_engine

    engine = openai_judge_engine(config)
    results = engine.judge_many_sync(
        [clarification_request(sample, outcome.question) for sample, outcome in zip(samples, outcomes, strict=True)]
    )
    summary: dict[str, Any] = summarise_judgements([result.score for result in results])
    summary["judge_requests"] = engine.stats.requests_sent
    summary["judge_cache_hits"] = engine.stats.cache_hits
    return summary
