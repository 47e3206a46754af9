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
