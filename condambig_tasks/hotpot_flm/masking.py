"""Fact-level masking (paper §4.1): build x_c, x_i, f* and the answering agent's candidates.

The masked fact is one supporting fact chosen uniformly at random, deterministically from
the seed and the example id alone — ``sha256("hotpot_flm:{seed}:{id}") mod n`` over the
example's supporting facts in context order — so it does not depend on dataset order,
on the order of HotpotQA's ``supporting_facts`` list, or on the Python version.
``DEFAULT_MASK_SEED`` (0) is the documented default.

Every fact is normalised as the authors' ``masking.py`` (github.com/mtoles/qq) normalises
contexts: hair spaces (U+200A) removed, runs of whitespace collapsed to one space.
"""

from __future__ import annotations

import hashlib

from condambig_tasks.hotpot_flm.records import (
    Fact,
    FlmExample,
    HotpotExample,
    facts_in_order,
    render_context,
)

DEFAULT_MASK_SEED = 0
HAIR_SPACE = "\u200a"


def normalise_fact(text: str) -> str:
    """The authors' fact text: U+200A removed, whitespace runs collapsed, ends stripped."""
    return " ".join(text.replace(HAIR_SPACE, "").split())


def masked_position(example_id: str, supporting_count: int, seed: int = DEFAULT_MASK_SEED) -> int:
    """Index (in context order) of the supporting fact to mask."""
    digest = hashlib.sha256(f"hotpot_flm:{seed}:{example_id}".encode()).digest()
    return int.from_bytes(digest, "big") % supporting_count


def sentence_keys(example: HotpotExample) -> list[tuple[str, int]]:
    """(title, index) of every non-empty sentence, in context order."""
    return [
        (title, index)
        for title, sentences in example.paragraphs
        for index, sentence in enumerate(sentences)
        if sentence.strip()
    ]


def supporting_keys(example: HotpotExample) -> list[tuple[str, int]]:
    """The supporting facts that exist in the context, deduplicated, in context order."""
    published = set(example.supporting_facts)
    return [key for key in sentence_keys(example) if key in published]


def candidate_facts(example: HotpotExample) -> tuple[list[Fact], list[tuple[str, int]]]:
    """Every sentence of the example (f*, other supporting facts, distractors) and its key,
    normalised (:func:`normalise_fact`); contexts and candidates are built from these."""
    keys = sentence_keys(example)
    facts = [Fact(normalise_fact(fact.title), normalise_fact(fact.sentence))
             for fact in facts_in_order(example, keys)]
    return facts, keys


def build_full_example(example: HotpotExample, seed: int = DEFAULT_MASK_SEED) -> FlmExample | None:
    """The FLM example of one HotpotQA example; None when no supporting fact is in its context."""
    support = supporting_keys(example)
    if not support:
        return None
    masked_key = support[masked_position(example.id, len(support), seed)]
    candidates, keys = candidate_facts(example)
    masked_index = keys.index(masked_key)
    support_set = set(support)
    complete = [fact for fact, key in zip(candidates, keys, strict=True) if key in support_set]
    incomplete = [
        fact for fact, key in zip(candidates, keys, strict=True)
        if key in support_set and key != masked_key
    ]
    return FlmExample(
        id=example.id, split="full", question=example.question, answer=example.answer,
        incomplete_context=render_context(incomplete), complete_context=render_context(complete),
        masked_fact=candidates[masked_index], masked_index=masked_index,
        candidates=tuple(candidates), supporting_count=len(support),
        supporting_indices=tuple(index for index, key in enumerate(keys) if key in support_set),
    )
