"""The defaults that reproduce the authors' code (github.com/mtoles/qq; Toles et al.):
downstream answers cut to 9 tokens, float32 agents, candidates scored in their order with
ties to the masked fact, raw-string EM beside the normalised one, the Llama 3 prompt layout."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import pytest

from condambig_tasks import registry
from condambig_tasks.hotpot_flm.agents import (
    AgentQuery,
    LocalAgents,
    LocalDownstream,
    YesNoAnsweringAgent,
    arg_max,
)
from condambig_tasks.hotpot_flm.benchmark import FlmOptions
from condambig_tasks.hotpot_flm.hf_models import (
    DEFAULT_DTYPE,
    CheckpointSpec,
    load_checkpoint,
    resolve_dtype,
)
from condambig_tasks.hotpot_flm.inference import BatchLimits, GreedyGenerator
from condambig_tasks.hotpot_flm.loader import load_examples
from condambig_tasks.hotpot_flm.prompts import (
    LLAMA3_SYSTEM_MESSAGE,
    question_prompt,
    question_system_message,
)
from condambig_tasks.hotpot_flm.records import Fact, FlmExample
from condambig_tasks.hotpot_flm.scoring import score_row

# ------------------------------------------------------------- downstream answer length

PAD, EOS, START = 0, 1, 0  # T5's ids: <pad> is also the decoder start token


class WordTokenizer:
    """Token k (k >= 2) is the word ``w{k}``; 0 is padding, 1 end-of-sequence."""

    pad_token_id = PAD
    eos_token_id = EOS

    def __call__(self, texts, **_):
        return {"input_ids": [[5, 6, EOS] for _ in texts]}

    def decode(self, ids, skip_special_tokens=True):
        return " ".join(f"w{token}" for token in ids if token not in (PAD, EOS))


class ScriptedSeq2Seq:
    """Greedy generation that replies ``reply`` (token ids) to every prompt, then EOS —
    cut at ``max_new_tokens`` as ``generate`` cuts, padded to the batch's longest row."""

    def __init__(self, reply: Sequence[int]):
        self.reply = list(reply)
        self.generation_config = SimpleNamespace(eos_token_id=EOS)
        self.config = SimpleNamespace(eos_token_id=EOS)

    def generate(self, input_ids, attention_mask, max_new_tokens, **_):
        import torch

        row = (self.reply + [EOS])[:max_new_tokens]
        return torch.tensor([[START, *row]] * input_ids.shape[0])


def _scripted_generator(reply, max_new_tokens=10, cut=True) -> GreedyGenerator:
    checkpoint = SimpleNamespace(
        model=ScriptedSeq2Seq(reply), tokenizer=WordTokenizer(), is_seq2seq=True, device="cpu",
        spec=CheckpointSpec("scripted"), identity="scripted")
    return GreedyGenerator(checkpoint, max_new_tokens, BatchLimits(), cut_last_token=cut)


def test_an_answer_running_past_nine_tokens_keeps_nine():
    # 12-token reply, max_new_tokens=10: generate stops after w2..w11 (no EOS); the authors'
    # [:, 1:-1] drops the start token and w11 -> w2..w10, 9 tokens
    reply = list(range(2, 14))
    [answer] = _scripted_generator(reply).generate(["q"])
    assert answer == " ".join(f"w{k}" for k in range(2, 11))
    assert len(answer.split()) == 9
    # without the cut, all 10 generated tokens are kept
    [uncut] = _scripted_generator(reply, cut=False).generate(["q"])
    assert len(uncut.split()) == 10


@pytest.mark.parametrize(("length", "kept"), [
    (3, 3),   # w2 w3 w4 EOS: the cut removes EOS only
    (9, 9),   # 9 tokens + EOS = 10 new tokens: EOS is the one cut
    (10, 9),  # 10 tokens, no room for EOS: the 10th is cut
])
def test_short_answers_lose_only_the_end_marker(length, kept):
    [answer] = _scripted_generator(list(range(2, 2 + length))).generate(["q", "r"])[:1]
    assert len(answer.split()) == kept


