"""Data files read a block at a time (``json_files.iter_array``, CondAmbigQA's
``loader.read_json_rows``): the rows and the failures are ``json.loads``'s, at every block size, with the place of a
failure in the whole text; and a file is never held whole."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condambig_tasks import data, json_files
from condambig_tasks.condambigqa import loader

TEXTS = [
    "[]", "  [ ] ", "[1]\n\n", '[ 1 , 2.5e3 ,"a,]b" ,{"x":[1,{"y":"z"}]}, null, true, '
    '12345678901234567890 ]', '[{"a": "\\u00e9\\n"}]', "[1e5,-0,0.0,-2.5E-3]", "[[1,2],[3]]",
    # failures
    "", "[1,2,]", "[1 2]", "[1,2", "[1,2]x", '[\n1,\n2,\n{"a":\n tru}]', "[-", "[1.5",
    "[123", "[1.5e", "[1.]", "[1,,2]", "[,]", '[\n\n  {"a": 1}\n  {"b": 2}]', "[truex]",
    "[" * 3000 + "]" * 3000, "[1, " + "9" * 5000 + "]",  # too deep, too long an integer
]


def _by_loads(text):
    try:
        return ("rows", json_files.loads(text))
    except json_files.JsonFileError as error:
        return ("error", error.reason, error.line, error.column)


def _by_blocks(text, size):
    try:
        return ("rows", list(json_files.iter_array(
            text[start:start + size] for start in range(0, len(text), size))))
    except json_files.JsonFileError as error:
        return ("error", error.reason, error.line, error.column)


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_rows_and_failures_are_json_loads_at_every_block_size(text, size):
    assert _by_blocks(text, size) == _by_loads(text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8), lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=4), children, max_size=3), max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(st.lists(json_values, max_size=6), st.integers(1, 9), st.booleans())
def test_any_array_reads_as_json_loads_reads_it(rows, size, pretty):
    text = json.dumps(rows, indent=1 if pretty else None)
    assert _by_blocks(text, size) == ("rows", json.loads(text))


def test_an_object_gives_the_rows_of_its_named_list_or_says_what_it_expected():
    assert list(json_files.iter_array(['{"data": [1, 2]}'], unwrap="data")) == [1, 2]
    with pytest.raises(json_files.JsonFileError, match="an object with a 'data' array"):
        list(json_files.iter_array(['{"rows": [1]}'], unwrap="data"))
    with pytest.raises(json_files.JsonFileError, match="expected a JSON array"):
        list(json_files.iter_array(['"text"']))


def test_a_data_file_is_read_a_block_at_a_time_and_recorded_with_its_digest(tmp_path,
                                                                             monkeypatch):
    path = tmp_path / "rows.json"
    rows = [{"id": n, "text": "é" * 50} for n in range(200)]
    path.write_text(json.dumps(rows), encoding="utf-8")
    monkeypatch.setattr(loader, "READ_BLOCK_BYTES", 97)  # splits characters and rows
    reads = []
    original = json_files._Blocks.more

    def more(self):
        reads.append(len(self.text))
        return original(self)

    monkeypatch.setattr(json_files._Blocks, "more", more)
    with data.recording_sources() as sources:
        assert list(loader.read_json_rows(path)) == rows
    assert sources == [{"kind": "file", "path": str(path), "sha256": data.sha256_of(path)}]
    # the text held never grows past a row and a block
    assert max(reads) < 2 * len(json.dumps(rows[0])) + 97


def test_a_corrupt_data_file_is_one_error_naming_the_file_and_the_place(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text('[{"id": 1},\n {"id": 2,}]', encoding="utf-8")
    with pytest.raises(data.CorruptDataError, match=r"rows.json: cannot be read as JSON "
                       r"\(Expecting property name enclosed in double quotes at line 2 "
                       r"column 11\)"):
        list(loader.read_json_rows(path))


def test_a_row_of_many_blocks_is_parsed_a_logarithmic_number_of_times(monkeypatch):
    """Each retry of an incomplete row reads until the text held doubles: a row spread over
    n blocks is parsed O(log n) times (once per block would be quadratic in its length)."""
    attempts = []

    class Counting:
        def raw_decode(self, text, position):
            attempts.append(position)
            return json.JSONDecoder().raw_decode(text, position)

    monkeypatch.setattr(json_files, "_DECODER", Counting())
    row = {"text": "x" * 20_000}
    text = json.dumps([row, 1])
    assert list(json_files.iter_array(text[start:start + 10]
                                      for start in range(0, len(text), 10))) == [row, 1]
    assert len(attempts) < 40  # 2,000 blocks: about log2(2,000) + a few, not 2,000
