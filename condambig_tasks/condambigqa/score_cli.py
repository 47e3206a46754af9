"""CondAmbigQA: score raw model outputs ([{"id", "output"}]) with or without a judge."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from condambig_tasks import settings
from condambig_tasks.condambigqa.loader import Release, load_questions
from condambig_tasks.condambigqa.options import CondAmbigQAOptions
from condambig_tasks.condambigqa.prompts import build_prompt
from condambig_tasks.condambigqa.records import Setting
from condambig_tasks.condambigqa.scoring import ScoringInput, score_all, summarise


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--outputs", "--pred", dest="outputs", required=True, type=Path,
                        help='JSON file: [{"id": question id, "output": "<raw model text>"}]')
    parser.add_argument("--setting", default="main", choices=[s.value for s in Setting])
    parser.add_argument("--release", default="2k", choices=[r.value for r in Release])
    parser.add_argument("--hub-revision", help="Hugging Face commit sha to pin the dataset")
    parser.add_argument("--max-conditions", type=int, default=5,
                        help="the N in 'up to N conditions' of the prompt the judge sees")
    parser.add_argument("--matching", default="judge", choices=["judge", "exact"],
                        help="judge: the paper's weighted matching; exact: citations, then "
                        "answer token F1 (always used without a judge)")
    parser.add_argument("--judge-model", help="judge model (else $CONDAMBIG_JUDGE_MODEL); "
                        "without one only the judge-free metrics are printed")
    parser.add_argument("--judge-base-url", help="OpenAI-compatible endpoint, e.g. a vLLM server")
    parser.add_argument("--per-question", type=Path,
                        help="also write every question's scores to this JSON file")


def run(args: argparse.Namespace) -> dict:
    options = CondAmbigQAOptions(args.setting, args.release, args.max_conditions, args.matching,
                                 args.hub_revision)
    outputs = _read_outputs(args.outputs)
    questions = {q.id: q for q in load_questions(options.release, options.hub_revision)}
    unknown = [i for i in outputs if i not in questions]
    if unknown:
        raise ValueError(f"{len(unknown)} output id(s) are not CondAmbigQA question ids, "
                         f"e.g. {unknown[:3]}")
    items = [
        ScoringInput(questions[i], build_prompt(questions[i], options.setting,
                                                options.prompt_options), text)
        for i, text in outputs.items()
    ]
    engine = _judge_engine(args)
    if engine is None:
        print("condambig-score condambigqa: no judge configured (--judge-model or "
              f"${settings.JUDGE_MODEL_VARIABLE}): condition/answer/combined scores skipped; "
              "pairs matched on citations, then answer token F1.", file=sys.stderr)
    scores = score_all(options.setting, items, engine, options.matching)
    if args.per_question:
        args.per_question.write_text(json.dumps([s.to_dict() for s in scores], indent=1))
    result = {"benchmark": "condambigqa", "setting": options.setting.value, **summarise(scores),
              "missing_outputs": len(questions) - len(outputs)}
    if engine is not None:
        stats = engine.stats
        result["judge_requests"] = stats.requests_sent
        result["judge_cache_hits"] = stats.cache_hits
    return result


def _read_outputs(path: Path) -> dict[str, str]:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: cannot read outputs ({error})") from error
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "id" in r for r in rows):
        raise ValueError(f'{path}: expected a JSON list of {{"id": ..., "output": ...}}')
    return {str(r["id"]): r.get("output") if isinstance(r.get("output"), str) else ""
            for r in rows}


def _judge_engine(args: argparse.Namespace):
    from condambig_metrics.judge import openai_judge_engine

    overrides = {"judge_model": args.judge_model, "judge_base_url": args.judge_base_url}
    config = settings.judge_config_from_environment(overrides)
    return openai_judge_engine(config) if config is not None else None