def test_cut_answers_equal_nine_greedy_tokens_on_a_real_model(flm_data, tiny_t5):
    """Greedy decoding is left to right, so cutting the 10th token keeps what
    max_new_tokens=9 generates (the random tiny T5 never stops early)."""
    checkpoint = load_checkpoint(CheckpointSpec(str(tiny_t5), "cpu"), "d", "downstream_model")
    prompts = [e.question for e in load_examples("full")]
    cut = GreedyGenerator(checkpoint, 10, cut_last_token=True).generate(prompts)
    nine = GreedyGenerator(checkpoint, 9).generate(prompts)
    ten = GreedyGenerator(checkpoint, 10).generate(prompts)
    assert cut == nine
    assert cut != ten  # the random model does run past 9 tokens here


def test_the_cut_is_part_of_the_cache_key():
    cut = LocalDownstream(_scripted_generator([2], cut=True))
    uncut = LocalDownstream(_scripted_generator([2], cut=False))
    assert cut.decoding == "greedy:max_new_tokens=10:cut_last_token"
    assert uncut.decoding == "greedy:max_new_tokens=10"


def test_defaults_cut_ten_tokens_to_nine(flm_data):
    options = registry.get("hotpot_flm").options({})
    assert options.downstream_max_new_tokens == 10 and options.downstream_cut_last_token is True
    with pytest.raises(ValueError, match=">= 2"):
        registry.get("hotpot_flm").options({"downstream_max_new_tokens": 1})

# ------------------------------------------------------------- float32 agents


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1", "mps"])
def test_float32_is_the_default_on_every_device(flm_data, device):
    import torch

    options = registry.get("hotpot_flm").options({"agent_device": device})
    assert options.agent_dtype == DEFAULT_DTYPE == "float32"
    spec = LocalAgents(options)._spec(None)
    assert spec.dtype == "float32" and CheckpointSpec("x").dtype == "float32"
    # resolving the default never asks the device what it supports
    assert resolve_dtype(options.agent_dtype, torch.device(device)) is torch.float32
    assert resolve_dtype("", torch.device(device)) is torch.float32
    assert FlmOptions().agent_dtype == "float32"


def test_bfloat16_on_request(flm_data):
    import torch

    options = registry.get("hotpot_flm").options({"agent_dtype": "bfloat16"})
    assert resolve_dtype(options.agent_dtype, torch.device("cuda")) is torch.bfloat16

# ------------------------------------------------------------- tie rule


def _example(masked: int, supporting: tuple[int, ...], count: int = 6) -> FlmExample:
    candidates = tuple(Fact(f"T{index}", f"sentence {index}.") for index in range(count))
    return FlmExample(
        id="tie", split="full", question="Q?", answer="A", incomplete_context="",
        complete_context="", masked_fact=candidates[masked], masked_index=masked,
        candidates=candidates, supporting_count=len(supporting), supporting_indices=supporting)


def test_scoring_order_is_the_authors():
    # masked 3; supporting {1, 3, 5}: masked first, then non-supporting 0, 2, 4, then 1, 5
    assert _example(3, (1, 3, 5)).scoring_order() == (3, 0, 2, 4, 1, 5)


class ConstantScorer:
    """A scripted yes/no scorer: P(yes) from ``score(prompt)`` (saturates to 1.0)."""

    def __init__(self, score):
        self.score = score
        self.checkpoint = SimpleNamespace(spec=CheckpointSpec("scripted"))

    def yes_probabilities(self, prompts):
        return [self.score(prompt) for prompt in prompts]


