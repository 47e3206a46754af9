"""AmbigNQ loading: the original row-wise file, the hub's column-wise rows, errors."""

from __future__ import annotations

import json

import pytest

from condambig_tasks.ambignq.loader import (
    annotations_to_json,
    load_questions,
    normalise_record,
    parse_records,
)
from condambig_tasks.ambignq.records import GoldQAPair, MultipleQAs, SingleAnswer
from condambig_tasks.data import CorruptDataError, DataUnavailableError

ORIGINAL = {
    "id": "q1", "question": "who sang autumn lanterns?",
    "annotations": [
        {"type": "singleAnswer", "answer": ["The Glass Owls"]},
        {"type": "multipleQAs", "qaPairs": [
            {"question": "Who sang it first?", "answer": ["The Glass Owls"]},
            {"question": "Who covered it in 1999?", "answer": ["Nora Vale", "Vale"]},
        ]},
    ],
}
# the same record as `datasets` returns it for sewon/ambig_qa (config light): nested lists
# stored column-wise, empty fields for the other annotation type
HUB_ROW = {
    "id": "q1", "question": "who sang autumn lanterns?",
    "annotations": {
        "type": ["singleAnswer", "multipleQAs"],
        "answer": [["The Glass Owls"], []],
        "qaPairs": [
            {"question": [], "answer": []},
            {"question": ["Who sang it first?", "Who covered it in 1999?"],
             "answer": [["The Glass Owls"], ["Nora Vale", "Vale"]]},
        ],
    },
}
EXPECTED = (
    SingleAnswer(("The Glass Owls",)),
    MultipleQAs((GoldQAPair("Who sang it first?", ("The Glass Owls",)),
                 GoldQAPair("Who covered it in 1999?", ("Nora Vale", "Vale")))),
)


def test_original_and_hub_layouts_give_the_same_record():
    original, hub = normalise_record(ORIGINAL), normalise_record(HUB_ROW)
    assert original == hub
    assert original.annotations == EXPECTED
    assert not original.is_multi and original.has_multiple_qa_pairs


def test_annotations_round_trip_through_the_original_format():
    record = normalise_record(ORIGINAL)
    again = normalise_record({"id": "q1", "question": record.question,
                              "annotations": json.loads(json.dumps(annotations_to_json(record.annotations)))})
    assert again == record


def test_fixture_file_loads_from_the_data_directory(use_fixture_data):
    records = load_questions()
    assert [r.id for r in records][:2] == ["fx-001", "fx-002"]
    assert sum(r.is_multi for r in records) == 5


def test_unknown_annotation_type_names_the_question():
    with pytest.raises(CorruptDataError, match="q9.*unknown type 'weird'"):
        normalise_record({"id": "q9", "question": "?", "annotations": [{"type": "weird"}]})


def test_not_a_list_is_a_clear_error():
    with pytest.raises(CorruptDataError, match="expected a JSON list"):
        parse_records({"data": []}, "dev_light.json")


def test_offline_without_local_file_says_what_to_place(monkeypatch, tmp_path):
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    with pytest.raises(DataUnavailableError, match=r"CONDAMBIG_DATA_DIR.*ambignq/.*dev_light\.json"):
        load_questions()


def test_hub_dataset_with_the_hub_schema_is_normalised(monkeypatch, tmp_path):
    """Without a local file the loader reads sewon/ambig_qa (light, validation): a `datasets`
    Dataset with the hub's nested Sequence features (column-wise lists)."""
    import datasets
    from datasets import Features, Sequence, Value

    from condambig_tasks.ambignq import loader

    features = Features({
        "id": Value("string"), "question": Value("string"),
        "annotations": Sequence({
            "type": Value("string"), "answer": Sequence(Value("string")),
            "qaPairs": Sequence({"question": Value("string"), "answer": Sequence(Value("string"))}),
        }),
    })
    calls = []

    def fake_hub(repository, revision, benchmark, folder, file_names, name=None, split=None):
        calls.append((repository, revision, name, split))
        return datasets.Dataset.from_list([HUB_ROW], features=features)

    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(loader, "load_hub_dataset", fake_hub)
    records = loader.load_questions(loader.AmbigNQDataConfig(hub_revision="abc123"))
    assert records == [normalise_record(ORIGINAL)]
    assert calls == [("sewon/ambig_qa", "abc123", "light", "validation")]
