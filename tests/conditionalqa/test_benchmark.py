"""The benchmark class: options, prompts, the record round trip and the shared scoring path."""

from __future__ import annotations

import json

import pytest

from condambig_tasks import registry
from condambig_tasks.benchmark import reported_values
from condambig_tasks.conditionalqa.benchmark import (
    DEFAULT_MAX_DOCUMENT_WORDS,
    ConditionalQA,
    ConditionalQAOptions,
)
from condambig_tasks.errors import ConfigurationError

BENCHMARK = ConditionalQA()
SCORES = ("em", "em_with_conditions", "f1", "f1_with_conditions")


def scores_of(sample) -> tuple[float, ...]:
    return tuple(sample.values[name] for name in SCORES)


def test_registry_names_the_class():
    assert isinstance(registry.get("conditionalqa"), ConditionalQA)


def test_options_from_lm_eval_metadata_ignore_foreign_keys_and_coerce():
    options = BENCHMARK.options(
        {"version": 1.0, "pretrained": "/models/x", "split": "dev", "max_document_words": "250"},
        strict=False,
    )
    assert options == ConditionalQAOptions(split="dev", max_document_words=250)
    assert BENCHMARK.options({}).max_document_words == DEFAULT_MAX_DOCUMENT_WORDS
    for whole in (0, "0", None, "none", "all"):
        assert BENCHMARK.options({"max_document_words": whole}).max_document_words is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"split": "test_no_answer"}, "split must be one of dev, train; got 'test_no_answer'"),
        ({"split": "validation"}, "split must be one of dev, train; got 'validation'"),
        ({"max_document_words": "many"}, "must be int"),
        ({"max_document_words": -5}, ">= 0"),
    ],
)
def test_bad_options_say_what_to_use(options, message):
    with pytest.raises(ConfigurationError, match=message):
        BENCHMARK.options(options)


def test_prompt_numbers_elements_and_gives_scenario_and_question(fixture_data):
    options = BENCHMARK.options({})
    items = BENCHMARK.load(options)
    assert len(items) == 10
    prompt = BENCHMARK.prompt(items[1], options)
    assert "[6] <li>you own your home or have written permission from your landlord</li>" in prompt
    assert "Scenario: I rent a flat with a small garden" in prompt
    assert "Question: Am I eligible for the grant?" in prompt
    assert '{"answers": []}' in prompt
    assert not any(item.view.truncated for item in items)
    assert items[1].view.element_map()[6] == (
        "<li>you own your home or have written permission from your landlord</li>")


def test_small_budget_truncates_and_is_counted(fixture_data):
    options = BENCHMARK.options({"max_document_words": 70})
    items = BENCHMARK.load(options)
    # garden document: 92 words (tags included); boat document: 62 words
    assert [item.view.truncated for item in items] == [True] * 4 + [False] * 2 + [True] * 4
    assert "omitted to fit the length limit" in BENCHMARK.prompt(items[0], options)
    samples = [BENCHMARK.score(item, '{"answers": []}', options) for item in items]
    assert reported_values(BENCHMARK, samples, options, judged=False)["truncated_documents"] == 8


def test_record_round_trip_is_json(fixture_data):
    for item in BENCHMARK.load(BENCHMARK.options({})):
        record = BENCHMARK.to_record(item)
        assert json.loads(json.dumps(record)) == record
        assert BENCHMARK.from_record(record) == item


def test_parse_failure_scores_zero_even_when_not_answerable(fixture_data):
    options = BENCHMARK.options({})
    unanswerable = BENCHMARK.load(options)[5]
    assert unanswerable.question.answers == ()
    assert scores_of(BENCHMARK.score(unanswerable, '{"answers": []}', options)) == (1.0,) * 4
    failed = BENCHMARK.score(unanswerable, "I cannot tell.", options)
    assert failed.values["parse_rate"] == 0.0
    assert "parse failure" in failed.explanation
    assert scores_of(failed) == (0.0,) * 4


def test_breakdown_values_are_none_outside_the_breakdown(fixture_data):
    options = BENCHMARK.options({})
    yes_no = BENCHMARK.score(BENCHMARK.load(options)[0], '{"answers": ["yes"]}', options)
    assert yes_no.values["yesno_em"] == 1.0
    assert yes_no.values["extractive_em"] is None and yes_no.values["conditional_em"] is None


def test_gold_replies_score_one(fixture_data):
    options = BENCHMARK.options({})
    item = BENCHMARK.load(options)[1]
    number_of = {element: number for number, element in item.view.element_map().items()}
    yes_conditions, no_conditions = (
        [number_of[c] for c in answer.conditions] for answer in item.question.answers
    )
    reply = json.dumps({"answers": [
        {"answer": "no", "conditions": no_conditions}, {"answer": "yes", "conditions": yes_conditions}
    ]})
    assert scores_of(BENCHMARK.score(item, reply, options)) == (1.0,) * 4


def test_metric_specs_follow_the_official_report():
    names = [spec.name for spec in BENCHMARK.metric_specs]
    assert names[:16] == [prefix + key for prefix in ("", "yesno_", "extractive_", "conditional_")
                          for key in SCORES]
    assert names[16:] == ["parse_rate", "out_of_range_citations", "truncated_documents",
                          "outputs_truncated"]
