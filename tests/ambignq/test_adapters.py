"""The lm-eval glue, the Inspect scorer/metric and ``condambig-score`` give the same numbers
on the same raw outputs (in-process; the subprocess runs are in test_e2e.py)."""

from __future__ import annotations

import asyncio
import json

import pytest
from inspect_ai.model import ModelName, ModelOutput
from inspect_ai.scorer import SampleScore, Target
from inspect_ai.solver import TaskState

from condambig._factory import benchmark_metrics, benchmark_scorer
from condambig_tasks import registry
from condambig_tasks.benchmark import options_to_json
from condambig_tasks.cli import main
from condambig_tasks.lm_eval_glue import LmEvalTask
from tests.ambignq.scripted_outputs import RAW_OUTPUTS

lm_eval_utils = LmEvalTask("ambignq")  # lm-eval's hooks of the benchmark

METRICS = ["f1_answer_all", "f1_answer_multi", "f1_bleu1", "f1_bleu2", "f1_bleu3", "f1_bleu4",
           "f1_edit_f1", "parse_rate"]



def _cli(tmp_path, capsys) -> dict:
    pred = tmp_path / "raw.json"
    pred.write_text(json.dumps([{"id": k, "output": v} for k, v in RAW_OUTPUTS.items()]))
    assert main(["ambignq", "--pred", str(pred)]) == 0
    return json.loads(capsys.readouterr().out)["metrics"]


def _lm_eval() -> dict[str, float]:
    docs = lm_eval_utils.load_docs(version=1.0)["test"]
    per_doc = [lm_eval_utils.process_results(doc, [RAW_OUTPUTS[doc["id"]]]) for doc in docs]
    # the YAML's aggregations, called with every doc's item as lm-eval calls them
    return {name: getattr(lm_eval_utils, f"agg_{name}")([values[name] for values in per_doc])
            for name in METRICS}


def _inspect() -> dict[str, float]:
    benchmark = registry.get("ambignq")
    options = options_to_json(benchmark, benchmark.options({}))
    score_fn = benchmark_scorer("ambignq", options, False)
    sample_scores = []
    for record in benchmark.load(benchmark.options({})):
        metadata = {"record": benchmark.to_record(record)}
        state = TaskState(
            model=ModelName("test/scripted"), sample_id=record.id, epoch=1,
            input=benchmark.prompt(record, benchmark.options({})), messages=[],
            output=ModelOutput.from_content("scripted", RAW_OUTPUTS[record.id]),
            metadata=metadata,
        )
        score = asyncio.run(score_fn(state, Target(benchmark.target(record, None))))
        sample_scores.append(SampleScore(score=score, sample_id=record.id,
                                         sample_metadata=metadata))
    return benchmark_metrics("ambignq", options, False)(sample_scores)


def test_three_paths_agree(use_fixture_data, tmp_path, capsys):
    cli = _cli(tmp_path, capsys)
    assert cli["parse_rate"] == pytest.approx(8 / 10)
    # fx-004: 1 of 2 multi answers (2/3 beats the single annotation 0); fx-005: 9 yes, 12 no;
    # fx-008: 1 of 2 answers; fx-009: no answer; fx-010: both answers
    assert cli["f1_answer_all"] == pytest.approx(
        (1 + 1 + 0 + 2 / 3 + 0.5 + 1 + 1 + 2 / 3 + 0 + 1) / 10)
    lm_eval, inspect = _lm_eval(), _inspect()
    for name in METRICS:
        assert lm_eval[name] == pytest.approx(cli[name]), name
        assert inspect[name] == pytest.approx(cli[name]), name