def test_exact_ties_go_to_the_masked_fact(flm_data):
    examples = load_examples("full")
    assert all(e.masked_index != 0 for e in examples)  # context order would pick index 0
    agent = YesNoAnsweringAgent(ConstantScorer(lambda prompt: 1.0))
    queries = [AgentQuery.for_example(e, "Who?") for e in examples]
    assert [c.index for c in agent.choose(queries)] == [e.masked_index for e in examples]


def test_ties_without_the_masked_fact_go_to_a_non_supporting_sentence():
    # masked 3, supporting {1, 3, 5}; candidates 1 (supporting) and 4 (not) tie at 0.9,
    # the masked fact scores 0.2: the authors' order reaches 4 before 1
    example = _example(3, (1, 3, 5))
    scores = {f"context: T{i}: sentence {i}.": value
              for i, value in enumerate([0.1, 0.9, 0.1, 0.2, 0.9, 0.1])}
    agent = YesNoAnsweringAgent(ConstantScorer(
        lambda prompt: next(v for key, v in scores.items() if key in prompt)))
    [choice] = agent.choose([AgentQuery.for_example(example, "Who?")])
    assert choice.index == 4
    assert arg_max([0.1, 0.9, 0.1, 0.2, 0.9, 0.1]) == 1  # context order would pick 1


def test_supporting_indices_survive_the_record_round_trip(flm_data):
    benchmark = registry.get("hotpot_flm")
    for example in load_examples("full"):
        assert example.masked_index in example.supporting_indices
        assert len(example.supporting_indices) == example.supporting_count
        assert benchmark.from_record(benchmark.to_record(example)) == example

# ------------------------------------------------------------- EM


def test_raw_em_misses_a_case_difference_that_normalised_em_forgives():
    example = _example(0, (0,))  # gold answer "A"
    answers = {"incomplete": "a", "response": "A", "complete": "A."}
    row = score_row(example, answers, True)
    # normalised: "a" = "a" = "a" -> 1, 1, 1; raw: "a" != "A", "A" == "A", "A." != "A"
    assert (row["em_incomplete"], row["em_response"], row["em_complete"]) == (1.0, 1.0, 1.0)
    assert (row["em_raw_incomplete"], row["em_raw_response"], row["em_raw_complete"]) == (
        0.0, 1.0, 0.0)


def test_both_em_forms_are_reported_in_spec_order():
    names = [spec.name for spec in registry.get("hotpot_flm").metric_specs]
    assert names.index("em_recovery") + 1 == names.index("em_raw_recovery")
    assert names[names.index("em_complete") + 1:names.index("em_complete") + 4] == [
        "em_raw_incomplete", "em_raw_response", "em_raw_complete"]

# ------------------------------------------------------------- question prompt


def test_llama3_chat_prompt_is_the_authors_layout():
    example = _example(0, (0,))
    example = FlmExample(**{**example.__dict__, "incomplete_context": "T1: s1.",
                            "question": "Who?"})
    assert question_prompt(example, "llama3_chat") == (
        "Instruction:\nWhat question can you ask to help you answer the final question?"
        "\n\n### Input:\nContext:\nT1: s1.\nQuestion:\nWho?\nYou can ask:\n\n### Response:")
    assert question_prompt(example) == (
        "What question can you ask to help you answer the final question?\n\nT1: s1.\n\n"
        "Who?\n\nYou can ask:")
    assert question_system_message("llama3_chat") == LLAMA3_SYSTEM_MESSAGE
    assert LLAMA3_SYSTEM_MESSAGE.endswith("Only write the response, nothing else.")
    assert question_system_message("default") is None


def test_question_prompt_option(flm_data):
    benchmark = registry.get("hotpot_flm")
    example = load_examples("full")[0]
    options = benchmark.options({"question_prompt": "llama3_chat"})
    assert benchmark.prompt(example, options).startswith("Instruction:\n")
    assert benchmark.prompt(example, benchmark.options({})).startswith("What question")
    with pytest.raises(ValueError, match="llama3_chat"):
        benchmark.options({"question_prompt": "llama2"})
