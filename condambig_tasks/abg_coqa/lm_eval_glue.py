"""lm-eval adapter for the three Abg-CoQA subtasks (re-exported by the task folder's
``utils.py``). Documents are flat: the turn travels as a JSON string in the upstream format.
Corpus metrics (P/R/F1, BLEU) are computed in the aggregation step from per-document items.

The clarification subtask's judge metrics (see :mod:`condambig_tasks.abg_coqa.judge`) are
emitted only when a judge is configured (``CONDAMBIG_JUDGE_MODEL`` or ``--metadata
'{"judge_model": ...}'``); every judge call of the run is sent concurrently in the
aggregation step.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from condambig_metrics.abg_coqa import corpus_bleu, detection_scores
from condambig_tasks import settings
from condambig_tasks.abg_coqa.judge import (
    JUDGE_METRICS,
    clarification_request,
    summarise_judgements,
)
from condambig_tasks.abg_coqa.loader import (
    AbgCoQADataConfig,
    load_turns,
    normalise_record,
    to_upstream,
)
from condambig_tasks.abg_coqa.prompts import build_prompt
from condambig_tasks.abg_coqa.samples import AbgCoQASample, build_samples
from condambig_tasks.abg_coqa.scoring import (
    ClarificationOutcome,
    ClarifiedQAOutcome,
    DetectionOutcome,
    score_output,
)
from condambig_tasks.run_memo import RunMemo

logger = logging.getLogger("condambig.abg_coqa")


def data_config_from_options(options: dict[str, Any]) -> AbgCoQADataConfig:
    """Task options (lm-eval ``--metadata`` keys) -> data configuration (``split``)."""
    return AbgCoQADataConfig(split=str(options.get("split") or AbgCoQADataConfig.split))


def judge_options_from(options: dict[str, Any]) -> dict[str, Any]:
    """The ``judge_*`` task options, without secrets (the API key stays in the environment)."""
    return settings.lm_eval_judge_options(options)


def sample_to_doc(sample: AbgCoQASample, judge_options: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": sample.id, "subtask": sample.subtask,
        "turn": json.dumps(to_upstream(sample.turn), ensure_ascii=False),
        "reply_index": -1 if sample.reply_index is None else sample.reply_index,
        "judge_options": json.dumps(judge_options or {}, sort_keys=True),
    }


def doc_to_sample(doc: dict[str, Any]) -> AbgCoQASample:
    reply_index = int(doc["reply_index"])
    return AbgCoQASample(
        id=doc["id"], subtask=doc["subtask"], turn=normalise_record(json.loads(doc["turn"])),
        reply_index=None if reply_index < 0 else reply_index,
    )


def _load(subtask: str, options: dict[str, Any]) -> dict[str, Any]:
    import datasets

    samples = build_samples(load_turns(data_config_from_options(options)), subtask)
    judge_options = judge_options_from(options) if subtask == "clarification" else {}
    if subtask == "clarification":
        judge = settings.judge_config_from_environment(judge_options)
        if judge is None:
            logger.warning(
                "abg_coqa_clarification: no judge configured, so %s are skipped (BLEU is "
                "reported). Set %s (and %s for a vLLM/compatible server) or --metadata "
                "'{\"judge_model\": ...}' to enable them.", ", ".join(JUDGE_METRICS),
                settings.JUDGE_MODEL_VARIABLE, settings.JUDGE_BASE_URL_VARIABLE,
            )
        else:
            logger.info("abg_coqa_clarification: judge %s at %s", judge.model, judge.base_url or "OpenAI")
    docs = [sample_to_doc(sample, judge_options) for sample in samples]
    return {"test": datasets.Dataset.from_list(docs)}


def load_detection_docs(**options: Any) -> dict[str, Any]:
    return _load("detection", options)


def load_clarification_docs(**options: Any) -> dict[str, Any]:
    return _load("clarification", options)


def load_clarified_qa_docs(**options: Any) -> dict[str, Any]:
    return _load("clarified_qa", options)


def doc_to_text(doc: dict[str, Any]) -> str:
    return build_prompt(doc_to_sample(doc))


def doc_to_target(doc: dict[str, Any]) -> str:
    """What a perfect reply looks like (for logs; scoring uses every reference)."""
    sample = doc_to_sample(doc)
    if sample.subtask == "detection":
        return "AMBIGUOUS" if sample.turn.ambiguous else sample.turn.target.answer
    if sample.subtask == "clarification":
        return sample.turn.reference_clarification_questions[0]
    return sample.reply.answers[0] if sample.reply and sample.reply.answers else ""


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """Per-document values: scalars for means, tuples for the corpus aggregations."""
    outcome = score_output(doc_to_sample(doc), results[0] if results else "")
    values: dict[str, Any] = {"parse_rate": float(outcome.parsed)}
    if isinstance(outcome, DetectionOutcome):
        labels = (outcome.predicted_ambiguous, outcome.gold_ambiguous)
        values.update(precision=labels, recall=labels, f1=labels)
        values["answer_f1"] = math.nan if outcome.answer_f1 is None else outcome.answer_f1
    elif isinstance(outcome, ClarificationOutcome):
        item = (outcome.question, outcome.references)
        values.update({f"bleu{order}": item for order in (1, 2, 3, 4)})
        judge_options = json.loads(doc.get("judge_options") or "{}")
        if settings.judge_config_from_environment(judge_options) is not None:
            judge_item = {key: doc[key] for key in ("id", "subtask", "turn", "reply_index", "judge_options")}
            judge_item["question"] = outcome.question
            values.update(dict.fromkeys(JUDGE_METRICS, judge_item))
    elif isinstance(outcome, ClarifiedQAOutcome):
        values["f1"] = outcome.f1
    return values


def _detection(items: list[tuple[bool, bool]]):
    return detection_scores([item[0] for item in items], [item[1] for item in items])


def agg_precision(items: list[tuple[bool, bool]]) -> float:
    return _detection(items).precision


def agg_recall(items: list[tuple[bool, bool]]) -> float:
    return _detection(items).recall


def agg_f1(items: list[tuple[bool, bool]]) -> float:
    return _detection(items).f1


def _bleu(items: list[tuple[str, tuple[str, ...]]], order: int) -> float:
    return corpus_bleu([item[0] for item in items], [list(item[1]) for item in items])[f"bleu{order}"]


def agg_bleu1(items: list[tuple[str, tuple[str, ...]]]) -> float:
    return _bleu(items, 1)


def agg_bleu2(items: list[tuple[str, tuple[str, ...]]]) -> float:
    return _bleu(items, 2)


def agg_bleu3(items: list[tuple[str, tuple[str, ...]]]) -> float:
    return _bleu(items, 3)


def agg_bleu4(items: list[tuple[str, tuple[str, ...]]]) -> float:
    return _bleu(items, 4)


# ---------------------------------------------------------------- judge aggregation

_JUDGED: RunMemo[dict[str, float]] = RunMemo()


def _judge_summary(items: list[dict[str, Any]]) -> dict[str, float]:
    """Judge the run's questions once; the three judge metrics of a run share the result."""
    config = settings.judge_config_from_environment(json.loads(items[0]["judge_options"]))
    if config is None:  # configured when the documents were built, not any more
        raise ValueError("abg_coqa_clarification: the judge configuration disappeared during the run")
    depends_on = [(config.model, config.base_url),
                  *((i["id"], i["judge_options"], i["question"]) for i in items)]
    return _JUDGED.get_or_compute(depends_on, lambda: _judge_run(items, config))


def _judge_run(items: list[dict[str, Any]], config) -> dict[str, float]:
    from condambig_metrics.judge import openai_judge_engine

    engine = openai_judge_engine(config)
    requests = [clarification_request(doc_to_sample(item), item["question"]) for item in items]
    results = engine.judge_many_sync(requests)
    logger.info("abg_coqa_clarification judge: %s", engine.stats)
    summary = summarise_judgements([result.score for result in results])
    if summary["judge_failed"]:
        logger.warning("abg_coqa_clarification: %d judgement(s) failed, left out of the judge "
                       "metrics (see judge_failed)", int(summary["judge_failed"]))
    return summary


def agg_judge_helpfulness(items: list[dict[str, Any]]) -> float:
    return _judge_summary(items)["judge_helpfulness"] if items else math.nan


def agg_judge_helpful_rate(items: list[dict[str, Any]]) -> float:
    return _judge_summary(items)["judge_helpful_rate"] if items else math.nan


def agg_judge_failed(items: list[dict[str, Any]]) -> float:
    return _judge_summary(items)["judge_failed"] if items else math.nan
