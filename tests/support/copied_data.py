"""The fixture data with CondAmbigQA's questions repeated, for tests that need many
judgements in one run (each copy a distinct id and question, so none is a cache hit)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import FIXTURE_DATA


def copied_condambigqa_data(tmp_path: Path, copies: int) -> Path:
    """A data folder under ``tmp_path``: the fixture's, CondAmbigQA's questions ``copies`` times."""
    data = tmp_path / "data"
    shutil.copytree(FIXTURE_DATA, data)
    path = data / "condambigqa" / "condambigqa_fixture.json"
    items = json.loads(path.read_text())
    path.write_text(json.dumps([{**item, "id": f"{item['id']}-{copy}",
                                 "question": f"{item['question']} (copy {copy})"}
                                for copy in range(copies) for item in items]))
    return data
