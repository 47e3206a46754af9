"""The CondAmbigQA parser is total and recovers the structure models actually write."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condambig_metrics.condambigqa import citation_score
from condambig_tasks.condambigqa.parser import parse_response
from condambig_tasks.condambigqa.records import Setting

PAIRS = {"conditions": [
    {"condition": "men's race", "answer": "Ben", "citations": ["Fragment 1"]},
    {"condition": "women's race", "answer": "Ana", "citations": ["Fragment 2", "Fragment 3"]},
]}


@given(st.text(max_size=2000))
@settings(max_examples=300, deadline=None)
def test_never_raises_on_arbitrary_text(text):
    for setting in Setting:
        result = parse_response(text, setting, 5)
        assert result.parsed in (True, False)
        assert result.parsed or result.error


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(["condition", "answer", "citations", "conditions", "x"]),
                      children, max_size=4),
    max_leaves=20,
))
@settings(max_examples=300, deadline=None)
def test_never_raises_on_wrong_json_types(value):
    result = parse_response(json.dumps(value), Setting.MAIN, 5)
    for pair in result.pairs:
        assert all(1 <= n <= 5 for n in pair.citations)


@pytest.mark.parametrize("text", [
    json.dumps(PAIRS),
    "```json\n" + json.dumps(PAIRS, indent=2) + "\n```",
    "Here are the conditions I found:\n" + json.dumps(PAIRS) + "\nLet me know if you need more.",
    json.dumps(PAIRS)[:-2] + ",]}",  # trailing comma
    "<think>The user wants {\"conditions\": []} maybe.</think>\n" + json.dumps(PAIRS),
])
def test_recovers_structure(text):
    result = parse_response(text, Setting.MAIN, 5)
    assert result.parsed, result.error
    assert [(p.condition, p.answer, p.citations) for p in result.pairs] == [
        ("men's race", "Ben", (1,)), ("women's race", "Ana", (2, 3))]


def test_truncated_json_keeps_complete_pairs():
    text = json.dumps(PAIRS)
    truncated = text[: text.index("Fragment 3") + 4]
    result = parse_response(truncated, Setting.MAIN, 5)
    assert result.parsed
    assert result.pairs[0].answer == "Ben"
    assert result.pairs[1].answer == "Ana"


@pytest.mark.parametrize("citation, expected", [
    ("Fragment 3", (3,)), ("[3]", (3,)), ("3", (3,)), (3, (3,)), ("F3", (3,)),
    ("Fragment 3 - 2010 World Cup", (3,)), ("fragment #3", (3,)),
    ("A title", ()),
    # one entry cites one fragment, its first number (the authors' format_fragment_citation)
    ("Fragment 18, Fragment 19", (18,)), ("Fragments 1, 2 and 4", (1,)), ("[1][2]", (1,)),
])
def test_citation_forms(citation, expected):
    text = json.dumps({"conditions": [{"condition": "c", "answer": "a", "citations": [citation]}]})
    assert parse_response(text, Setting.MAIN, 20).pairs[0].citations == expected


def test_several_fragments_in_one_entry_count_as_the_first_only():
    """eq. 1 on ["Fragment 18, Fragment 19"] against gold {19}: M = {18}, so 0 (reading both
    numbers would give 1/2)."""
    text = json.dumps({"conditions": [{"condition": "c", "answer": "a",
                                       "citations": ["Fragment 18, Fragment 19"]}]})
    pair = parse_response(text, Setting.MAIN, 20).pairs[0]
    assert pair.citations == (18,) and pair.invalid_citations == ()
    assert citation_score(pair.citations, (19,), pair.invalid_citations) == 0.0
    assert pair.cited_entry_count == 1


def test_out_of_range_citations_are_kept_as_invalid_and_duplicates_merged():
    text = json.dumps({"conditions": [
        {"condition": "c", "answer": "a", "citations": ["Fragment 9", "Fragment 0", "2", "[2]"]},
    ]})
    result = parse_response(text, Setting.MAIN, 5)
    assert result.pairs[0].citations == (2,)
    assert result.pairs[0].invalid_citations == ("F9", "F0")
    assert result.out_of_range_citations == 2
    assert result.duplicate_citations == 1


def test_entries_naming_no_fragment_are_invalid_and_counted():
    text = json.dumps({"conditions": [
        {"condition": "c", "answer": "a",
         "citations": ["Fragment X", "Condition 1", "condition  1", "Fragment 2", "F25", " "]},
    ]})
    pair = parse_response(text, Setting.MAIN, 20).pairs[0]
    # "Condition 1" and "condition  1" are one entry (case and spacing folded); the blank
    # entry cites nothing
    assert pair.citations == (2,)
    assert pair.invalid_citations == ("fragment x", "condition 1", "F25")
    assert parse_response(text, Setting.MAIN, 20).out_of_range_citations == 4


def test_k_counts_the_citation_list_as_written():
    # the authors' table code takes len(citations): repeated and invalid entries count
    text = json.dumps({"conditions": [
        {"condition": "c", "answer": "a", "citations": ["Fragment 1", "Fragment 1", "Fragment 30"]},
        {"condition": "d", "answer": "b", "citations": "Fragment 2"},
        {"condition": "e", "answer": "c"},
    ]})
    pairs = parse_response(text, Setting.MAIN, 20).pairs
    assert [p.citations for p in pairs] == [(1,), (2,), ()]
    assert [p.cited_entry_count for p in pairs] == [3, 1, 0]


@pytest.mark.parametrize("text, reason", [
    ("", "empty"), ("I don't know.", "no JSON"), ("<think>still thinking {\"a\": 1}", "empty"),
    ('[en5 ?', "no object"), (None, "not text"),
])
def test_failures_are_reported_not_raised(text, reason):
    result = parse_response(text, Setting.MAIN, 5)
    assert not result.parsed
    assert reason in result.error


def test_huge_junk_is_bounded():
    result = parse_response("{" * 30_000 + "x" * 1_000_000, Setting.MAIN, 5)
    assert not result.parsed


def test_closed_book_accepts_plain_prose_and_strings():
    prose = parse_response("Paris, since 1944.", Setting.CLOSED_BOOK, 0)
    assert prose.parsed and prose.pairs[0].answer == "Paris, since 1944."
    listed = parse_response('["Paris", "Lyon"]', Setting.CLOSED_BOOK, 0)
    assert [p.answer for p in listed.pairs] == ["Paris", "Lyon"]
    # where structure was asked for, bare strings are not pairs
    assert not parse_response('["Paris"]', Setting.MAIN, 3).parsed


def test_closed_book_ignores_citations_and_single_object_is_one_pair():
    text = json.dumps({"condition": "before 1872", "answer": "Port Royal", "citations": [1]})
    result = parse_response(text, Setting.CLOSED_BOOK_CONDITIONS, 0)
    assert result.pairs[0].citations == ()
    assert result.pairs[0].condition == "before 1872"


def test_explicit_empty_list_is_parsed_with_no_pairs():
    result = parse_response('{"conditions": []}', Setting.MAIN, 3)
    assert result.parsed and result.pairs == ()


def test_closed_book_citations_are_neither_kept_nor_counted():
    text = json.dumps({"answers": [{"answer": "Paris", "citations": ["Fragment 7", "7"]}]})
    result = parse_response(text, Setting.CLOSED_BOOK, 0)
    assert result.pairs[0].citations == ()
    assert (result.out_of_range_citations, result.duplicate_citations) == (0, 0)


# A valid JSON answer whose strings hold a fenced snippet or the text </think>: read whole,
# never cut inside a string (the fence or the tag inside it is the answer's own text).
FENCED_IN_STRING = json.dumps([
    {"condition": "If it asks for the format",
     "answer": 'Reply with ```json\n{"answer": "x"}\n``` as shown', "citations": ["Fragment 1"]},
    {"condition": "Otherwise", "answer": "Plain text", "citations": [2]},
])
THINK_IN_STRING = json.dumps([
    {"condition": "If the tag counts", "answer": "It ends at </think> here", "citations": [1]},
    {"condition": "Otherwise", "answer": "Nothing to end", "citations": [2]},
])


@pytest.mark.parametrize("output", [
    FENCED_IN_STRING, THINK_IN_STRING,
    "<think>fences or tags?</think>\n" + FENCED_IN_STRING,
    "<think>fences or tags?</think>\n" + THINK_IN_STRING,
    "a trace whose opening tag was in the prompt</think>\n" + THINK_IN_STRING,
    "```json\n" + FENCED_IN_STRING + "\n```",
])
def test_a_json_answer_is_never_cut_inside_its_strings(output):
    expected = json.loads(output[output.index("["):output.rindex("]") + 1])
    parsed = parse_response(output, Setting.MAIN, 3)
    assert parsed.parsed, parsed.error
    assert [(p.condition, p.answer, p.citations) for p in parsed.pairs] == [
        (item["condition"], item["answer"], (index + 1,)) for index, item in enumerate(expected)]
