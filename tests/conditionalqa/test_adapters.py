"""lm-eval glue and the Inspect task in-process: same outputs, same numbers as condambig-score."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest

from condambig_tasks.benchmark import SUITE_SPEC
from condambig_tasks.cli import main
from condambig_tasks.conditionalqa.benchmark import ConditionalQA
from tests.conditionalqa.conftest import FIXTURE_FOLDER
from tests.conditionalqa.test_score_cli import RAW_OUTPUTS


def lm_eval_config() -> dict:
    from tests.test_contract import lm_eval_task_config

    return lm_eval_task_config("conditionalqa")


def lm_eval_aggregate(config: dict, per_doc: list[dict]) -> dict[str, float]:
    """What lm-eval does with process_results' output: one aggregation per metric."""
    from lm_eval.api.registry import get_aggregation

    results = {}
    for entry in config["metric_list"]:
        name, aggregation = entry["metric"], entry["aggregation"]
        function = get_aggregation(aggregation) if isinstance(aggregation, str) else aggregation
        results[name] = function([values[name] for values in per_doc])
    return results


def test_yaml_metric_list_follows_the_metric_specs(fixture_data):
    config = lm_eval_config()
    assert config["task"] == "conditionalqa"
    assert config["output_type"] == "generate_until"
    assert config["generation_kwargs"]["do_sample"] is False
    specs = [*ConditionalQA.metric_specs, SUITE_SPEC]
    assert [entry["metric"] for entry in config["metric_list"]] == [spec.name for spec in specs]
    for entry, spec in zip(config["metric_list"], specs, strict=True):
        assert entry["higher_is_better"] is spec.higher_is_better, spec.name


def test_lm_eval_docs_from_metadata(fixture_data):
    config = lm_eval_config()
    dataset = config["custom_dataset"](version=1.0, pretrained="/x", max_document_words=70)["test"]
    assert len(dataset) == 10
    views = [json.loads(record)["view"] for record in dataset["record"]]
    assert sum(len(view["shown"]) < view["total_elements"] for view in views) == 8
    assert config["doc_to_text"](dataset[0]).startswith("Read the UK government guidance")
    assert json.loads(config["doc_to_target"](dataset[4])) == [["£110", []], ["£55", ["<p>Electric boats pay half the fee.</p>"]]]


def test_breakdowns_average_over_their_own_subset_only(fixture_data):
    config = lm_eval_config()
    docs = config["custom_dataset"](version=1.0)["test"]
    # q0 (yes/no) right, everything else a parse failure
    outputs = ['{"answers": [{"answer": "yes", "conditions": []}]}'] + ["junk"] * 9
    per_doc = [config["process_results"](doc, [output]) for doc, output in zip(docs, outputs, strict=True)]
    results = lm_eval_aggregate(config, per_doc)
    assert results["em"] == pytest.approx(1 / 10)
    assert results["yesno_em"] == pytest.approx(1 / 4)  # q0, q1, q6 and q7 are yes/no
    assert results["extractive_em"] == 0.0
    assert results["parse_rate"] == pytest.approx(1 / 10)
    # an empty subset is NaN, never a stand-in number
    assert math.isnan(config["metric_list"][4]["aggregation"]([math.nan]))


def cli_metrics(tmp_path: Path, capsys) -> dict[str, float | None]:
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps([{"id": k, "output": v} for k, v in RAW_OUTPUTS.items()]))
    code = main(["conditionalqa", "--pred", str(raw), "--ref", str(FIXTURE_FOLDER / "dev.json")])
    assert code == 0
    return json.loads(capsys.readouterr().out)["metrics"]


def assert_same(framework: dict[str, float], cli: dict[str, float | None]) -> None:
    assert set(cli) <= set(framework)
    for name, value in cli.items():
        if value is None:
            assert math.isnan(framework[name]), name
        else:
            assert framework[name] == pytest.approx(value), name


def test_lm_eval_equals_condambig_score(fixture_data, tmp_path, capsys):
    config = lm_eval_config()
    docs = config["custom_dataset"](version=1.0)["test"]
    per_doc = [config["process_results"](doc, [RAW_OUTPUTS[doc["id"]]]) for doc in docs]
    cli = cli_metrics(tmp_path, capsys)
    assert cli["out_of_range_citations"] == 1 and cli["parse_rate"] == pytest.approx(9 / 10)
    assert_same(lm_eval_aggregate(config, per_doc), cli)


def test_inspect_scorer_and_metrics_equal_condambig_score(fixture_data, tmp_path, capsys):
    from inspect_ai.model import ModelName, ModelOutput
    from inspect_ai.scorer import SampleScore, Target
    from inspect_ai.solver import TaskState

    from condambig.conditionalqa import conditionalqa

    task = conditionalqa()
    assert task.dataset.name == "conditionalqa_dev"
    [scorer] = task.scorer
    [metric] = task.metrics
    sample_scores = []
    for sample in task.dataset:
        state = TaskState(
            model=ModelName("test/model"), sample_id=sample.id, epoch=1, input=sample.input,
            messages=[], metadata=sample.metadata,
            output=ModelOutput.from_content("test/model", RAW_OUTPUTS[sample.id]),
        )
        score = asyncio.run(scorer(state, Target(sample.target)))
        sample_scores.append(SampleScore(score=score, sample_id=sample.id, sample_metadata=sample.metadata))
    assert_same(metric(sample_scores), cli_metrics(tmp_path, capsys))
    failed = next(s for s in sample_scores if s.sample_id == "dev-fixture-2")
    assert "parse failure" in failed.score.explanation


def test_a_prompt_too_long_for_the_model_names_max_document_words(fixture_data, monkeypatch):
    """The Inspect task gives the context check its own way to shorten prompts."""
    import condambig._factory as factory
    from condambig.conditionalqa import conditionalqa

    hints = []
    monkeypatch.setattr(factory, "check_prompts_fit",
                        lambda task, prompts, hint="": hints.append(hint))
    conditionalqa()
    assert hints == [" or lower -T max_document_words"]
