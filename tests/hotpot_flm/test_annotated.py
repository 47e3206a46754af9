"""The human-annotated test set: TSV parsing (quotes are text) and joining with HotpotQA."""

from __future__ import annotations

import csv
import io
import logging

import pytest

from condambig_tasks.data import CorruptDataError, DataUnavailableError
from condambig_tasks.hotpot_flm.annotated import (
    COLUMNS,
    annotated_file_path,
    build_test_example,
    load_rows,
    parse_rows,
)
from condambig_tasks.hotpot_flm.hotpotqa_source import load_hotpot_examples
from condambig_tasks.hotpot_flm.loader import load_examples
from tests.hotpot_flm.conftest import TSV_FIXTURE

# rows c1..c7: plain two-hop questions with a human question, masking the second hop
NEW_ROWS = [f"c{number}" for number in range(1, 8)]


def test_fixture_parses_every_row_and_keeps_literal_quotes(flm_data):
    rows = load_rows()
    assert [row.id[-2:] for row in rows] == ["a4", "a1", "a3", "b9", "a2", *NEW_ROWS]
    assert sum(row.human_question is not None for row in rows) == 4 + len(NEW_ROWS)
    assert rows[0].masked_sentence == '"Blue Lanterns is a song by Nela Fjord.'
    assert rows[2].human_question is None


def test_default_csv_quoting_would_swallow_rows():
    # the trap this parser avoids: a field opening with an unbalanced quote eats the rest
    text = TSV_FIXTURE.read_text(encoding="utf-8")
    naive = list(csv.DictReader(io.StringIO(text, newline=""), delimiter="\t"))
    assert len(naive) < len(parse_rows(text))


def test_wrong_header_or_field_count_is_reported():
    with pytest.raises(CorruptDataError, match="expected the columns"):
        parse_rows("id\tquestion\r\nx\ty")
    header = "\t".join(COLUMNS)
    with pytest.raises(CorruptDataError, match="line 2: 3 tab-separated fields"):
        parse_rows(f"{header}\r\na\tb\tc")


def test_test_split_uses_the_rows_own_masked_fact_and_context(flm_data):
    examples = {e.id: e for e in load_examples("test")}
    # a3 has no human question; b9 has no HotpotQA example in the fixture
    assert set(examples) == {"fx00000000000000000000a1", "fx00000000000000000000a2",
                             "fx00000000000000000000a4",
                             *(f"fx00000000000000000000{row}" for row in NEW_ROWS)}
    rows = {row.id: row for row in load_rows()}
    for example_id, example in examples.items():
        row = rows[example_id]
        assert example.split == "test"
        assert example.incomplete_context == row.incomplete_context
        assert example.human_question == row.human_question
        assert example.masked_fact.title == row.masked_title
    # HotpotQA's sentence has "(  ;": normalised as the authors do, it is the row's "( ;"
    founder = examples["fx00000000000000000000a2"]
    assert founder.masked_fact.sentence == "Tomas Reyl ( ; born 1931) was an English printer."
    assert founder.candidates[founder.masked_index] == founder.masked_fact
    # the complete context is x_i plus f*, in context order
    assert founder.complete_context == (
        "Greyharbor Press: Greyharbor Press is a small publisher founded by Tomas Reyl. "
        "Tomas Reyl: Tomas Reyl ( ; born 1931) was an English printer. "
        "He founded his press after leaving the navy."
    )
    song = examples["fx00000000000000000000a4"]
    assert song.masked_fact.sentence.startswith('"Blue Lanterns is a song')


def test_rows_without_hotpotqa_example_are_skipped_with_a_warning(flm_data, caplog):
    with caplog.at_level(logging.WARNING):
        load_examples("test")
    assert f"1 of {4 + len(NEW_ROWS)} annotated rows skipped" in caplog.text


def test_masked_sentence_absent_from_the_example_is_not_built(flm_data):
    row = load_rows()[1]
    hotpot = {e.id: e for e in load_hotpot_examples()}
    changed = type(row)(**{**row.__dict__, "masked_sentence": "A sentence no paragraph has."})
    assert build_test_example(changed, hotpot[row.id]) is None


def test_without_local_file_the_pinned_download_is_tried(monkeypatch, tmp_path):
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    with pytest.raises(DataUnavailableError, match="gt_dataset_v3_400_of_600.tsv"):
        annotated_file_path()
