"""``condambig.task_items``: an Inspect sample carries its record's digest, and the scorer
finds the item by it: among the tasks built in the process, else among the items loaded
again with the task's options (``inspect score`` on a log in another process); a sample
whose record is in neither is an error, never a score against other data."""

from __future__ import annotations

import dataclasses

import pytest

from condambig import task_items
from condambig.task_items import RECORD_SHA256_KEY, TaskItems, record_sha256, remember
from condambig_tasks import registry
from condambig_tasks.benchmark import options_to_json
from condambig_tasks.data import load_items
from condambig_tasks.errors import ConfigurationError
from tests.conftest import FIXTURE_DATA


@pytest.fixture
def ambignq(monkeypatch):
    """The fixture's AmbigNQ items, their records and options, nothing built yet."""
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
    monkeypatch.setattr(task_items, "_BUILT", {})
    benchmark = registry.get("ambignq")
    options = benchmark.options({})
    items = load_items(benchmark, options)
    assert len(items) >= 2
    return benchmark, items, [benchmark.to_record(item) for item in items], \
        options_to_json(benchmark, options)


def test_a_built_task_s_samples_carry_only_their_record_s_digest(ambignq):
    benchmark, items, records, options = ambignq
    metadata = remember("ambignq", records)
    assert metadata == [{RECORD_SHA256_KEY: record_sha256(record)} for record in records]
    assert len({entry[RECORD_SHA256_KEY] for entry in metadata}) == len(items)
    found = TaskItems("ambignq", options)
    for item, entry in zip(items, metadata, strict=True):
        assert found.item(benchmark.item_id(item), entry) == item
    # kept as text: nothing of the items for the garbage collector to walk in a long run
    assert all(isinstance(text, str) for text in task_items._BUILT.values())


def test_another_process_loads_the_items_again_and_finds_them_by_digest(ambignq):
    benchmark, items, records, options = ambignq
    metadata = remember("ambignq", records)
    task_items._BUILT.clear()  # as in `inspect score`'s own process
    found = TaskItems("ambignq", options)
    again = [found.item(benchmark.item_id(item), entry)
             for item, entry in zip(items, metadata, strict=True)]
    assert [benchmark.to_record(item) for item in again] == records
    assert all(a is not b for a, b in zip(again, items, strict=True))


def test_a_sample_of_other_data_is_an_error_naming_the_data(ambignq):
    benchmark, items, records, options = ambignq
    remember("ambignq", records)
    edited = dict(records[0], question=records[0]["question"] + " (edited)")
    with pytest.raises(ConfigurationError, match=r"ambignq: the item of sample .* is not "
                       r"among this process's tasks nor among the \d+ items loaded with "
                       r"options .*the data differs from the data the run read"):
        TaskItems("ambignq", options).item(items[0].id,
                                           {RECORD_SHA256_KEY: record_sha256(edited)})


def test_without_options_only_the_built_tasks_are_looked_at(ambignq):
    benchmark, items, records, options = ambignq
    [entry] = remember("ambignq", records[:1])
    with pytest.raises(ConfigurationError, match="is not among this process's tasks: "):
        TaskItems("ambignq").item(items[1].id, {RECORD_SHA256_KEY: record_sha256(records[1])})
    assert TaskItems("ambignq").item(items[0].id, entry) == items[0]


def test_the_same_record_of_another_benchmark_is_not_its_item(ambignq):
    benchmark, items, records, options = ambignq
    [entry] = remember("ambignq", records[:1])
    with pytest.raises(ConfigurationError, match="abg_coqa: the item of sample"):
        TaskItems("abg_coqa").item(items[0].id, entry)


def test_a_sample_of_an_older_log_brings_its_record(ambignq):
    benchmark, items, records, options = ambignq
    item = TaskItems("ambignq").item(items[0].id, {"record": records[0]})
    assert dataclasses.asdict(item) == dataclasses.asdict(items[0])


@pytest.mark.parametrize("metadata", [None, {}, {RECORD_SHA256_KEY: 17}])
def test_a_sample_without_a_digest_is_not_a_condambig_sample(ambignq, metadata):
    benchmark, items, records, options = ambignq
    with pytest.raises(ConfigurationError, match="has no 'record_sha256' in its metadata"):
        TaskItems("ambignq", options).item(items[0].id, metadata)
