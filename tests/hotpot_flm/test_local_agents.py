"""The transformers-backed agents on tiny random models built locally (seq2seq and causal)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from condambig_tasks.hotpot_flm.agents import (
    AgentQuery,
    LocalAgents,
    YesNoAnsweringAgent,
    arg_max,
)
from condambig_tasks.hotpot_flm.batching import length_sorted_batches
from condambig_tasks.hotpot_flm.benchmark import FlmOptions
from condambig_tasks.hotpot_flm.cache import NoCache
from condambig_tasks.hotpot_flm.hf_models import (
    AgentLoadError,
    CheckpointPool,
    CheckpointSpec,
    load_checkpoint,
    resolve_dtype,
)
from condambig_tasks.hotpot_flm.inference import (
    BatchLimits,
    GreedyGenerator,
    YesNoScorer,
)
from condambig_tasks.hotpot_flm.loader import load_examples
from condambig_tasks.hotpot_flm.prompts import downstream_prompt, yes_no_prompt
from tests.hotpot_flm.conftest import repeater_questions, run_pipeline_now


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """Torch on one intra-op thread for this module (restored after), as the subprocess tests
    get with OMP_NUM_THREADS=1: four xdist workers share two cores, where torch's own thread
    pool mostly spins. Batched-versus-unbatched equality does not depend on the thread count."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def t5_checkpoint(tiny_t5):
    return load_checkpoint(CheckpointSpec(str(tiny_t5), "cpu", "float32"), "agent", "answering_agent")


@pytest.fixture(scope="module")
def llama_checkpoint(tiny_causal_lm):
    return load_checkpoint(CheckpointSpec(str(tiny_causal_lm), "cpu", "float32"), "agent",
                           "answering_agent")


def unbatched_yes_probabilities(scorer: YesNoScorer, prompts: Sequence[str]) -> list[float]:
    """The authors' loop: ``generate(max_new_tokens=1)`` per candidate, batch size 1.

    The reference the batched scorer is checked against.
    """
    import torch

    checkpoint = scorer.checkpoint
    results = []
    with torch.inference_mode():
        for prompt in prompts:
            encoded = checkpoint.tokenizer(
                scorer.model_input(prompt), return_tensors="pt", truncation=True,
                max_length=scorer.limits.max_input_tokens,
            ).to(checkpoint.device)
            logits = checkpoint.model.generate(
                **encoded, max_new_tokens=1, do_sample=False, num_beams=1,
                output_scores=True, return_dict_in_generate=True,
                pad_token_id=checkpoint.tokenizer.pad_token_id,
            ).scores[0]
            pair = logits[:, [scorer.yes_id, scorer.no_id]].float().softmax(dim=-1)
            results.append(float(pair[0, 0]))
    return results


def _prompts(examples):
    return [yes_no_prompt(e.question, c) for e in examples for c in e.candidates]


def test_length_sorted_batches_respect_both_limits():
    lengths = [5, 50, 7, 48, 6, 200, 49]
    batches = length_sorted_batches(lengths, batch_size=3, max_batch_tokens=120)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    assert batches[0] == [5]  # the longest first, alone (over budget by itself)
    for batch in batches:
        assert len(batch) <= 3
        assert len(batch) == 1 or max(lengths[i] for i in batch) * len(batch) <= 120
        assert [lengths[i] for i in batch] == sorted((lengths[i] for i in batch), reverse=True)


@pytest.mark.parametrize("checkpoint_name", ["t5_checkpoint", "llama_checkpoint"])
def test_batched_scores_equal_one_by_one(flm_data, request, checkpoint_name):
    checkpoint = request.getfixturevalue(checkpoint_name)
    examples = load_examples("full")
    prompts = _prompts(examples)
    reference = unbatched_yes_probabilities(YesNoScorer(checkpoint), prompts)
    assert max(reference) - min(reference) > 1e-4  # the model does distinguish inputs
    for batch_size in (1, 4, 64):
        scorer = YesNoScorer(checkpoint, BatchLimits(batch_size=batch_size))
        batched = scorer.yes_probabilities(prompts)
        assert batched == pytest.approx(reference, abs=1e-5)
        assert scorer.forward_passes == -(-len(set(prompts)) // batch_size)
    agent = YesNoAnsweringAgent(YesNoScorer(checkpoint, BatchLimits(batch_size=8)))
    queries = [AgentQuery(e.id, e.question, e.candidates) for e in examples]
    start = 0
    for query, choice in zip(queries, agent.choose(queries), strict=True):
        own = reference[start:start + len(query.candidates)]
        start += len(query.candidates)
        assert choice.index == arg_max(own)


@pytest.mark.parametrize("checkpoint_name", ["t5_checkpoint", "llama_checkpoint"])
def test_batched_generation_equals_one_by_one(flm_data, request, checkpoint_name):
    checkpoint = request.getfixturevalue(checkpoint_name)
    examples = load_examples("full")
    prompts = [downstream_prompt(e.question, c) for e in examples
               for c in (e.incomplete_context, e.complete_context)]
    batched = GreedyGenerator(checkpoint, 6, BatchLimits(batch_size=8)).generate(prompts)
    single = [GreedyGenerator(checkpoint, 6, BatchLimits(batch_size=1)).generate([p])[0]
              for p in prompts]
    assert batched == single
    assert all(isinstance(answer, str) and "\n" not in answer for answer in batched)


def test_same_checkpoint_is_loaded_once(tiny_t5):
    pool = CheckpointPool()
    spec = CheckpointSpec(str(tiny_t5), "cpu", "float32")
    assert pool.get(spec, "a", "answering_agent") is pool.get(spec, "d", "downstream_model")


def test_unloadable_default_names_the_option(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    with pytest.raises(AgentLoadError) as caught:
        load_checkpoint(CheckpointSpec("google/flan-t5-base"), "answering agent", "answering_agent")
    message = str(caught.value)
    assert "google/flan-t5-base" in message
    assert "CONDAMBIG_FLM_ANSWERING_AGENT" in message
    assert '--metadata \'{"answering_agent"' in message and "-T answering_agent=" in message
    assert "--answering-agent" in message


def test_dtype_choice():
    import torch

    assert resolve_dtype("auto", torch.device("cpu")) is torch.float32
    assert resolve_dtype("bfloat16", torch.device("cpu")) is torch.bfloat16
    with pytest.raises(ValueError, match="not one of"):
        resolve_dtype("int4", torch.device("cpu"))


def test_causal_model_can_play_both_agents(flm_data, tiny_causal_lm):
    examples = load_examples("full")
    options = FlmOptions(answering_agent=str(tiny_causal_lm), downstream_model=str(tiny_causal_lm),
                         agent_device="cpu", downstream_max_new_tokens=4)
    agents = LocalAgents(options)
    run = run_pipeline_now(examples, repeater_questions(examples), agents.answering_agent(),
                           agents.downstream(), NoCache())
    assert len(run.outcomes) == len(examples)
    assert set(run.metrics()) >= {"f1_recovery", "mfrr", "improved_rate"}
