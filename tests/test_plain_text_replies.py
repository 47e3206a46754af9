"""Labelled plain-text replies, as a real instruction-tuned model writes them instead of the
JSON asked for. Every output here is a real SmolLM2-135M-Instruct output (greedy, through
lm-eval's ``hf`` backend with the chat template; docs/evaluation-report.md)."""

from __future__ import annotations

import pytest

from condambig_tasks.abg_coqa.parser import parse_detection, parse_text
from condambig_tasks.ambignq.parser import parse_reply
from condambig_tasks.conditionalqa.parser import parse_model_output
from condambig_tasks.parsing import MAX_LABELLED_LINES, labelled_answer, labelled_pairs

LOOPING = ("Question: How often does spermatogeneis—the production of sperm—occur?\n\n"
           "Answer: 1\n\n") * 7 + "Question: How often"


def test_ambignq_reads_an_answer_after_a_sentence_label():
    reply = parse_reply("The answer to this question is: The Doctor in the movie dexter season 1.")
    assert reply.parsed
    assert [(pair.question, pair.answer) for pair in reply.pairs] == [
        ("", "The Doctor in the movie dexter season 1.")]


def test_ambignq_reads_question_answer_lines_as_written():
    """Each labelled answer with the question before it; the repetition a looping model
    writes stays (the official script scores every predicted answer)."""
    reply = parse_reply(LOOPING)
    assert reply.parsed and len(reply.pairs) == 7
    assert {(p.question, p.answer) for p in reply.pairs} == {
        ("How often does spermatogeneis—the production of sperm—occur?", "1")}
    short = parse_reply("Question: How many episodes are in season 2 of chesapeake shores?\n\nAnswer: 2")
    assert [(p.question, p.answer) for p in short.pairs] == [
        ("How many episodes are in season 2 of chesapeake shores?", "2")]


@pytest.mark.parametrize("output", [
    "The first remote control TV was invented in 1948.",
    "The st louis cardinals moved to arizona because of the st louis cardinals.",
    "",
])
def test_ambignq_prose_without_a_label_stays_a_parse_failure(output):
    reply = parse_reply(output)
    assert not reply.parsed and reply.pairs == ()


def test_a_json_reply_is_read_as_json_first():
    reply = parse_reply('Answer: ignored\n[{"question": "Who?", "answer": "Curie"}]')
    assert [(p.question, p.answer) for p in reply.pairs] == [("Who?", "Curie")]


def test_conditionalqa_reads_a_labelled_or_bare_yes_no_answer():
    reply = parse_model_output("The document is a list of numbered HTML elements.\n\n"
                               "The answer to the question is:\n\nYes", {1: "<p>x</p>"})
    assert reply.parsed and reply.official_answers() == [("Yes", [])]
    assert parse_model_output("No", {}).official_answers() == [("No", [])]
    not_answerable = parse_model_output("Answer: not answerable", {})
    assert not_answerable.parsed and not_answerable.answers == ()


INTRO = "The document is a list of numbered HTML elements.\n\n"


@pytest.mark.parametrize(("output", "answer"), [
    (INTRO + 'The answer to the question is "yes"', "yes"),
    (INTRO + 'The answer is "yes" to the question "Are there any age requirements for the '
             'adopter when adopting a child in the UK?"', "yes"),
    (INTRO + 'The answer to the question "Will I pay capital gains tax if I sell my current '
             'home in order to move into an inherited property?" is "yes".', "yes"),
    (INTRO + 'The answer to the question "Is there a minimum age for adoption to be '
             'considered?" is "Yes."\n\nThe answer to the question "Are there any funds '
             'available?" is "yes".', "yes"),
], ids=["plain", "answer-first", "restated-question", "restated-twice"])
def test_conditionalqa_reads_a_yes_no_stated_in_a_sentence(output, answer):
    reply = parse_model_output(output, {})
    assert reply.parsed and reply.official_answers() == [(answer, [])]


@pytest.mark.parametrize("output", [
    INTRO + "The answer to the question is yes.\n\nThe answer to the question is no.\n\n"
            "The answer to the question is yes.",
    INTRO + 'The answer to the question is "yes" or "no" to the question.\n\nThe answer to '
            'the question is "yes" to the question.',
    INTRO + "I think the answer is probably in the document.",
], ids=["contradicts-itself", "hedged", "no-yes-no"])
def test_conditionalqa_contradicting_or_hedged_statements_stay_parse_failures(output):
    assert not parse_model_output(output, {}).parsed


def test_conditionalqa_prose_stays_a_parse_failure():
    reply = parse_model_output("The document is a list of numbered HTML elements.", {})
    assert not reply.parsed


def test_abg_coqa_drops_the_sentence_label():
    assert parse_detection("The answer is: the new one").answer == "the new one"
    assert parse_text("The answer to the question is:\n\nthe blue boat").text == "the blue boat"
    assert parse_text("The user meant the blue boat.").text == "The user meant the blue boat."


def test_labels_need_a_colon_at_a_line_start():
    assert labelled_answer("I think the answer is Paris.") is None
    assert labelled_answer("**Answer:** Paris") == "Paris"
    assert labelled_answer("Final answer: 42") == "42"
    assert labelled_pairs("The question: where?") == []


def test_plain_text_reading_is_bounded():
    """Only the first MAX_LABELLED_LINES lines are read; a label far beyond is not."""
    late = "\n" * (MAX_LABELLED_LINES + 5) + "Answer: late"
    assert labelled_answer(late) is None and labelled_pairs(late) == []
    assert labelled_answer("Answer:" + " " * 100_000) is None
