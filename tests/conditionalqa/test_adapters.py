"""lm-eval glue and the Inspect scorer in-process: same outputs, same numbers as condambig-score."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest

from condambig_tasks.cli import main
from condambig_tasks.lm_eval_tasks import task_folder
from tests.conditionalqa.conftest import FIXTURE_FOLDER
from tests.conditionalqa.test_score_cli import RAW_OUTPUTS

YAML = Path(task_folder()) / "conditionalqa" / "conditionalqa.yaml"


def lm_eval_config() -> dict:
    from lm_eval.tasks._yaml_loader import load_yaml

    return load_yaml(YAML, resolve_func=True)


def lm_eval_aggregate(config: dict, per_doc: list[dict]) -> dict[str, float]:
    """What lm-eval does with process_results' output: one aggregation per metric."""
    from lm_eval.api.registry import get_aggregation

    results = {}
    for entry in config["metric_list"]:
        name, aggregation = entry["metric"], entry["aggregation"]
        function = get_aggregation(aggregation) if isinstance(aggregation, str) else aggregation
        results[name] = function([values[name] for values in per_doc])
    return results


def test_yaml_options_and_generation(fixture_data):
    config = lm_eval_config()
    assert config["task"] == "conditionalqa"
    assert config["output_type"] == "generate_until"
    assert config["generation_kwargs"]["do_sample"] is False
    names = [entry["metric"] for entry in config["metric_list"]]
    for prefix in ("", "yesno_", "extractive_", "conditional_"):
        for key in ("em", "em_with_conditions", "f1", "f1_with_conditions"):
            assert prefix + key in names
    assert {"parse_rate", "out_of_range_citations", "truncated_documents"} <= set(names)


def test_lm_eval_docs_from_metadata(fixture_data):
    config = lm_eval_config()
    dataset = config["custom_dataset"](version=1.0, pretrained="/x", max_document_words=70)["test"]
    assert len(dataset) == 6
    assert sum(dataset["omitted_elements"][i] > 0 for i in range(6)) == 4
    assert config["doc_to_text"](dataset[0]).startswith("Read the UK government guidance")
    assert json.loads(config["doc_to_target"](dataset[4])) == [["£110", []], ["£55", ["<p>Electric boats pay half the fee.</p>"]]]


def test_breakdowns_average_over_their_own_subset_only(fixture_data):
    config = lm_eval_config()
    docs = config["custom_dataset"](version=1.0)["test"]
    # q0 (yes/no) right, everything else a parse failure
    outputs = ['{"answers": [{"answer": "yes", "conditions": []}]}'] + ["junk"] * 5
    per_doc = [config["process_results"](doc, [output]) for doc, output in zip(docs, outputs, strict=True)]
    results = lm_eval_aggregate(config, per_doc)
    assert results["em"] == pytest.approx(1 / 6)
    assert results["yesno_em"] == pytest.approx(1 / 2)  # q0 and q1 are the yes/no questions
    assert results["extractive_em"] == 0.0
    assert results["parse_rate"] == pytest.approx(1 / 6)
    # an empty subset is NaN, never a stand-in number
    assert math.isnan(config["metric_list"][4]["aggregation"]([(False, 1.0)]))


def cli_report(tmp_path: Path, capsys) -> dict:
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps([{"id": k, "output": v} for k, v in RAW_OUTPUTS.items()]))
    code = main(
        ["conditionalqa", "--pred", str(raw), "--ref", str(FIXTURE_FOLDER / "dev.json"),
         "--documents", str(FIXTURE_FOLDER / "documents.json")]
    )
    assert code == 0
    return json.loads(capsys.readouterr().out)


def flatten_official(report: dict) -> dict[str, float | None]:
    flat = {}
    for subset in ("total", "yesno", "extractive", "conditional"):
        prefix = "" if subset == "total" else f"{subset}_"
        for key, value in report[subset].items():
            flat[prefix + key.lower()] = value
    return flat


def test_lm_eval_equals_condambig_score(fixture_data, tmp_path, capsys):
    config = lm_eval_config()
    docs = config["custom_dataset"](version=1.0)["test"]
    per_doc = [config["process_results"](doc, [RAW_OUTPUTS[doc["id"]]]) for doc in docs]
    lm_eval_results = lm_eval_aggregate(config, per_doc)
    report = cli_report(tmp_path, capsys)
    for name, value in flatten_official(report).items():
        assert lm_eval_results[name] == pytest.approx(value), name
    assert lm_eval_results["parse_rate"] == pytest.approx(report["parsing"]["parse_rate"])
    assert lm_eval_results["out_of_range_citations"] == report["parsing"]["out_of_range_citations"]


def test_inspect_scorer_and_metrics_equal_condambig_score(fixture_data, tmp_path, capsys):
    from inspect_ai.model import ModelName, ModelOutput
    from inspect_ai.scorer import SampleScore
    from inspect_ai.solver import TaskState

    from condambig.conditionalqa import (
        build_sample,
        conditionalqa_conditional,
        conditionalqa_extractive,
        conditionalqa_parsing,
        conditionalqa_scorer,
        conditionalqa_total,
        conditionalqa_yesno,
    )
    from condambig_tasks.conditionalqa.task_items import TaskConfig, load_task_items

    scorer = conditionalqa_scorer()
    sample_scores = []
    for item in load_task_items(TaskConfig()):
        sample = build_sample(item)
        state = TaskState(
            model=ModelName("test/model"), sample_id=sample.id, epoch=1, input=sample.input,
            messages=[], metadata=sample.metadata,
            output=ModelOutput.from_content("test/model", RAW_OUTPUTS[item.id]),
        )
        score = asyncio.run(scorer(state, sample.target))
        sample_scores.append(SampleScore(score=score, sample_id=sample.id, sample_metadata=sample.metadata))
    inspect_results = {}
    for make_metric in (conditionalqa_total, conditionalqa_yesno, conditionalqa_extractive,
                        conditionalqa_conditional, conditionalqa_parsing):
        inspect_results.update(make_metric()(sample_scores))
    report = cli_report(tmp_path, capsys)
    for name, value in flatten_official(report).items():
        assert inspect_results[name] == pytest.approx(value), name
    assert inspect_results["parse_rate"] == pytest.approx(report["parsing"]["parse_rate"])
    assert inspect_results["out_of_range_citations"] == report["parsing"]["out_of_range_citations"]
    failed = next(s for s in sample_scores if s.sample_id == "dev-fixture-2")
    assert "parse failure" in failed.score.explanation
