"""What a result was computed on: the provenance block every front end records.

A leaderboard number is only comparable with another when both come from the same task
version, the same data and the same judge / agent models. Each run therefore records
``{"benchmark", "task_version", "options", "data": {"sources", "records", "records_sha256"},
"judge", "models"}``: in lm-eval's results (the task config's ``metadata.provenance``), in
the Inspect log (the eval's task metadata, ``provenance``) and in ``condambig-score``'s
JSON. ``records_sha256`` hashes the loaded items as the project reads them (their JSON
records, in order), so it changes when any record changes, whatever the source.
``outputs_sha256`` (:func:`outputs_sha256`), recorded once the outputs are scored, hashes
the model outputs a result was computed from; ``scoring_sha256`` (:func:`scoring_sha256`)
binds that digest to the task version and options the outputs were scored with.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from condambig_metrics.text import replace_lone_surrogates
from condambig_tasks.benchmark import Benchmark, json_safe, options_to_json
from condambig_tasks.data import load_items, recording_sources


def record_line(record: Mapping[str, Any]) -> bytes:
    """The canonical form of one JSON record that :func:`records_sha256` hashes. A lone
    surrogate (model output can hold one; UTF-8 cannot) is hashed as U+FFFD, the character
    the parsers read in its place."""
    return replace_lone_surrogates(json.dumps(record, sort_keys=True, ensure_ascii=False,
                                              separators=(",", ":"))).encode("utf-8")


def records_sha256(benchmark: Benchmark, items: Sequence[Any],
                   records: Sequence[Mapping[str, Any]] | None = None) -> str:
    """sha256 over the items' JSON records, one canonical line each, in load order.

    ``records``: ``benchmark.to_record`` of each item, when the caller has built them
    already (the front ends keep them in their samples), so they are not built twice."""
    if records is None:  # one record at a time: a run's records are never all held
        records = (benchmark.to_record(item) for item in items)
    elif len(records) != len(items):
        raise ValueError(f"{len(records)} records for {len(items)} items")
    digest = RecordsDigest(benchmark)
    for record in records:
        digest.add_record(record)
    return digest.hexdigest()


class RecordsDigest:
    """:func:`records_sha256` taken one item at a time, as a load reads them (a lean load
    keeps less of each item than its record holds)."""

    def __init__(self, benchmark: Benchmark) -> None:
        self.benchmark = benchmark
        self.count = 0
        self._sha = hashlib.sha256()

    def add(self, item: Any) -> None:
        self.add_record(self.benchmark.to_record(item))

    def add_record(self, record: Mapping[str, Any]) -> None:
        self._sha.update(record_line(record))
        self._sha.update(b"\n")
        self.count += 1

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


OUTPUTS_SHA256_KEY = "outputs_sha256"  # where a result records :func:`outputs_sha256`


def outputs_sha256(outputs: Iterable[tuple[str, Any]]) -> str:
    """sha256 of the model outputs a result was computed from: one canonical JSON line
    ``{"id": ..., "output": ...}`` per scored output, the lines sorted (lm-eval, Inspect
    and condambig-score order samples differently), so two results with the same digest
    come from the same generations whichever front end scored them (lm-eval's issue #3749
    asks for this). Non-text outputs (an official prediction file's lists) are hashed as
    their JSON; lone surrogates as U+FFFD (:func:`record_line`)."""
    digest = hashlib.sha256()
    for line in sorted(record_line({"id": str(item_id), "output": json_safe(output)})
                       for item_id, output in outputs):
        digest.update(line)
        digest.update(b"\n")
    return digest.hexdigest()


SCORING_SHA256_KEY = "scoring_sha256"  # where a result records :func:`scoring_sha256`


def scoring_sha256(benchmark: str, task_version: Any, options: Mapping[str, Any],
                   outputs_digest: str) -> str:
    """sha256 of what a result's numbers depend on besides the data: the benchmark, its
    task version, the options as recorded (``options_to_json``) and the outputs
    (:func:`outputs_sha256`). Recorded beside ``outputs_sha256``, it lets ``--from-log``
    tell a log whose options or version were edited after the run from the log the run
    wrote, which the outputs digest alone cannot."""
    line = record_line({"benchmark": benchmark, "task_version": task_version,
                        "options": json_safe(dict(options)), OUTPUTS_SHA256_KEY: outputs_digest})
    return hashlib.sha256(line).hexdigest()


def record_scoring_sha256(provenance: dict[str, Any]) -> None:
    """Add :func:`scoring_sha256` to a provenance block that holds its outputs digest."""
    digest = provenance.get(OUTPUTS_SHA256_KEY)
    if isinstance(digest, str) and isinstance(provenance.get("options"), Mapping):
        provenance[SCORING_SHA256_KEY] = scoring_sha256(
            provenance.get("benchmark"), provenance.get("task_version"),
            provenance["options"], digest)


def load_records_with_provenance(
    benchmark: Benchmark, options: Any, *, judge: str | None = None,
    judge_base_url: str | None = None, roles: Mapping[str, Any] | None = None,
) -> tuple[list[Any], list[dict[str, Any]], dict[str, Any]]:
    """The benchmark's items, their JSON records (``benchmark.to_record``, built once for
    the digest and the front end's samples) and the provenance block of a run over them.

    ``judge``: the judge model as the front end knows it (None: no judge configured);
    ``judge_base_url``: its endpoint, when one was set; ``roles``: the bound Inspect
    model roles.
    """
    items, sources = _PRELOADED.pop(_load_key(benchmark, options), None) or \
        _items_with_sources(benchmark, options)
    records = [benchmark.to_record(item) for item in items]
    return items, records, provenance_block(benchmark, options, items, sources, judge=judge,
                                            judge_base_url=judge_base_url, roles=roles,
                                            records=records)


# items loaded ahead (lm-eval's check before its model loads), taken by the run's own load
_PRELOADED: dict[tuple[str, str], tuple[list[Any], list[dict[str, Any]]]] = {}


def _load_key(benchmark: Benchmark, options: Any) -> tuple[str, str]:
    return benchmark.name, json.dumps(options_to_json(benchmark, options), sort_keys=True)


def _items_with_sources(benchmark: Benchmark,
                        options: Any) -> tuple[list[Any], list[dict[str, Any]]]:
    with recording_sources() as sources:
        items = load_items(benchmark, options)
    return items, list(sources)


def preload(benchmark: Benchmark, options: Any) -> None:
    """Load the items now, to fail before a front end loads its model; the next
    :func:`load_records_with_provenance` of the same options in this process takes them
    (read once, the sources recorded as read)."""
    _PRELOADED[_load_key(benchmark, options)] = _items_with_sources(benchmark, options)


def provenance_block(
    benchmark: Benchmark, options: Any, items: Sequence[Any],
    sources: Sequence[Mapping[str, Any]], *, judge: str | None = None,
    judge_base_url: str | None = None, roles: Mapping[str, Any] | None = None,
    records: Sequence[Mapping[str, Any]] | None = None,
    digest: RecordsDigest | None = None,
) -> dict[str, Any]:
    """``records``: the items' JSON records when already built (see :func:`records_sha256`);
    ``digest``: their digest when taken as they were read (a lean load); ``judge_base_url``
    (the judge's endpoint, when one was set) is recorded as ``judge_base_url``."""
    if digest is not None and digest.count != len(items):
        raise ValueError(f"a digest of {digest.count} records for {len(items)} items")
    return json_safe({
        "benchmark": benchmark.name,
        "task_version": benchmark.version,
        "options": options_to_json(benchmark, options),
        "data": {
            "sources": [dict(source) for source in sources],
            "records": len(items),
            "records_sha256": (digest.hexdigest() if digest is not None
                               else records_sha256(benchmark, items, records)),
        },
        "judge": judge,
        "models": benchmark.models(options, roles),
        **({"judge_base_url": judge_base_url} if judge_base_url else {}),
    })
