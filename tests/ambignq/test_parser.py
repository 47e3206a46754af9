"""Parsing AmbigNQ replies is total: pairs, or a counted failure."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condambig_tasks.ambignq.parser import parse_reply
from condambig_tasks.ambignq.records import PredictedPair


@pytest.mark.parametrize(
    ("output", "pairs"),
    [
        ('[{"question": "Who sang it in 1999?", "answer": "Nora Vale"}]',
         [PredictedPair("Nora Vale", "Who sang it in 1999?")]),
        ('Here you go:\n```json\n[{"question": "q1", "answer": ["a1", "a2"]}, {"Answer": 1932}]\n```',
         [PredictedPair("a1", "q1"), PredictedPair("1932", "")]),
        ('<think>maybe [1]?</think>\n{"pairs": [{"question": "q", "answer": "x"}]}',
         [PredictedPair("x", "q")]),
        ('["Paris", "Lyon"]', [PredictedPair("Paris", ""), PredictedPair("Lyon", "")]),
        ('[{"question": "q1", "answer": "a1"}, {"question": "q2", "answer": "a2"}, {"question": "q3", "ans',
         [PredictedPair("a1", "q1"), PredictedPair("a2", "q2")]),
    ],
)
def test_pairs_are_read_from_json_in_its_usual_disguises(output, pairs):
    reply = parse_reply(output)
    assert reply.parsed and list(reply.pairs) == pairs


@pytest.mark.parametrize("output", ["", "I don't know.", "<think>still thinking", "[]",
                                    '[{"question": "q only"}]', "{" * 5000, "x" * 1_000_000])
def test_unusable_outputs_are_counted_failures(output):
    reply = parse_reply(output)
    assert not reply.parsed and reply.pairs == () and reply.error


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text_parses_without_raising(text):
    reply = parse_reply(text)
    assert reply.parsed == bool(reply.pairs)


# A valid JSON answer whose strings hold a fenced snippet or the text </think>: read whole,
# never cut inside a string.
_FENCED_IN_STRING = ('[{"question": "Which format, ```json\\n{\\"answer\\": 1}\\n```?", '
                     '"answer": "JSON"}, {"question": "Which year?", "answer": "1999"}]')
_THINK_IN_STRING = ('[{"question": "Where does </think> end?", "answer": "At the tag"}, '
                    '{"question": "Which year?", "answer": "1999"}]')
_EXPECTED = {
    _FENCED_IN_STRING: [PredictedPair("JSON", 'Which format, ```json\n{"answer": 1}\n```?'),
                        PredictedPair("1999", "Which year?")],
    _THINK_IN_STRING: [PredictedPair("At the tag", "Where does </think> end?"),
                       PredictedPair("1999", "Which year?")],
}


@pytest.mark.parametrize("answer", list(_EXPECTED))
@pytest.mark.parametrize("wrap", ["{}", "<think>which pairs?</think>\n{}", "```json\n{}\n```",
                                  "the prompt opened the trace</think> {}"])
def test_a_json_answer_is_never_cut_inside_its_strings(answer, wrap):
    reply = parse_reply(wrap.replace("{}", answer))
    assert reply.parsed, reply.error
    assert list(reply.pairs) == _EXPECTED[answer]
