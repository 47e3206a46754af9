"""The provenance digest (``records_sha256``): one canonical JSON line per item's record,
built once per run (the front ends hash the records their samples carry), and the records
of a plain dataclass item equal to ``json_safe(dataclasses.asdict(item))`` (the form the
digest has always hashed, so digests of earlier runs stay comparable)."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from condambig_tasks import registry
from condambig_tasks.benchmark import Benchmark, json_safe
from condambig_tasks.data import load_items
from condambig_tasks.provenance import RecordsDigest, records_sha256
from tests.test_contract import lm_eval_hooks

BENCHMARKS = sorted(registry.BENCHMARKS)


def _reference_record(benchmark: Benchmark, item) -> dict:
    if type(benchmark).to_record is Benchmark.to_record:
        return json_safe(dataclasses.asdict(item))
    return benchmark.to_record(item)


@pytest.mark.parametrize("name", BENCHMARKS)
def test_the_digest_hashes_the_canonical_record_lines(use_fixture_data, name):
    benchmark = registry.get(name)
    items = load_items(benchmark, benchmark.options({}))
    digest = hashlib.sha256()
    for item in items:
        record = _reference_record(benchmark, item)
        assert benchmark.to_record(item) == record
        digest.update(json.dumps(record, sort_keys=True, ensure_ascii=False,
                                 separators=(",", ":")).encode("utf-8") + b"\n")
    assert records_sha256(benchmark, items) == digest.hexdigest()
    records = [benchmark.to_record(item) for item in items]
    assert records_sha256(benchmark, items, records) == digest.hexdigest()
    with pytest.raises(ValueError):
        records_sha256(benchmark, items, records[:-1])


def test_json_safe_walks_dataclasses_like_asdict():
    @dataclasses.dataclass
    class Inner:
        score: float
        tags: tuple

    @dataclasses.dataclass
    class Outer:
        name: str
        inner: list
        by_key: dict
        flag: bool = True

    value = Outer("x", [Inner(float("nan"), ("a", 1)), Inner(0.5, ())],
                  {1: Inner(float("inf"), (Inner(2.0, ()),))})
    assert json_safe(value) == json_safe(dataclasses.asdict(value)) == {
        "name": "x", "flag": True,
        "inner": [{"score": None, "tags": ["a", 1]}, {"score": 0.5, "tags": []}],
        "by_key": {"1": {"score": None, "tags": [{"score": 2.0, "tags": []}]}}}


@pytest.mark.parametrize("name", [name for name in BENCHMARKS if name != "hotpot_flm"])
def test_lm_eval_builds_each_record_once(use_fixture_data, monkeypatch, name):
    """lm-eval's docs carry the records that were hashed: ``to_record`` once per item.
    (HotpotQA-FLM's load prepares its agent models; its docs go through the same glue.)"""
    utils = lm_eval_hooks(name)
    benchmark = utils.benchmark
    calls = []
    original = type(benchmark).to_record
    monkeypatch.setattr(type(benchmark), "to_record",
                        lambda self, item: calls.append(1) or original(self, item))
    options = {"task_options": {"subtask": "detection"}} if name == "abg_coqa" else {}
    docs = utils.load_docs(version=1.2, **options)["test"]
    assert len(calls) == len(docs)


@pytest.mark.parametrize("name", [name for name in BENCHMARKS
                                  if registry.get(name).prediction_files.lean_load])
def test_a_lean_load_sees_every_whole_item_in_order(use_fixture_data, name):
    """A judge-free condambig-score run's lean load: the same items by id, in order, scored
    alike, and every whole item given to the digest (the records_sha256 of ``load``)."""
    benchmark = registry.get(name)
    options = benchmark.options({})
    whole = load_items(benchmark, options)
    digest = RecordsDigest(benchmark)
    lean = benchmark.prediction_files.lean_load(options, digest.add)
    assert [benchmark.item_id(item) for item in lean] == [
        benchmark.item_id(item) for item in whole]
    assert digest.count == len(whole)
    assert digest.hexdigest() == records_sha256(benchmark, whole)
    for full, kept in zip(whole, lean, strict=True):
        target = benchmark.target(full, options)
        output = json.dumps(target)
        assert benchmark.score(kept, output, options) == benchmark.score(full, output, options)
