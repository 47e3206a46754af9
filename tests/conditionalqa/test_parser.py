"""Parsing model replies: total, counted, citations mapped back to element strings."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condambig_tasks.conditionalqa.parser import (
    parse_model_output,
    parse_official_answers,
    resolve_citation,
)
from tests.support.work import growth

ELEMENTS = {
    1: "<h1>Overview</h1>",
    2: "<p>You can apply if:</p>",
    3: "<li>you own your home</li>",
    5: "<li>your garden is at least 20 square metres</li>",
}


def answers_of(output: str):
    parsed = parse_model_output(output, ELEMENTS)
    assert parsed.parsed, parsed.failure
    return parsed.official_answers()


def test_requested_format_maps_numbers_to_elements():
    output = '{"answers": [{"answer": "yes", "conditions": [3, 5]}, {"answer": "no", "conditions": []}]}'
    assert answers_of(output) == [("yes", [ELEMENTS[3], ELEMENTS[5]]), ("no", [])]


def test_empty_answers_means_not_answerable_and_is_a_successful_parse():
    parsed = parse_model_output('{"answers": []}', ELEMENTS)
    assert parsed.parsed and parsed.answers == ()


@pytest.mark.parametrize(
    "output",
    [
        '```json\n{"answers": [{"answer": "yes", "conditions": [3]}]}\n```',
        'Sure! Here is my answer:\n{"answers": [{"answer": "yes", "conditions": [3]}]}\nHope it helps.',
        '<think>The user owns the home, see [2] and {"draft": 1}.</think>{"answers": [{"answer": "yes", "conditions": ["3"]}]}',
        # a bracketed number in the prose comes before the JSON
        'Element [2] matters. {"answers": [{"answer": "yes", "conditions": ["[3]"]}]}',
        '[{"answer": "yes", "conditions": [3]}]',
        '[["yes", [3]]]',
        '{"answer": "yes", "conditions": 3}',
        '{"answers": [{"answer": "yes", "conditions": "3"}]}',
        '{"answers": [{"answer": "yes", "conditions": ["<li>you own your home</li>"]}]}',
        '{"answers": [{"answer": true, "conditions": [3.0]}]}',
    ],
)
def test_accepted_variants(output):
    assert answers_of(output) == [("yes", [ELEMENTS[3]])]


def test_plain_string_answers_have_no_conditions():
    assert answers_of('{"answers": ["within 4 weeks", "£110"]}') == [("within 4 weeks", []), ("£110", [])]


def test_comma_separated_citation_string():
    assert answers_of('{"answers": [{"answer": "yes", "conditions": "3, 5"}]}') == [
        ("yes", [ELEMENTS[3], ELEMENTS[5]])
    ]


def test_out_of_range_and_unreadable_citations_are_dropped_and_counted():
    output = json.dumps({"answers": [{"answer": "yes", "conditions": [3, 4, 99, 0, -1, "seven", True, 3]}]})
    parsed = parse_model_output(output, ELEMENTS)
    # 4 was not shown (omitted by truncation), 99/0/-1 do not exist, "seven" and true are unreadable
    assert parsed.official_answers() == [("yes", [ELEMENTS[3], ELEMENTS[3]])]
    assert parsed.out_of_range_citations == 6


@pytest.mark.parametrize(
    "output",
    [
        '{"answers": [{"answer": "not answerable", "conditions": []}]}',
        '{"answers": "unanswerable"}',
        '{"not_answerable": true}',
        '{"answers": [{"answer": "", "conditions": [3]}]}',
        '{"answers": null}',
    ],
)
def test_no_answer_spellings(output):
    parsed = parse_model_output(output, ELEMENTS)
    assert parsed.parsed and parsed.answers == ()


def test_truncated_json_is_repaired_by_the_shared_extractor():
    parsed = parse_model_output('{"answers": [{"answer": "yes", "conditions": [3, 5', ELEMENTS)
    assert parsed.parsed
    assert parsed.official_answers() == [("yes", [ELEMENTS[3], ELEMENTS[5]])]


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        ("Yes, you can apply.", "no JSON"),
        ("<think>still thinking about [3]", "empty"),
        ('{"verdict": "yes"}', "answers structure"),
        ('{"answers": [{"text": {"nested": 1}}]}', "answers structure"),
        ('{"answers": [["yes", "3", "extra"]]}', "answers structure"),
        ("[1, 2, 3]", "answers structure"),
        (None, "not text"),
        (42, "not text"),
    ],
)
def test_failures_are_recorded_not_raised(output, reason):
    parsed = parse_model_output(output, ELEMENTS)
    assert not parsed.parsed and parsed.answers == ()
    assert reason in parsed.failure


def test_megabyte_of_junk_is_fast_and_total():
    """Total, and linear: 4x the junk takes well under 16x (quadratic) the work."""
    def junk(copies: int) -> str:  # 40 copies: ~1 MB of brackets and noise
        return ("{[" * 1000 + "garbage ] } ,: " * 1000) * copies

    assert not parse_model_output(junk(40), ELEMENTS).parsed
    assert growth(lambda text: parse_model_output(text, ELEMENTS), junk(10), junk(40)) < 8


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from('{}[]":,0123456789 yesnoanswrcdi<>/think\n'), max_size=300))
def test_parser_never_raises(text):
    parsed = parse_model_output(text, ELEMENTS)
    assert parsed.parsed or parsed.failure


def test_resolve_citation_forms():
    assert resolve_citation(3, ELEMENTS) == ELEMENTS[3]
    assert resolve_citation("element 5", ELEMENTS) == ELEMENTS[5]
    assert resolve_citation("#5", ELEMENTS) == ELEMENTS[5]
    assert resolve_citation(" <li>you own your home</li> ", ELEMENTS) == ELEMENTS[3]
    assert resolve_citation(4, ELEMENTS) is None
    assert resolve_citation(False, ELEMENTS) is None
    assert resolve_citation({"n": 3}, ELEMENTS) is None


def test_official_prediction_answers_are_strict():
    assert parse_official_answers([["yes", ["<p>a</p>"]], ["no", []]], "p") == [("yes", ["<p>a</p>"]), ("no", [])]
    for bad in (["yes"], [["yes"]], [["yes", "<p>a</p>"]], [[1, []]], [["yes", [1]]], "yes"):
        with pytest.raises(ValueError, match="answer"):
            parse_official_answers(bad, "predictions.json (q1)")
