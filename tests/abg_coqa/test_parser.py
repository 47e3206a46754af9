"""Reading Abg-CoQA replies is total; an empty reply is a counted failure."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condambig_tasks.abg_coqa.parser import parse_detection, parse_text


@pytest.mark.parametrize(
    ("output", "ambiguous", "answer"),
    [
        ("AMBIGUOUS", True, ""),
        ("Ambiguous.", True, ""),
        ("<think>two boats...</think>\nThe question is ambiguous: which boat?", True, ""),
        ("Answer: **fishing near the dock**\nBecause the story says so.", False, "fishing near the dock"),
        ('"yes"', False, "yes"),
        ("Ambiguously worded, but yes", False, "Ambiguously worded, but yes"),
    ],
)
def test_detection_label_or_answer(output, ambiguous, answer):
    reply = parse_detection(output)
    assert reply.parsed and reply.ambiguous == ambiguous and reply.answer == answer


@pytest.mark.parametrize("output", ["", "   \n\n", "<think>which boat could it", "**", None])
def test_empty_replies_are_failures(output):
    assert not parse_text(output).parsed
    detection = parse_detection(output)
    assert not detection.parsed and not detection.ambiguous and detection.answer == ""


def test_clarification_question_is_the_first_line_without_label():
    assert parse_text("Clarification question: Do you mean the red boat?\n(I ask because...)").text == \
        "Do you mean the red boat?"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text_reads_without_raising(text):
    reply = parse_text(text)
    assert reply.parsed == bool(reply.text)
    assert len(reply.text) <= 2_000
