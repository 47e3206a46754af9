"""lm-eval glue for HotpotQA-FLM: docs, prompt 3, per-sample items, agents at aggregation.

The model under evaluation only generates the clarifying question. The answering agent and
the downstream model run in the aggregation step — on rank 0 after lm-eval gathers every
rank's items under data parallelism — once for the whole run, batched across examples;
every corpus metric of the run reuses that one result. Agent options come from
``--metadata`` (``answering_agent``, ``downstream_model``, ``agent_device``,
``agent_dtype``, ``agent_batch_size``, ``downstream_max_new_tokens``, ``downstream_cache``,
``mask_seed``) or the ``CONDAMBIG_FLM_*`` variables; they travel to the aggregation step
inside each doc, because lm-eval hands aggregation functions nothing but the items.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from condambig_tasks.hotpot_flm.dataset import Split, load_examples
from condambig_tasks.hotpot_flm.hf_models import CheckpointSpec, check_checkpoint_available
from condambig_tasks.hotpot_flm.options import FlmOptions
from condambig_tasks.hotpot_flm.pipeline import build_local_agents, run_pipeline
from condambig_tasks.hotpot_flm.prompts import clean_question, question_prompt
from condambig_tasks.run_memo import RunMemo

logger = logging.getLogger("condambig.hotpot_flm")

PIPELINE_METRICS = (
    "f1_incomplete", "f1_response", "f1_complete", "em_incomplete", "em_response",
    "em_complete", "f1_recovery", "em_recovery", "mfrr", "improved_rate",
)


def load_docs(split: str, **kwargs: Any) -> dict:
    """Docs of one split; ``kwargs`` are lm-eval's ``--metadata`` (model args included)."""
    import datasets

    options = FlmOptions.resolve(kwargs)
    logger.info(
        "hotpot_flm (%s): answering agent %s, downstream model %s (device %s, dtype %s)",
        split, options.answering_agent, options.downstream_model, options.agent_device,
        options.agent_dtype,
    )
    # the agents run only after generation: check now that they can be found at all
    for name, role, option in ((options.answering_agent, "answering agent", "answering_agent"),
                               (options.downstream_model, "downstream model", "downstream_model")):
        check_checkpoint_available(
            CheckpointSpec(name, options.agent_device, options.agent_dtype), role, option)
    encoded_options = json.dumps(options.to_dict(), sort_keys=True)
    docs = [
        {
            "id": example.id,
            "split": split,
            "question": example.question,
            "answer": example.answer,
            "prompt": question_prompt(example),
            "options": encoded_options,
        }
        for example in load_examples(split, options.mask_seed)
    ]
    return {"test": datasets.Dataset.from_list(docs)}


def load_full_docs(**kwargs: Any) -> dict:
    """custom_dataset of ``hotpot_flm`` (HotpotQA distractor validation)."""
    return load_docs(Split.FULL.value, **kwargs)


def load_test_docs(**kwargs: Any) -> dict:
    """custom_dataset of ``hotpot_flm_test`` (the 400 human-annotated examples)."""
    return load_docs(Split.TEST.value, **kwargs)


def doc_to_text(doc: dict) -> str:
    return doc["prompt"]


def doc_to_target(doc: dict) -> str:
    return doc["answer"]


def process_results(doc: dict, results: list[str]) -> dict[str, Any]:
    question = clean_question(results[0] if results else "")
    item = {"id": doc["id"], "split": doc["split"], "question": question,
            "options": doc["options"]}
    metrics: dict[str, Any] = {name: item for name in PIPELINE_METRICS}
    metrics["empty_question_rate"] = float(not question)
    return metrics


# ---------------------------------------------------------------- aggregation (rank 0)

_RUNS: RunMemo[dict[str, float]] = RunMemo()


def run_items(items: list[dict]) -> dict[str, float]:
    """Corpus metrics for the run's items, computed once and reused by every metric."""
    depends_on = [(i["id"], i["split"], i["question"], i["options"]) for i in items]
    return _RUNS.get_or_compute(depends_on, lambda: _run_agents(items))


def _run_agents(items: list[dict]) -> dict[str, float]:
    if len({(i["split"], i["options"]) for i in items}) != 1:
        raise ValueError("hotpot_flm: items of one task carry different splits or agent options")
    options = FlmOptions(**json.loads(items[0]["options"]))
    by_id = {e.id: e for e in load_examples(items[0]["split"], options.mask_seed)}
    examples = [by_id[item["id"]] for item in items]
    questions = {item["id"]: item["question"] for item in items}
    agents = build_local_agents(options)
    run = run_pipeline(examples, questions, agents.agent, agents.downstream, agents.cache)
    logger.info(
        "hotpot_flm: %d examples scored; downstream answers computed %s",
        len(run.outcomes), run.computed,
    )
    return run.metrics()


def _metric(items: list[dict], name: str) -> float:
    return float(run_items(items)[name]) if items else math.nan


def agg_f1_incomplete(items: list[dict]) -> float:
    return _metric(items, "f1_incomplete")


def agg_f1_response(items: list[dict]) -> float:
    return _metric(items, "f1_response")


def agg_f1_complete(items: list[dict]) -> float:
    return _metric(items, "f1_complete")


def agg_em_incomplete(items: list[dict]) -> float:
    return _metric(items, "em_incomplete")


def agg_em_response(items: list[dict]) -> float:
    return _metric(items, "em_response")


def agg_em_complete(items: list[dict]) -> float:
    return _metric(items, "em_complete")


def agg_f1_recovery(items: list[dict]) -> float:
    return _metric(items, "f1_recovery")


def agg_em_recovery(items: list[dict]) -> float:
    return _metric(items, "em_recovery")


def agg_mfrr(items: list[dict]) -> float:
    return _metric(items, "mfrr")


def agg_improved_rate(items: list[dict]) -> float:
    return _metric(items, "improved_rate")
