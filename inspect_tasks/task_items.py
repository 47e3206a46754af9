"""The benchmark item of each Inspect sample, found by its record's digest.

The scorer (and HotpotQA-FLM's baseline questioners) need the item a sample was built
from. Inspect's usual place for it, the sample's metadata, is copied, condensed and
written several times per sample (into its state, its events, the sample buffer, the log):
for AmbigNQ's half-kilobyte records that was about 4 % of a run's CPU
(``benchmarks/inspect_overhead.py``), and for CondAmbigQA and HotpotQA-FLM, whose records
hold every retrieved fragment or context fact, the log held the dataset again once per
sample. So a sample carries only its record's digest (``record_sha256``), and the records
stay here, as JSON text by their digests, in the process that built the task.

A process that did not build it (``inspect score`` on a log, through
``condambig-inspect-score``) loads the items again from the data the task read
(``CONDAMBIG_DATA_DIR`` or the hub revision in the options, as ``condambig-score
--from-log`` does) and looks each sample's digest up among theirs: a sample whose record
is not among them is an error that says so, never a score against other data. The samples
of logs written before samples carried the digest hold the record itself, which is used as
it is.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from condambig_tasks import registry
from condambig_tasks.data import load_items
from condambig_tasks.errors import ConfigurationError
from condambig_tasks.provenance import record_line

RECORD_SHA256_KEY = "record_sha256"
_RECORD_KEY = "record"  # the whole record, in the samples of older logs

# (benchmark, record digest) -> the record as JSON text, for every task built in this
# process: the digest covers the whole record, its id included, so items of two tasks of
# one benchmark (two splits, two option sets) never stand for each other. Text, not the
# items: a string is one object the garbage collector never scans, where the 2,002 AmbigNQ
# items are some 13,700 tracked objects that every full collection of the run walks again
_BUILT: dict[tuple[str, str], str] = {}


def record_sha256(record: Mapping[str, Any]) -> str:
    """The digest a sample carries of its item's record (:func:`record_line`'s form)."""
    return hashlib.sha256(record_line(record)).hexdigest()


def remember(benchmark_name: str, records: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Keep a task's item records for its scorer; each sample's metadata, in their order."""
    metadata = []
    for record in records:
        digest = record_sha256(record)
        # the record itself, not record_line's text: that hashes a lone surrogate as
        # U+FFFD, and the item rebuilt from it would not be the item the run loaded
        _BUILT[(benchmark_name, digest)] = json.dumps(record, ensure_ascii=False)
        metadata.append({RECORD_SHA256_KEY: digest})
    return metadata


class TaskItems:
    """The items of one benchmark's samples, for a scorer or solver. ``options`` (as JSON):
    the task's, to load its items again where they were not built (None: never)."""

    def __init__(self, benchmark_name: str, options: Mapping[str, Any] | None = None) -> None:
        self.benchmark = registry.get(benchmark_name)
        self.options = None if options is None else dict(options)
        self._loaded: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        """The task's items read again, by digest (a log scored in another process)."""
        if self._loaded is None:
            benchmark = self.benchmark
            items = [] if self.options is None else \
                load_items(benchmark, benchmark.options(self.options))
            self._loaded = {record_sha256(benchmark.to_record(item)): item for item in items}
        return self._loaded

    def item(self, sample_id: Any, metadata: Mapping[str, Any] | None) -> Any:
        """The item sample ``sample_id`` was built from (``metadata``: the sample's)."""
        metadata = metadata or {}
        if _RECORD_KEY in metadata:  # a log written before samples carried the digest
            return self.benchmark.from_record(metadata[_RECORD_KEY])
        name = self.benchmark.name
        digest = metadata.get(RECORD_SHA256_KEY)
        if not isinstance(digest, str):
            raise ConfigurationError(
                f"{name}: sample {sample_id} has no {RECORD_SHA256_KEY!r} in its metadata: "
                "not a sample of a condambig task; score logs the condambig tasks wrote.")
        built = _BUILT.get((name, digest))
        if built is not None:
            return self.benchmark.from_record(json.loads(built))
        found = self._load().get(digest)
        if found is None:
            loaded = "" if self.options is None else (
                f" nor among the {len(self._load())} items loaded with options "
                f"{json.dumps(self.options, sort_keys=True)}")
            raise ConfigurationError(
                f"{name}: the item of sample {sample_id} is not among this process's "
                f"tasks{loaded}: the data differs from the data the run read; score the log "
                "with that data (CONDAMBIG_DATA_DIR, or the hub revision the options name).")
        return found
