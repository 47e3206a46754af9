"""A missing, empty or corrupt data file is one clear error naming the file, never a crash
deep in a loader and never a run over zero items."""

from __future__ import annotations

import shutil

import pytest

from condambig_tasks import registry
from condambig_tasks.errors import CondambigError
from tests.conftest import FIXTURE_DATA

# (benchmark, options, the fixture files those options read)
DATA = [
    ("condambigqa", {}, ["condambigqa/condambigqa_fixture.json"]),
    ("hotpot_flm", {"split": "full"}, ["hotpotqa/hotpot_dev_distractor_v1.json"]),
    ("hotpot_flm", {"split": "test"}, ["hotpot_flm/gt_dataset_v3_400_of_600.tsv"]),
    ("conditionalqa", {}, ["conditionalqa/dev.json", "conditionalqa/documents.json"]),
    ("ambignq", {}, ["ambignq/dev_light.json"]),
    ("abg_coqa", {}, ["abg_coqa/coqa_abg_test.json"]),
    ("abg_coqa", {"split": "val"}, ["abg_coqa/coqa_abg_val.json"]),
]
CORRUPTIONS = {
    "empty": "",
    "not json": "{\"questions\": [",
    "a list of numbers": "[1, 2, 3]",
    "an empty list": "[]",
    "an object of the wrong shape": "{\"version\": 1}",
}


def _cases():
    for name, options, files in DATA:
        for relative in files:
            folder, file_name = relative.split("/")
            for label in CORRUPTIONS:
                yield pytest.param(name, folder, file_name, options, label,
                                   id=f"{name}-{file_name}-{label.replace(' ', '_')}")


@pytest.mark.parametrize(("benchmark_name", "folder", "file_name", "options", "corruption"),
                         list(_cases()))
def test_corrupt_file_is_one_clear_error(tmp_path, monkeypatch, benchmark_name, folder,
                                         file_name, options, corruption):
    data = tmp_path / "data"
    shutil.copytree(FIXTURE_DATA, data)
    (data / folder / file_name).write_text(CORRUPTIONS[corruption], encoding="utf-8")
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(data))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    benchmark = registry.get(benchmark_name)
    from condambig_tasks.data import load_items

    with pytest.raises(CondambigError) as raised:
        load_items(benchmark, benchmark.options(options))
    message = str(raised.value)
    assert file_name in message or folder in message, message
