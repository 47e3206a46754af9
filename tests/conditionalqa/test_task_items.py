"""Task options, prompts and the shared scoring path."""

from __future__ import annotations

import json

import pytest

from condambig_tasks.conditionalqa.scoring import parsing_report, score_item_output
from condambig_tasks.conditionalqa.task_items import (
    DEFAULT_MAX_DOCUMENT_WORDS,
    TaskConfig,
    TaskItem,
    load_task_items,
)


def test_options_from_lm_eval_metadata_ignore_foreign_keys_and_coerce():
    config = TaskConfig.from_options(
        {"version": 1.0, "pretrained": "/models/x", "split": "dev", "max_document_words": "250"}
    )
    assert config == TaskConfig(split="dev", max_document_words=250)
    assert TaskConfig.from_options({}).max_document_words == DEFAULT_MAX_DOCUMENT_WORDS
    for whole in (0, "0", None, "none", "all"):
        assert TaskConfig.from_options({"max_document_words": whole}).max_document_words is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"split": "test_no_answer"}, "no public answers"),
        ({"split": "validation"}, "cannot be scored"),
        ({"max_document_words": "many"}, "must be an integer"),
        ({"max_document_words": -5}, ">= 0"),
    ],
)
def test_bad_options_say_what_to_use(options, message):
    with pytest.raises(ValueError, match=message):
        TaskConfig.from_options(options)


def test_prompt_numbers_elements_and_gives_scenario_and_question(fixture_data):
    items = load_task_items(TaskConfig())
    assert len(items) == 6
    prompt = items[1].prompt
    assert "[6] <li>you own your home or have written permission from your landlord</li>" in prompt
    assert "Scenario: I rent a flat with a small garden" in prompt
    assert "Question: Am I eligible for the grant?" in prompt
    assert '{"answers": []}' in prompt
    assert not any(item.truncated for item in items)
    assert items[1].elements[6] == "<li>you own your home or have written permission from your landlord</li>"


def test_small_budget_truncates_and_is_counted(fixture_data):
    items = load_task_items(TaskConfig(max_document_words=70))
    # garden document: 92 words (tags included); boat document: 62 words
    assert [item.truncated for item in items] == [True, True, True, True, False, False]
    assert "omitted to fit the length limit" in items[0].prompt
    scored = [score_item_output('{"answers": []}', item) for item in items]
    assert parsing_report(scored)["truncated_documents"] == 4


def test_record_round_trip_is_flat(fixture_data):
    for item in load_task_items(TaskConfig()):
        record = item.to_record()
        assert all(isinstance(value, (str, int, bool)) for value in record.values())
        assert TaskItem.from_record(record) == item


def test_parse_failure_scores_zero_even_when_not_answerable(fixture_data):
    unanswerable = load_task_items(TaskConfig())[5]
    assert unanswerable.reference_answers == ()
    assert score_item_output('{"answers": []}', unanswerable).scores.values() == (1.0, 1.0, 1.0, 1.0)
    failed = score_item_output("I cannot tell.", unanswerable)
    assert not failed.parsed.parsed
    assert failed.scores.values() == (0.0, 0.0, 0.0, 0.0)


def test_gold_replies_score_one(fixture_data):
    items = load_task_items(TaskConfig())
    number_of = {element: number for number, element in items[1].elements.items()}
    yes_conditions, no_conditions = (
        [number_of[c] for c in conditions] for _, conditions in items[1].reference_answers
    )
    reply = json.dumps({"answers": [
        {"answer": "no", "conditions": no_conditions}, {"answer": "yes", "conditions": yes_conditions}
    ]})
    assert score_item_output(reply, items[1]).scores.values() == (1.0, 1.0, 1.0, 1.0)
