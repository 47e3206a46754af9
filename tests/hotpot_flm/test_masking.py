"""Fact-level masking and HotpotQA normalisation on the hand-written fixtures."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from condambig_tasks.data import CorruptDataError
from condambig_tasks.hotpot_flm.hotpotqa_source import load_hotpot_examples, normalise_example
from condambig_tasks.hotpot_flm.loader import load_examples
from condambig_tasks.hotpot_flm.masking import (
    build_full_example,
    masked_position,
    supporting_keys,
)
from condambig_tasks.hotpot_flm.records import Fact, HotpotExample, render_context
from tests.hotpot_flm.conftest import fixture_examples


def _synthetic(example_id: str, supporting: int = 3) -> HotpotExample:
    paragraphs = tuple((f"T{p}", tuple(f" sentence {p}.{s}" for s in range(3))) for p in range(4))
    keys = tuple((f"T{p}", 0) for p in range(supporting))
    return HotpotExample(example_id, "q?", "a", "bridge", "easy", paragraphs, keys)


def test_mask_is_deterministic_and_order_independent(flm_data):
    first = {e.id: e.masked_fact for e in load_examples("full")}
    again = {e.id: e.masked_fact for e in load_examples("full")}
    assert first == again
    raw = [normalise_example(row, "fixture") for row in fixture_examples()]
    shuffled = list(reversed(raw))
    by_id = {e.id: build_full_example(e) for e in shuffled}
    assert {i: e.masked_fact for i, e in by_id.items() if e} == first


def test_mask_does_not_depend_on_the_order_of_supporting_facts():
    example = _synthetic("order-check")
    reordered = HotpotExample(**{**example.__dict__,
                                 "supporting_facts": tuple(reversed(example.supporting_facts))})
    assert build_full_example(example).masked_fact == build_full_example(reordered).masked_fact


def test_mask_is_always_a_supporting_fact_and_roughly_uniform():
    counts: Counter[int] = Counter()
    for number in range(3000):
        example = _synthetic(f"id{number}")
        built = build_full_example(example)
        support = supporting_keys(example)
        masked_key = (built.masked_fact.title, 0)
        assert masked_key in support
        counts[support.index(masked_key)] += 1
    assert set(counts) == {0, 1, 2}
    assert all(abs(count / 3000 - 1 / 3) < 0.04 for count in counts.values())


def test_seed_changes_the_mask_for_some_examples():
    ids = [f"id{number}" for number in range(200)]
    changed = sum(masked_position(i, 3, seed=0) != masked_position(i, 3, seed=1) for i in ids)
    assert 80 < changed < 180  # about 2/3 of them


def test_contexts_and_candidates_as_specified(flm_data):
    examples = {e.id: e for e in load_examples("full")}
    bridge = examples["fx00000000000000000000a2"]  # 3 supporting facts
    masked = bridge.masked_fact
    support = [
        Fact("Greyharbor Press", "Greyharbor Press is a small publisher founded by Tomas Reyl."),
        # whitespace runs collapsed, as the authors' masking.py does
        Fact("Tomas Reyl", "Tomas Reyl ( ; born 1931) was an English printer."),
        Fact("Tomas Reyl", "He founded his press after leaving the navy."),
    ]
    assert masked in support
    assert bridge.complete_context == (
        "Greyharbor Press: Greyharbor Press is a small publisher founded by Tomas Reyl. "
        "Tomas Reyl: Tomas Reyl ( ; born 1931) was an English printer. "
        "He founded his press after leaving the navy."
    )
    assert bridge.incomplete_context == render_context([f for f in support if f != masked])
    # every sentence of every paragraph, in context order, stripped of leading spaces
    assert len(bridge.candidates) == 3 + 2 + 3 + 2
    assert bridge.candidates[0] == support[0]
    assert bridge.candidates[bridge.masked_index] == masked
    assert all(not fact.sentence.startswith(" ") for fact in bridge.candidates)
    assert bridge.supporting_count == 3
    assert bridge.response_context(masked) == f"{bridge.incomplete_context} {masked.render()}"


def test_two_supporting_facts_leave_one_in_the_incomplete_context(flm_data):
    comparison = {e.id: e for e in load_examples("full")}["fx00000000000000000000a1"]
    other = ({"Lina Marsh", "Oskar Velde"} - {comparison.masked_fact.title}).pop()
    assert comparison.incomplete_context.startswith(f"{other}: ")
    assert comparison.masked_fact.render() not in comparison.incomplete_context
    assert comparison.masked_fact.sentence in comparison.complete_context


def test_missing_duplicate_and_empty_sentences(flm_data):
    examples = {e.id: e for e in load_examples("full")}
    # a3: a duplicated supporting fact, one pointing past the paragraph, an empty sentence
    captain = examples["fx00000000000000000000a3"]
    assert captain.supporting_count == 2
    assert all(fact.sentence for fact in captain.candidates)
    assert len(captain.candidates) == 2 + 2 + 2
    # a5: no supporting fact is a sentence of the context -> not an FLM example
    assert "fx00000000000000000000a5" not in examples
    assert len(examples) == 4 + 7  # and c1..c7, plain two-hop examples


def test_hub_column_layout_normalises_like_the_json(flm_data):
    for row in fixture_examples():
        columns = {
            "id": row["_id"], "question": row["question"], "answer": row["answer"],
            "type": row["type"], "level": row["level"],
            "supporting_facts": {"title": [t for t, _ in row["supporting_facts"]],
                                 "sent_id": [i for _, i in row["supporting_facts"]]},
            "context": {"title": [t for t, _ in row["context"]],
                        "sentences": [s for _, s in row["context"]]},
        }
        assert normalise_example(columns, "hub") == normalise_example(row, "json")


def test_malformed_record_names_the_example():
    with pytest.raises(CorruptDataError, match="broken-id"):
        normalise_example({"_id": "broken-id", "question": "q", "answer": "a",
                           "supporting_facts": [["T", "x"]], "context": []}, "file.json")


def test_local_file_is_preferred_and_read_in_order(flm_data):
    ids = [example.id for example in load_hotpot_examples()]
    assert ids == [row["_id"] for row in fixture_examples()]


def test_unreachable_hub_says_what_to_place(monkeypatch, tmp_path):
    from condambig_tasks.data import DataUnavailableError

    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    with pytest.raises(DataUnavailableError, match="hotpotqa/ containing: hotpot_dev_distractor_v1.json"):
        load_hotpot_examples()


def test_random_ids_never_pick_a_distractor():
    rng = random.Random(7)
    for _ in range(200):
        example = _synthetic(f"{rng.random()}", supporting=rng.randint(1, 4))
        built = build_full_example(example)
        assert (built.masked_fact.title, 0) in supporting_keys(example)
