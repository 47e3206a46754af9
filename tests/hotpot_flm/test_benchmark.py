"""The benchmark contract of HotpotQA-FLM: metric spec vs lm-eval YAML, Inspect role agents
(scripted doubles of Inspect models), role vs checkpoint precedence, corpus summary."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from condambig_tasks import registry
from condambig_tasks.benchmark import SUITE_SPEC, Runtime, ScoredSample, reported_values
from condambig_tasks.errors import ConfigurationError
from condambig_tasks.hotpot_flm.loader import load_examples
from condambig_tasks.hotpot_flm.prompts import candidate_order
from condambig_tasks.run import explain_nulls


class ScriptedModel:
    """Stands in for an Inspect ``Model``: ``await generate(prompt)`` -> ``.completion``."""

    def __init__(self, name: str, reply):
        self.name, self.reply, self.prompts = name, reply, []
        self.config = SimpleNamespace(model_dump=lambda exclude_none: {"temperature": 0.0})

    async def generate(self, prompt: str):
        self.prompts.append(prompt)
        return SimpleNamespace(completion=self.reply(prompt))

    def __str__(self) -> str:
        return self.name


def _oracle_roles(examples):
    """`answerer` names the masked fact's number; `downstream` answers right exactly when
    the masked fact is in its context."""
    def answer_number(prompt):
        example = next(e for e in examples if prompt.startswith(f"Question: {e.question}\n\n"))
        return str(candidate_order(example.id, len(example.candidates)).index(example.masked_index))

    def answer(prompt):
        example = next(e for e in examples if prompt.startswith(e.question))
        return example.answer if example.masked_fact.sentence in prompt else "unknown"

    return {"answerer": ScriptedModel("scripted/answerer", answer_number),
            "downstream": ScriptedModel("scripted/downstream", answer)}


def test_lm_eval_metric_list_mirrors_the_spec():
    from tests.test_contract import AggregationOf, lm_eval_variants

    benchmark = registry.get("hotpot_flm")
    variants = {variant.task: variant for variant in lm_eval_variants("hotpot_flm")}
    for task, split in (("hotpot_flm", "full"), ("hotpot_flm_test", "test")):
        config = variants[task].config
        assert [(m["metric"], m["aggregation"], m["higher_is_better"])
                for m in config["metric_list"]] == [
            (spec.name, AggregationOf(spec.name), spec.higher_is_better)
            for spec in (*benchmark.metric_specs, SUITE_SPEC)]
        assert config["dataset_kwargs"] == {"task_options": {"split": split}}


def test_roles_play_the_generative_agent_one_sample_at_a_time(flm_data):
    benchmark = registry.get("hotpot_flm")
    options = benchmark.options({})
    examples = load_examples("full")
    roles = _oracle_roles(examples)
    runtime = Runtime(roles=roles)
    samples = [sample for example in examples for sample in asyncio.run(
        benchmark.score_batch([(example, example.question)], options, runtime))]
    metrics = reported_values(benchmark, samples, options, False)
    assert metrics["mfrr"] == 1.0 and metrics["agent_fallback_rate"] == 0.0
    assert metrics["f1_complete"] == 1.0 and metrics["f1_response"] == 1.0
    assert metrics["f1_incomplete"] == 0.0
    assert metrics["f1_recovery"] == pytest.approx(100.0)
    assert metrics["improved_rate"] == 1.0 and metrics["empty_question_rate"] == 0.0
    assert samples[0].details["answering_agent"] == "role answerer: scripted/answerer"
    assert samples[0].details["downstream_model"] == "role downstream: scripted/downstream"
    assert sorted(samples[0].details["answers_computed"]) == ["complete", "incomplete", "response"]
    # the downstream cache is the pipeline's: a rerun asks the downstream role nothing
    asked = len(roles["downstream"].prompts)
    again = asyncio.run(benchmark.score_batch([(examples[0], examples[0].question)], options,
                                              runtime))
    assert len(roles["downstream"].prompts) == asked
    assert again[0].details["answers_computed"] == []
    assert again[0].values == samples[0].values


def test_a_reply_without_a_number_falls_back_and_is_counted(flm_data):
    benchmark = registry.get("hotpot_flm")
    options = benchmark.options({"downstream_cache": False})
    examples = load_examples("full")
    roles = {**_oracle_roles(examples), "answerer": ScriptedModel("x", lambda prompt: "none")}
    samples = asyncio.run(benchmark.score_batch([(e, "") for e in examples], options,
                                                Runtime(roles=roles)))
    metrics = reported_values(benchmark, samples, options, False)
    assert metrics["agent_fallback_rate"] == 1.0 and metrics["empty_question_rate"] == 1.0
    # one name per concept: a sample's rate values carry their metric's name
    rates = {spec.name for spec in benchmark.metric_specs if spec.name.endswith("_rate")}
    per_sample = {key for key in samples[0].values if key.startswith(("agent_", "empty_"))}
    assert per_sample == {"agent_fallback_rate", "empty_question_rate"} and per_sample <= rates


def test_an_explicit_checkpoint_wins_over_a_bound_role(flm_data, tiny_t5):
    benchmark = registry.get("hotpot_flm")
    options = benchmark.options({"answering_agent": str(tiny_t5), "agent_device": "cpu"})
    examples = load_examples("full")
    roles = _oracle_roles(examples)
    [sample] = asyncio.run(benchmark.score_batch([(examples[0], "Who?")], options,
                                                 Runtime(roles=roles)))
    assert sample.details["answering_agent"] == str(tiny_t5)
    assert sample.details["downstream_model"] == "role downstream: scripted/downstream"
    assert roles["answerer"].prompts == []


def test_raw_text_is_scored_only_through_the_agents(flm_data):
    benchmark = registry.get("hotpot_flm")
    options = benchmark.options({})
    example = load_examples("full")[0]
    assert benchmark.needs_corpus_step(options, False)
    with pytest.raises(ConfigurationError, match="score_batch"):
        benchmark.score(example, "Who?", options)
    assert benchmark.from_record(benchmark.to_record(example)) == example


def test_summary_of_nothing_is_null_and_recovery_undefined_is_null():
    benchmark = registry.get("hotpot_flm")
    options = benchmark.options({})
    assert set(reported_values(benchmark, [], options, False).values()) == {None}
    assert benchmark.null_reasons([], options, False, reported_values(benchmark, [], options, False))[
        "f1_recovery"] == "nothing scored"
    row = {"f1_incomplete": 1.0, "f1_response": 1.0, "f1_complete": 1.0, "em_incomplete": 0.0,
           "em_response": 0.0, "em_complete": 1.0, "em_raw_incomplete": 0.0,
           "em_raw_response": 0.0, "em_raw_complete": 0.0, "masked_fact_returned": 1.0,
           "agent_fallback_rate": 0.0, "empty_question_rate": 0.0}
    samples = [ScoredSample("a", row)]
    summary = reported_values(benchmark, samples, options, False)
    # F1: complete 1.0 = incomplete 1.0 -> undefined; EM: (0 - 0) / (1 - 0) = 0;
    # raw EM: complete 0.0 = incomplete 0.0 -> undefined
    assert summary["f1_recovery"] is None and summary["em_recovery"] == 0.0
    assert summary["em_raw_recovery"] is None
    reasons = explain_nulls(benchmark, samples, options, False, summary)
    assert set(reasons) == {"f1_recovery", "em_raw_recovery", "agent_fallback_rate",
                            "suite_score"} - {
        name for name, value in summary.items() if value is not None}
    assert reasons["suite_score"].startswith("the headline f1_recovery is null: ")
    assert "same on the complete and incomplete contexts" in reasons["f1_recovery"]
    assert "(1.0000 on 1 examples)" in reasons["f1_recovery"]
    assert "raw strings" in reasons["em_raw_recovery"]


def test_expected_size_is_the_sources():
    benchmark = registry.get("hotpot_flm")
    assert benchmark.expected_size(benchmark.options({"split": "full"})) == 7_405
    assert benchmark.expected_size(benchmark.options({"split": "test"})) == 400
