"""The authors' exact strings (github.com/mtoles/qq): normalised facts (``masking.py``) and
the downstream prompt (``prepend_question`` + ``T5_PM.prepare_data``), checked at the level
of token ids under a byte-level tokenizer, where spacing differences are visible."""

from __future__ import annotations

import pytest

from condambig_tasks.hotpot_flm.masking import build_full_example, normalise_fact
from condambig_tasks.hotpot_flm.prompts import context_prompts, downstream_prompt
from condambig_tasks.hotpot_flm.records import HotpotExample

# A HotpotQA-like example: a hair space inside a sentence, a double space, a tab
EXAMPLE = HotpotExample(
    id="ex1", question="Which  band  formed first?", answer="Blur", type="comparison",
    level="hard",
    paragraphs=(
        ("Blur", (" Blur formed in\u200a1988  in London.", " They\tplayed Britpop.")),
        ("Oasis", (" Oasis formed in 1991.", " Distractor  sentence here.")),
    ),
    supporting_facts=(("Blur", 0), ("Oasis", 0)),
)


@pytest.mark.parametrize("raw, expected", [
    (" Blur formed in\u200a1988  in London.", "Blur formed in1988 in London."),
    ("a\u200a b", "a b"),
    ("\tTabs\tand\nnewlines  ", "Tabs and newlines"),
    ("plain", "plain"),
    ("\u200a", ""),
])
def test_normalise_fact_removes_hair_spaces_and_collapses_whitespace(raw, expected):
    assert normalise_fact(raw) == expected


def test_every_fact_of_an_example_is_normalised():
    example = build_full_example(EXAMPLE)
    sentences = [fact.sentence for fact in example.candidates]
    assert sentences == ["Blur formed in1988 in London.", "They played Britpop.",
                         "Oasis formed in 1991.", "Distractor sentence here."]
    assert example.complete_context == "Blur: Blur formed in1988 in London. Oasis: Oasis formed in 1991."


def test_downstream_prompt_is_the_authors_string():
    authors = "Which band formed first? Blur: a b\n\nAnswer in as few words as possible: "
    assert downstream_prompt("Which  band formed first? ", "Blur: a  b") == authors
    assert downstream_prompt("q?", "") == "q?\n\nAnswer in as few words as possible: "


def _byte_level_tokenizer():
    """A byte-level BPE tokenizer trained here on a few lines (nothing downloaded)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    corpus = ["Which band formed first? Blur formed in 1988 in London.",
              "Oasis formed in 1991.\n\nAnswer in as few words as possible: Blur"]
    tokenizer.train_from_iterator(corpus * 4, trainer=trainer)
    return tokenizer


def test_token_ids_equal_those_of_the_authors_strings():
    tokenizer = _byte_level_tokenizer()
    example = build_full_example(EXAMPLE)
    prompts = context_prompts(example, example.masked_fact)
    # the authors' strings, written out: question and context with single spaces, hair
    # space removed, then the suffix with a double newline and a trailing space
    suffix = "\n\nAnswer in as few words as possible: "
    authors = {
        "complete": "Which band formed first? Blur: Blur formed in1988 in London. "
                    "Oasis: Oasis formed in 1991." + suffix,
    }
    authors["incomplete"] = ("Which band formed first? " + (
        "Oasis: Oasis formed in 1991." if example.masked_fact.title == "Blur"
        else "Blur: Blur formed in1988 in London.") + suffix)
    for name, text in authors.items():
        assert tokenizer.encode(prompts[name]).ids == tokenizer.encode(text).ids, name
    # the spacing is visible to this tokenizer: the old single-spaced form differs
    old = "Which band formed first? Blur: Blur formed in1988 in London. Oasis: Oasis formed " \
          "in 1991. Answer in as few words as possible:"
    assert tokenizer.encode(old).ids != tokenizer.encode(authors["complete"]).ids
