"""Loading: both releases' schemas, column-wise records, clear errors when data is missing."""

from __future__ import annotations

import json

import pytest

from condambig_tasks.condambigqa.loader import load_questions, normalise_record
from condambig_tasks.data import CorruptDataError, DataUnavailableError
from tests.conftest import FIXTURE_DATA

FIXTURE = FIXTURE_DATA / "condambigqa"


def test_fixture_loads_both_citation_schemas(use_fixture_data):
    questions = {q.id: q for q in load_questions()}
    assert set(questions) == {f"fx-{number:03d}" for number in range(1, 11)}
    marathon = questions["fx-001"]
    assert [p.fragments for p in marathon.properties] == [(1,), (2,), (3,)]
    assert marathon.properties[2].answer == "Carl Pace won the first marathon in 1980."
    island = questions["fx-003"]  # 2K schema: condition_citations + answer_citations
    assert [p.fragments for p in island.properties] == [(1,), (2,)]


def test_column_wise_record_is_normalised():
    row = {
        "id": 7, "question": "Q?",
        "ctxs": {"title": ["A", "B"], "text": ["a text", "b text"], "score": [1.0, 0.5]},
        "properties": {
            "condition": ["c1"], "groundtruth": ["g1"],
            "citations": [{"title": ["2. B"], "text": ["b text"]}],
        },
    }
    question = normalise_record(row)
    assert question.id == "7"
    assert [f.title for f in question.fragments] == ["A", "B"]
    assert question.properties[0].fragments == (2,)


def test_unnumbered_citation_is_found_by_text():
    row = {"id": "x", "question": "Q", "ctxs": [{"title": "A", "text": "alpha"},
                                                {"title": "B", "text": "beta"}],
           "properties": [{"condition": "c", "groundtruth": "g",
                           "citations": [{"title": "B", "text": "beta"}]}]}
    assert normalise_record(row).properties[0].fragments == (2,)


def test_offline_without_local_data_names_the_variable_and_file(monkeypatch, tmp_path):
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    with pytest.raises(DataUnavailableError) as raised:
        load_questions("200")
    message = str(raised.value)
    assert "CONDAMBIG_DATA_DIR" in message and "condambigqa/" in message
    assert "mcaqa.json" in message


def test_corrupt_local_file_is_a_clear_error(monkeypatch, tmp_path):
    (tmp_path / "condambigqa").mkdir()
    (tmp_path / "condambigqa" / "mcaqa.json").write_text('[{"id": 1, "question"')
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(tmp_path))
    with pytest.raises(CorruptDataError, match="mcaqa.json"):
        load_questions()
    (tmp_path / "condambigqa" / "mcaqa.json").write_text(json.dumps([{"question": "no id"}]))
    with pytest.raises(CorruptDataError, match="malformed"):
        load_questions()


def test_hub_route_discovers_splits_pins_the_revision_and_normalises(monkeypatch, tmp_path):
    """Without local files the hub is used: every split, the requested revision, and the
    rows as `datasets` hands them over (nested lists may come back column-wise)."""
    import datasets

    from condambig_tasks.condambigqa import loader

    rows = json.loads((FIXTURE / "condambigqa_fixture.json").read_text())
    for row in rows:  # one schema for Arrow: the 2K release's citation fields everywhere
        for prop in row["properties"]:
            citations = prop.pop("citations", [])
            prop.setdefault("condition_citations", citations)
            prop.setdefault("answer_citations", [])
            if isinstance(prop["groundtruth"], list):
                prop["groundtruth"] = " ".join(prop["groundtruth"])
    hub = datasets.DatasetDict({"train": datasets.Dataset.from_list(rows[:2]),
                                "extra": datasets.Dataset.from_list(rows[2:])})
    calls = []

    def fake_hub(repository, revision, *args, **kwargs):
        calls.append((repository, revision))
        return hub

    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(tmp_path))  # no condambigqa/ folder there
    monkeypatch.setattr(loader, "load_hub_dataset", fake_hub)
    questions = loader.load_questions("2k", hub_revision="0123abc")
    assert calls == [("Apocalypse-AGI-DAO/CondAmbigQA-2K", "0123abc")]
    assert [q.id for q in questions] == [f"fx-{number:03d}" for number in range(1, 11)]
    assert [p.fragments for p in questions[0].properties] == [(1,), (2,), (3,)]
    assert loader.load_questions("200") and calls[-1] == ("Apocalypse-AGI-DAO/CondAmbigQA", "main")
