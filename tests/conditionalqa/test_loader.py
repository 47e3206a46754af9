"""Loading the upstream files: local directory, join by url, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from condambig_tasks import data
from condambig_tasks.conditionalqa import loader
from condambig_tasks.conditionalqa.records import ConditionalAnswer


def test_fixture_questions_are_normalised(fixture_data):
    questions = loader.load_questions("dev")
    assert [q.id for q in questions] == [f"dev-fixture-{i}" for i in range(10)]
    conditional = questions[1]
    assert conditional.answers == (
        ConditionalAnswer(
            "yes",
            (
                "<li>you own your home or have written permission from your landlord</li>",
                "<li>your garden is at least 20 square metres</li>",
            ),
        ),
        ConditionalAnswer("no", ("<p>You cannot apply if you already received a grant in the last 5 years.</p>",)),
    )
    unanswerable = questions[5]
    assert unanswerable.not_answerable and unanswerable.answers == ()


def test_questions_join_their_document_by_url(fixture_data):
    joined = loader.load_split("dev")
    assert len(joined) == 10
    for entry in joined:
        assert entry.document.url == entry.question.url
        for answer in entry.question.answers:
            # every condition is one of the document's elements
            assert set(answer.conditions) <= set(entry.document.contents)
    assert joined[4].document.title == "Licence a Small Boat"


def test_missing_documents_file_names_it(tmp_path, monkeypatch, isolated_cache):
    folder = tmp_path / "conditionalqa"
    folder.mkdir()
    (folder / "dev.json").write_text("[]")
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    with pytest.raises(data.DataUnavailableError) as raised:
        loader.load_split("dev")
    message = str(raised.value)
    assert "documents.json" in message
    assert str(folder / "documents.json") in message
    assert "CONDAMBIG_DATA_DIR" in message


def test_no_local_data_and_offline_names_variable_and_file(monkeypatch, isolated_cache):
    monkeypatch.delenv("CONDAMBIG_DATA_DIR", raising=False)
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    with pytest.raises(data.DataUnavailableError, match=r"CONDAMBIG_DATA_DIR.*conditionalqa/.*dev\.json"):
        loader.load_questions("dev")


def test_question_whose_document_is_missing_is_reported(fixture_data):
    questions = loader.load_questions("dev")
    documents = loader.load_documents()
    del documents["https://www.gov.uk/example-boat-licence"]
    with pytest.raises(data.CorruptDataError, match="dev-fixture-4.*example-boat-licence"):
        loader.join_documents(questions, documents)


def test_unknown_split_is_rejected():
    with pytest.raises(ValueError, match="test_no_answer"):
        loader.question_file("validation")


def test_test_split_records_without_answers_load(tmp_path: Path):
    path = tmp_path / "test_no_answer.json"
    path.write_text(json.dumps([{"id": "test-0", "url": "u", "scenario": "s", "question": "q?"}]))
    [question] = loader.load_questions("test_no_answer", path=path)
    assert question.answers == () and question.evidences == ()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{}", "expected a JSON list of questions"),
        ('[{"id": "x", "url": "u", "scenario": "s"}]', "missing field"),
        ('[{"id": "x", "url": "u", "scenario": "s", "question": "q", "answers": [["yes"]]}]', r"\[answer, \[conditions\]\]"),
        ('[{"id": "x", "url": "u", "scenario": "s", "question": "q", "answers": [["yes", [1]]]}]', "list of strings"),
        ("[not json", "cannot be read as JSON"),
    ],
)
def test_corrupt_question_files_raise_with_the_file_name(tmp_path: Path, content, message):
    path = tmp_path / "dev.json"
    path.write_text(content)
    with pytest.raises(data.CorruptDataError, match=message) as raised:
        loader.load_questions("dev", path=path)
    assert "dev.json" in str(raised.value)


def test_corrupt_documents_file(tmp_path: Path):
    path = tmp_path / "documents.json"
    path.write_text('[{"url": "u", "title": "t"}]')
    with pytest.raises(data.CorruptDataError, match="'url' and 'contents'"):
        loader.load_documents(path)


def test_dev_digest_is_pinned():
    assert loader.UPSTREAM_FILES["dev"].sha256 is not None
    assert len(loader.UPSTREAM_FILES["dev"].sha256) == 64
