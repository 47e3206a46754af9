"""lm-eval glue for CondAmbigQA: docs, prompts, per-sample results, corpus aggregation.

Judge metrics are computed in the aggregation step (rank 0 under data parallelism), with
every judge call of the run sent concurrently. ``process_results`` only emits the judge
metric keys when a judge is configured, so without one lm-eval reports the exact metrics
alone and this module says once, in the log, what was skipped.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from condambig_tasks import settings
from condambig_tasks.condambigqa.loader import load_questions
from condambig_tasks.condambigqa.options import CondAmbigQAOptions
from condambig_tasks.condambigqa.parser import parse_response
from condambig_tasks.condambigqa.prompts import build_prompt
from condambig_tasks.condambigqa.records import CondAmbigQuestion, Setting
from condambig_tasks.condambigqa.scoring import (
    QuestionScore,
    ScoringInput,
    score_all,
    summarise,
)
from condambig_tasks.run_memo import RunMemo

logger = logging.getLogger("condambig.condambigqa")

# --metadata keys that configure the task itself (the rest may configure the judge)
_TASK_OPTIONS = ("setting", "release", "max_conditions", "matching", "hub_revision")
_JUDGE_METRICS = ("condition_score", "answer_score", "combined_score", "judge_failed")


def load_docs(**kwargs: Any) -> dict:
    """``custom_dataset``: lm-eval passes ``--metadata`` keys and the YAML's dataset_kwargs."""
    import datasets

    options = CondAmbigQAOptions(**{k: kwargs[k] for k in _TASK_OPTIONS if k in kwargs})
    judge_options = settings.lm_eval_judge_options(kwargs)
    judge = settings.judge_config_from_environment(judge_options)
    if judge is None:
        logger.warning(
            "condambigqa (%s): no judge configured, so condition_score, answer_score and "
            "combined_score are skipped and pairs are matched on citations, then answer "
            "token F1. Set %s (and %s for a vLLM/compatible server) or --metadata "
            "'{\"judge_model\": ...}' to enable them.", options.setting.value,
            settings.JUDGE_MODEL_VARIABLE, settings.JUDGE_BASE_URL_VARIABLE,
        )
    else:
        logger.info("condambigqa: judge %s at %s", judge.model, judge.base_url or "OpenAI")
    docs = [
        {
            "id": q.id,
            "question": q.question,
            "prompt": build_prompt(q, options.setting, options.prompt_options),
            "gold_answers": " | ".join(p.answer for p in q.properties),
            "record": json.dumps(q.to_dict(), ensure_ascii=False),
            "setting": options.setting.value,
            "matching": options.matching,
            "judge_options": json.dumps(judge_options, sort_keys=True),
        }
        for q in load_questions(options.release, options.hub_revision)
    ]
    return {"test": datasets.Dataset.from_list(docs)}


def doc_to_text(doc: dict) -> str:
    return doc["prompt"]


def doc_to_target(doc: dict) -> str:
    return doc["gold_answers"]


def process_results(doc: dict, results: list[str]) -> dict[str, Any]:
    output = results[0] if results else ""
    setting = Setting(doc["setting"])
    question = CondAmbigQuestion.from_dict(json.loads(doc["record"]))
    parsed = parse_response(output, setting, len(question.fragments))
    item = {key: doc[key]
            for key in ("id", "prompt", "record", "setting", "matching", "judge_options")}
    item["output"] = output
    metrics: dict[str, Any] = {
        "parse_rate": float(parsed.parsed),
        "answer_count": float(len(parsed.pairs)),
        "count_difference": float(len(parsed.pairs) - len(question.properties)),
    }
    if setting.cites:
        metrics["citation_score"] = item
        metrics["out_of_range_citations"] = float(parsed.out_of_range_citations)
        metrics["duplicate_citations"] = float(parsed.duplicate_citations)
    if settings.judge_config_from_environment(json.loads(doc["judge_options"])) is not None:
        for name in _JUDGE_METRICS:
            if name == "condition_score" and not setting.generates_conditions:
                continue
            if name == "combined_score" and setting is not Setting.MAIN:
                continue
            metrics[name] = item
    return metrics


# ---------------------------------------------------------------- aggregation

_RUNS: RunMemo[list[QuestionScore]] = RunMemo()


def _question_scores(items: list[dict]) -> list[QuestionScore]:
    """Score the run once; every corpus metric of the same run reuses the result."""
    config = settings.judge_config_from_environment(json.loads(items[0]["judge_options"]))
    judge_identity = (config.model, config.base_url) if config is not None else None
    depends_on = [judge_identity, *((i["id"], i["setting"], i["matching"], i["output"])
                                    for i in items)]
    return _RUNS.get_or_compute(depends_on, lambda: _score_run(items, config))


def _score_run(items: list[dict], config) -> list[QuestionScore]:
    setting = Setting(items[0]["setting"])
    inputs = [
        ScoringInput(CondAmbigQuestion.from_dict(json.loads(i["record"])), i["prompt"],
                     i["output"])
        for i in items
    ]
    engine = None
    if config is not None:
        from condambig_metrics.judge import openai_judge_engine

        engine = openai_judge_engine(config)
    scores = score_all(setting, inputs, engine, items[0]["matching"])
    if engine is not None:
        logger.info("condambigqa judge: %s", engine.stats)
        failed = sum(s.judge_failed for s in scores)
        if failed:
            logger.warning("condambigqa: %d question(s) judge-failed, left out of the judge "
                           "metrics (see judge_failed)", failed)
    return scores


def _metric(items: list[dict], name: str) -> float:
    if not items:
        return math.nan
    value = summarise(_question_scores(items)).get(name)
    return float(value) if value is not None else math.nan  # all judge-failed: NaN, not 0


def agg_citation_score(items: list[dict]) -> float:
    return _metric(items, "citation_score")


def agg_condition_score(items: list[dict]) -> float:
    return _metric(items, "condition_score")


def agg_answer_score(items: list[dict]) -> float:
    return _metric(items, "answer_score")


def agg_combined_score(items: list[dict]) -> float:
    return _metric(items, "combined_score")


def agg_judge_failed(items: list[dict]) -> float:
    return _metric(items, "judge_failed")


def agg_sum(values: list[float]) -> float:
    return float(sum(values))


# ---------------------------------------------------------------- one loader per variant
# (a separate function each, so a user's --metadata may still set any other option)


def _loader_for(setting: Setting):
    def load(**kwargs: Any) -> dict:
        kwargs.pop("setting", None)
        return load_docs(setting=setting.value, **kwargs)

    load.__name__ = f"load_{setting.value}_docs"
    load.__doc__ = f"custom_dataset of the {setting.value} variant."
    return load


load_main_docs = _loader_for(Setting.MAIN)
load_gold_conditions_docs = _loader_for(Setting.GOLD_CONDITIONS)
load_no_conditions_docs = _loader_for(Setting.NO_CONDITIONS)
load_closed_book_docs = _loader_for(Setting.CLOSED_BOOK)
load_closed_book_conditions_docs = _loader_for(Setting.CLOSED_BOOK_CONDITIONS)
