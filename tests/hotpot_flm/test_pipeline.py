"""The C → A → D pipeline with scripted agents: metric plumbing and the downstream cache."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from condambig_tasks.hotpot_flm.agents import (
    AgentChoice,
    AgentQuery,
    generative_choice,
    generative_prompt,
)
from condambig_tasks.hotpot_flm.cache import AnswerCache, NoCache
from condambig_tasks.hotpot_flm.loader import load_examples
from condambig_tasks.hotpot_flm.prompts import (
    DOWNSTREAM_SUFFIX,
    candidate_order,
    downstream_prompt,
)
from tests.hotpot_flm.conftest import repeater_questions, run_pipeline_now


class MaskedFactAgent:
    """Always returns the masked fact (an oracle answering agent)."""

    def __init__(self, examples):
        self.masked = {e.id: e.masked_index for e in examples}

    def choose(self, queries: Sequence[AgentQuery]) -> list[AgentChoice]:
        return [AgentChoice(self.masked[q.example_id]) for q in queries]


class FirstCandidateAgent:
    def choose(self, queries: Sequence[AgentQuery]) -> list[AgentChoice]:
        return [AgentChoice(0) for _ in queries]


class ContextReader:
    """Answers the gold answer when the fact that holds it is in the prompt, else 'unknown'.

    Records every prompt it was asked, so tests can count computed answers.
    """

    identity = "context-reader"
    decoding = "scripted"

    def __init__(self, examples):
        self.needed = {e.question: (e.masked_fact.sentence, e.answer) for e in examples}
        self.asked: list[str] = []

    def answer(self, prompts: Sequence[str]) -> list[str]:
        self.asked.extend(prompts)
        answers = []
        for prompt in prompts:
            question = next(q for q in self.needed if prompt.startswith(q))
            sentence, gold = self.needed[question]
            answers.append(gold if sentence in prompt else "unknown")
        return answers


@pytest.fixture
def examples(flm_data):
    return load_examples("full")


def test_masked_fact_agent_gives_mfrr_one_and_full_recovery(examples, tmp_path):
    downstream = ContextReader(examples)
    run = run_pipeline_now(examples, repeater_questions(examples), MaskedFactAgent(examples),
                           downstream, NoCache())
    metrics = run.metrics()
    assert metrics["mfrr"] == 1.0
    assert metrics["f1_complete"] == 1.0 and metrics["em_complete"] == 1.0
    assert metrics["f1_response"] == 1.0
    # "unknown" still matches nothing; a yes/no gold answer gets 0 against it
    assert metrics["f1_incomplete"] == 0.0
    assert metrics["f1_recovery"] == pytest.approx(100.0)
    assert metrics["em_recovery"] == pytest.approx(100.0)
    assert metrics["improved_rate"] == 1.0


def test_first_candidate_agent_hand_computed(examples):
    agent = FirstCandidateAgent()
    run = run_pipeline_now(examples, repeater_questions(examples), agent, ContextReader(examples),
                           NoCache())
    hits = [e.masked_index == 0 for e in examples]
    metrics = run.metrics()
    assert metrics["mfrr"] == pytest.approx(sum(hits) / len(examples))
    assert metrics["f1_response"] == pytest.approx(sum(hits) / len(examples))
    assert metrics["f1_recovery"] == pytest.approx(100 * sum(hits) / len(examples))
    for outcome, example in zip(run.outcomes, examples, strict=True):
        assert outcome.returned_fact == example.candidates[0].render()
        assert outcome.question_asked == example.question


def test_downstream_prompts_follow_the_paper(examples):
    downstream = ContextReader(examples)
    run_pipeline_now(examples[:1], repeater_questions(examples[:1]), MaskedFactAgent(examples),
                     downstream, NoCache())
    example = examples[0]
    assert (f"{example.question} {example.incomplete_context}{DOWNSTREAM_SUFFIX}"
            in downstream.asked)
    assert (f"{example.question} {example.complete_context}{DOWNSTREAM_SUFFIX}"
            in downstream.asked)


def test_second_run_computes_no_incomplete_or_complete_answers(examples, tmp_path):
    path = tmp_path / "answers.sqlite"
    first_reader = ContextReader(examples)
    first = run_pipeline_now(examples, repeater_questions(examples), FirstCandidateAgent(),
                             first_reader, AnswerCache(path, first_reader.identity, "scripted"))
    assert first.computed["incomplete"] == len(examples)
    assert first.computed["complete"] == len(examples)
    # another "model under evaluation": different questions, different returned facts
    second_reader = ContextReader(examples)
    second = run_pipeline_now(examples, {e.id: "who?" for e in examples}, MaskedFactAgent(examples),
                              second_reader, AnswerCache(path, second_reader.identity, "scripted"))
    assert second.computed["incomplete"] == 0 and second.computed["complete"] == 0
    fixed_prompts = {downstream_prompt(e.question, context) for e in examples
                     for context in (e.incomplete_context, e.complete_context)}
    assert second_reader.asked and not fixed_prompts & set(second_reader.asked)
    assert second.metrics()["f1_incomplete"] == first.metrics()["f1_incomplete"]
    # a different downstream model is a different cache key: everything is computed again
    third = run_pipeline_now(examples, repeater_questions(examples), FirstCandidateAgent(),
                             ContextReader(examples), AnswerCache(path, "another-model", "scripted"))
    assert third.computed["incomplete"] == len(examples)


def test_cache_survives_reopening(tmp_path):
    cache = AnswerCache(tmp_path / "c.sqlite", "m", "greedy")
    cache.put_many({"prompt one": "answer one"})
    reopened = AnswerCache(tmp_path / "c.sqlite", "m", "greedy")
    assert reopened.get_many(["prompt one", "prompt two"]) == {"prompt one": "answer one"}
    assert AnswerCache(tmp_path / "c.sqlite", "m", "beam").get_many(["prompt one"]) == {}


def test_generative_agent_reads_numbers_and_falls_back_at_random(examples):
    example = examples[0]
    query = AgentQuery.for_example(example, "What was Oskar Velde's job?")
    order = candidate_order(example.id, len(example.candidates))
    prompt = generative_prompt(query)
    assert prompt.startswith(f"Question: {query.question}\n\n0. ")
    assert prompt.endswith("Which answer is correct? Only say the number of the answer, nothing else.")
    shown = order.index(example.masked_index)
    # as the authors' OpenAI_Oracle lists them: only the masked fact has its title
    assert f"{shown}. {example.masked_fact.render()}\n" in prompt
    for position, index in enumerate(order):
        if index != example.masked_index:
            assert f"\n{position}. {example.candidates[index].sentence}\n" in prompt
            assert example.candidates[index].render() not in prompt
    assert generative_choice(query, str(shown)) == AgentChoice(example.masked_index)
    assert generative_choice(query, f"<think>maybe 0</think> Answer: {shown}.") == AgentChoice(
        example.masked_index)
    for reply in ("", "none of them", str(len(example.candidates)), "9" * 5000, "<think>3"):
        choice = generative_choice(query, reply)
        assert not choice.valid and 0 <= choice.index < len(example.candidates)
        assert generative_choice(query, reply) == choice  # the random pick is reproducible
