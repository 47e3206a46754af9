"""The run record: one versioned file holding a scored run whole.

``condambig-score ... --record FILE`` writes it, from an outputs file or from any front
end's log (``--from-log``: an lm-eval run, an Inspect log, or another record), so a run of
every front end becomes the same file in one place. It is the JSON ``condambig-score``
prints, with ``record_version`` first, the run's ``model`` (when the log names one), the
outputs it scored (``outputs``: exactly the list whose digest is
``provenance.outputs_sha256``) and every sample's scores (``samples``: what
``--per-sample`` writes). ``condambig-report`` reads it with its per-sample scores (no
file beside it to pair), and ``condambig-score --from-log`` rescores it, for example with
another judge (:mod:`condambig_tasks.run_logs`).

Its ``source`` block says which run it holds: ``framework``, ``task`` and ``path`` of the
log it came from, and ``scored_by``, whose numbers these are. A record written by the run
itself (``CONDAMBIG_RECORD_DIR`` in lm-eval or Inspect) has ``scored_by`` equal to its
framework, and readers take it as that framework's run (``condambig-register`` lists an
Inspect run's record as it lists its log, with ``source.task_args`` and ``source.created``);
``condambig-score --record`` writes none, its numbers are its own.

A record of a later format than this version reads is refused with one line, never read
as something it is not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from condambig_tasks.benchmark import ScoredSample, json_safe
from condambig_tasks.errors import PredictionFileError

VERSION_KEY = "record_version"
SCORED_BY = "scored_by"  # in ``source``: the framework whose run wrote the record
RECORD_VERSION = 1  # raise it when a key changes meaning or a required key is added


class RunRecordError(PredictionFileError):
    """A file that claims to be a run record and is not one this version reads."""


def build(result: Mapping[str, Any], outputs: Sequence[tuple[str, Any]],
          samples: Sequence[ScoredSample], model: str | None = None) -> dict[str, Any]:
    """The record of a ``condambig-score`` result: its JSON, the outputs scored as
    (id, output) pairs and the samples."""
    record: dict[str, Any] = {VERSION_KEY: RECORD_VERSION, **result}
    if model:
        record["model"] = model
    record["outputs"] = [{"id": key, "output": output} for key, output in outputs]
    record["samples"] = [sample.to_json() for sample in samples]
    return json_safe(record)


def file_name(task: str, model: str | None) -> str:
    """``<task>_<model>_<UTC time>.json`` (``/`` in the model as ``__``, as lm-eval names
    its output folders): a record of each run, none overwritten."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H-%M-%S.%f")
    safe = re.sub(r"[^\w.-]", "_", (model or "model").replace("/", "__"))
    return f"{task}_{safe}_{stamp}.json"


def write(path: Path, record: Mapping[str, Any]) -> None:
    """Write the record as one JSON file (``null``, never NaN)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n",
                    encoding="utf-8")


def is_record(data: Any) -> bool:
    return isinstance(data, dict) and VERSION_KEY in data


def check(path: Path, data: Mapping[str, Any]) -> Mapping[str, Any]:
    """The record, once its version and the keys every reader needs are checked."""
    version = data.get(VERSION_KEY)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise RunRecordError(f"{path}: {VERSION_KEY} is {version!r}, not a record version; "
                             "give the file condambig-score --record wrote.")
    if version > RECORD_VERSION:
        raise RunRecordError(f"{path}: a run record of version {version}; this condambig "
                             f"reads version {RECORD_VERSION}: upgrade condambig to read it.")
    for key, kind in (("benchmark", str), ("options", dict), ("metrics", dict),
                      ("outputs", list), ("samples", list)):
        if not isinstance(data.get(key), kind):
            raise RunRecordError(f"{path}: a run record without its {key!r} "
                                 f"({kind.__name__}); give the file condambig-score "
                                 "--record wrote.")
    return data


def samples(path: Path, data: Mapping[str, Any]) -> list[ScoredSample]:
    """The record's per-sample scores."""
    rows = check(path, data)["samples"]
    if not all(isinstance(row, dict) and isinstance(row.get("id"), str)
               and isinstance(row.get("values"), dict) for row in rows):
        raise RunRecordError(f"{path}: its samples are not as condambig-score writes them "
                             "('id', 'values'); give the file condambig-score --record "
                             "wrote.")
    return [ScoredSample.from_json(row) for row in rows]


def outputs(path: Path, data: Mapping[str, Any]) -> list[dict[str, str]]:
    """The record's scored outputs, ``[{"id", "output"}]``."""
    rows = check(path, data)["outputs"]
    if not all(isinstance(row, dict) and isinstance(row.get("id"), str)
               and isinstance(row.get("output"), str) for row in rows):
        raise RunRecordError(f"{path}: its outputs are not [{{'id', 'output'}}] text; give "
                             "the file condambig-score --record wrote.")
    return [{"id": row["id"], "output": row["output"]} for row in rows]
