"""The lm-eval glue, the Inspect scorers/metrics and ``condambig-score`` give the same numbers
on the same raw outputs (in-process; the subprocess runs are in tests/ambignq/test_e2e.py)."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from inspect_ai.model import ModelName, ModelOutput
from inspect_ai.scorer import SampleScore, Target
from inspect_ai.solver import TaskState

from condambig import abg_coqa as inspect_abg_coqa
from condambig_tasks.abg_coqa import lm_eval_glue
from condambig_tasks.abg_coqa.loader import AbgCoQADataConfig, load_turns
from condambig_tasks.abg_coqa.samples import build_samples
from condambig_tasks.cli import main
from tests.abg_coqa.scripted_outputs import RAW_OUTPUTS

AGGREGATIONS = {
    "detection": {"precision": lm_eval_glue.agg_precision, "recall": lm_eval_glue.agg_recall,
                  "f1": lm_eval_glue.agg_f1, "answer_f1": np.nanmean, "parse_rate": np.mean},
    "clarification": {"bleu1": lm_eval_glue.agg_bleu1, "bleu2": lm_eval_glue.agg_bleu2,
                      "bleu3": lm_eval_glue.agg_bleu3, "bleu4": lm_eval_glue.agg_bleu4,
                      "parse_rate": np.mean},
    "clarified_qa": {"f1": np.mean, "parse_rate": np.mean},
}
LOADERS = {"detection": lm_eval_glue.load_detection_docs,
           "clarification": lm_eval_glue.load_clarification_docs,
           "clarified_qa": lm_eval_glue.load_clarified_qa_docs}


def _lm_eval(subtask: str) -> dict[str, float]:
    docs = LOADERS[subtask](version=1.0, split="val")["test"]
    per_doc = [lm_eval_glue.process_results(doc, [RAW_OUTPUTS[subtask][doc["id"]]]) for doc in docs]
    return {name: float(aggregate([values[name] for values in per_doc]))
            for name, aggregate in AGGREGATIONS[subtask].items()}


def _inspect(subtask: str) -> dict[str, float]:
    scorer = {"detection": inspect_abg_coqa.abg_coqa_detection_scorer,
              "clarification": inspect_abg_coqa.abg_coqa_clarification_scorer,
              "clarified_qa": inspect_abg_coqa.abg_coqa_clarified_qa_scorer}[subtask]()
    metric = {"detection": inspect_abg_coqa.abg_coqa_detection_metrics,
              "clarification": inspect_abg_coqa.abg_coqa_clarification_metrics,
              "clarified_qa": inspect_abg_coqa.abg_coqa_clarified_qa_metrics}[subtask]()
    sample_scores = []
    for sample in build_samples(load_turns(AbgCoQADataConfig(split="val")), subtask):
        inspect_sample = inspect_abg_coqa.to_inspect_sample(sample)
        state = TaskState(
            model=ModelName("test/scripted"), sample_id=sample.id, epoch=1, input=inspect_sample.input,
            messages=[], output=ModelOutput.from_content("scripted", RAW_OUTPUTS[subtask][sample.id]),
            metadata=inspect_sample.metadata,
        )
        score = asyncio.run(scorer(state, Target(inspect_sample.target)))
        sample_scores.append(SampleScore(score=score, sample_id=sample.id))
    return metric(sample_scores)


def _cli(subtask: str, tmp_path, capsys) -> dict:
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps([{"id": k, "output": v} for k, v in RAW_OUTPUTS[subtask].items()]))
    assert main(["abg_coqa", "--subtask", subtask, "--pred", str(pred), "--split", "val"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("subtask", ["detection", "clarification", "clarified_qa"])
def test_three_paths_agree(subtask, use_fixture_data, tmp_path, capsys):
    cli = _cli(subtask, tmp_path, capsys)
    lm_eval, inspect = _lm_eval(subtask), _inspect(subtask)
    assert set(inspect) == set(AGGREGATIONS[subtask])
    for name in AGGREGATIONS[subtask]:
        assert lm_eval[name] == pytest.approx(cli[name]), name
        assert inspect[name] == pytest.approx(cli[name]), name
