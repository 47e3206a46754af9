"""The samples of an Inspect log, as ``--from-log``, the report and the task-end hook need
them: each sample's id, epoch, whether it ended in an error (and its message), the
completion its scorer read, its scores and its store.

Inspect's own ``read_eval_log(..., exclude_fields=...)`` streams every sample through
ijson, whose cost grows far faster than the log (a minute for 30 MB of completions), and
it reads a member that is not JSON, or nested without end, with no bound. Here each sample
is parsed once with :func:`condambig_tasks.json_files.loads` (the bounds every user file
gets) and only the fields above are kept: a ``.eval`` log member by member, a ``.json``
log whole. The layout is Inspect's (``inspect_ai.log._recorders.eval``: ``samples/<id>_
epoch_<n>.json`` members; ``EvalSample``: ``output.completion``, ``scores``, ``error``).
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from condambig_tasks import json_files
from condambig_tasks.json_files import kind as _kind

SAMPLES_DIR = "samples/"  # inspect_ai.log._recorders.eval.SAMPLES_DIR, with its slash


class InspectSampleError(ValueError):
    """A sample that is not one Inspect writes: the message is one line naming the log."""


@dataclass(frozen=True)
class LoggedScore:
    value: Any
    metadata: dict[str, Any] = field(default_factory=dict)
    explanation: str | None = None


@dataclass(frozen=True)
class LoggedSample:
    id: str
    epoch: int
    failed: bool  # the sample ended in an error (it has no output to score)
    completion: str
    scores: dict[str, LoggedScore]
    error: str | None = None  # the error's message, when the sample ended in one
    store: dict[str, Any] = field(default_factory=dict)  # the sample's store, as logged


def read_samples(path: str | Path) -> list[LoggedSample]:
    """Every sample of the Inspect log at ``path``, in the order the log holds them."""
    path = Path(path)
    return [_sample(path, where, raw) for where, raw in _raw_samples(path)]


def _raw_samples(path: Path) -> Iterator[tuple[str, Any]]:
    """(where in the log, the sample's JSON value)."""
    if path.suffix == ".eval":
        # Inspect writes a .eval log's members zstd-compressed and teaches the stdlib's
        # zipfile to read them when its log recorders are imported
        # (inspect_ai._util.zipfile); without that import the log reads as unsupported
        import inspect_ai.log  # noqa: F401

        try:
            with zipfile.ZipFile(path) as archive:
                for member in archive.infolist():
                    if member.filename.startswith(SAMPLES_DIR) and \
                            member.filename.endswith(".json"):
                        yield member.filename, _member_json(path, archive, member)
        except (OSError, zipfile.BadZipFile, EOFError, RuntimeError, NotImplementedError) as error:
            raise InspectSampleError(f"{path}: cannot read it as a .eval (zip) log "
                                     f"({error}); give the log Inspect wrote.") from None
        return
    try:
        log = json_files.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json_files.JsonFileError) as error:
        raise InspectSampleError(f"{path}: cannot be read as JSON ({error}); give the log "
                                 "Inspect wrote.") from None
    samples = log.get("samples") if isinstance(log, dict) else None
    if samples is None:
        return
    if not isinstance(samples, list):
        raise InspectSampleError(f"{path}: its 'samples' is {_kind(samples)}, not a list; "
                                 "give the log Inspect wrote.")
    for index, sample in enumerate(samples):
        yield f"samples[{index}]", sample


def _member_json(path: Path, archive: zipfile.ZipFile, member: zipfile.ZipInfo) -> Any:
    where = f"{path}: sample member {member.filename}"
    try:
        text = archive.read(member).decode("utf-8")
    except UnicodeDecodeError as error:
        raise InspectSampleError(f"{where} is not UTF-8 text ({error.reason}); give the log "
                                 "Inspect wrote.") from None
    try:
        return json_files.loads(text)
    except json_files.JsonFileError as error:
        raise InspectSampleError(f"{where} is not JSON ({error}); give the log Inspect "
                                 "wrote.") from None


def _sample(path: Path, where: str, raw: Any) -> LoggedSample:
    def bad(problem: str) -> InspectSampleError:
        return InspectSampleError(f"{path}: {where}: {problem}; not a sample as Inspect "
                                  "writes it (give the log Inspect wrote).")

    if not isinstance(raw, dict):
        raise bad(f"is {_kind(raw)}, not an object")
    identifier, epoch = raw.get("id"), raw.get("epoch", 1)
    if isinstance(identifier, bool) or not isinstance(identifier, (str, int)):
        raise bad(f"its 'id' is {_kind(identifier)}, not a string or integer")
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        raise bad(f"its 'epoch' is {_kind(epoch)}, not an integer")
    error = raw.get("error")
    if error is not None and not isinstance(error, dict):
        raise bad(f"its 'error' is {_kind(error)}, not an object")
    store = raw.get("store") or {}
    if not isinstance(store, dict):
        raise bad(f"its 'store' is {_kind(store)}, not an object")
    return LoggedSample(id=str(identifier), epoch=epoch, failed=error is not None,
                        completion=_completion(raw.get("output"), bad),
                        scores=_scores(raw.get("scores"), bad),
                        error=None if error is None else str(error.get("message", "")),
                        store=store)


def _completion(output: Any, bad: Any) -> str:
    """``ModelOutput.completion``: as written, else (empty) the first choice's text, as
    Inspect's model validator fills it."""
    if output is None:
        return ""
    if not isinstance(output, dict):
        raise bad(f"its 'output' is {_kind(output)}, not an object")
    completion = output.get("completion", "")
    if not isinstance(completion, str):
        raise bad(f"its 'output.completion' is {_kind(completion)}, not a string")
    if completion or not output.get("choices"):
        return completion
    from inspect_ai.model import ModelOutput
    from pydantic import ValidationError

    try:
        return ModelOutput.model_validate(output).completion
    except ValidationError as error:
        first = error.errors()[0]
        place = ".".join(str(part) for part in first.get("loc", ()))
        raise bad(f"its 'output.{place}' does not fit Inspect's model output "
                  f"({first.get('msg', 'invalid')})") from None


def _scores(scores: Any, bad: Any) -> dict[str, LoggedScore]:
    if scores is None:
        return {}
    if not isinstance(scores, dict):
        raise bad(f"its 'scores' is {_kind(scores)}, not an object")
    found = {}
    for name, score in scores.items():
        if not isinstance(score, dict) or "value" not in score:
            raise bad(f"its score {name!r} is {_kind(score)}, not an object with a 'value'")
        metadata, explanation = score.get("metadata") or {}, score.get("explanation")
        if not isinstance(metadata, Mapping):
            raise bad(f"its score {name!r} has 'metadata' {_kind(metadata)}, not an object")
        if explanation is not None and not isinstance(explanation, str):
            raise bad(f"its score {name!r} has 'explanation' {_kind(explanation)}, not text")
        found[name] = LoggedScore(score["value"], dict(metadata), explanation)
    return found

