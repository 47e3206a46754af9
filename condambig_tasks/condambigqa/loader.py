"""Load CondAmbigQA from ``$CONDAMBIG_DATA_DIR/condambigqa/*.json[l]`` or the Hugging Face hub.

Both releases are accepted: the 200-question release (``citations`` per property) and the
2K release (``condition_citations`` + ``answer_citations``, whose union is taken). Hugging
Face may hand nested lists over column-wise (a dict of lists); :func:`_rows` undoes that.
A gold citation titled ``"N. Title"`` means fragment N (1-based); an unnumbered title is
matched to the fragment with the same text, then the same title.
"""

from __future__ import annotations

import codecs
import hashlib
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from condambig_tasks import json_files
from condambig_tasks.assets import HUGGINGFACE, AssetFile, ExternalAsset
from condambig_tasks.condambigqa.records import CondAmbigQuestion, Fragment, GoldProperty
from condambig_tasks.data import (
    CorruptDataError,
    DataUnavailableError,
    load_hub_dataset,
    local_files,
    not_json,
    note_file,
    read_json,
)

logger = logging.getLogger(__name__)

BENCHMARK = "CondAmbigQA"
FOLDER = "condambigqa"
LOCAL_PATTERNS = ("*.json", "*.jsonl")


class Release(str, Enum):
    TWO_K = "2k"  # Apocalypse-AGI-DAO/CondAmbigQA-2K (2,000 questions)
    ORIGINAL = "200"  # Apocalypse-AGI-DAO/CondAmbigQA (200 questions; upstream file mcaqa.json)


@dataclass(frozen=True)
class HubSource:
    repository: str
    # The revision read: a branch until a commit is recorded; replace it with the commit sha
    # shown by `huggingface-cli repo info` to freeze it.
    revision: str
    local_file_hint: str


HUB_SOURCES: Mapping[Release, HubSource] = {
    Release.TWO_K: HubSource("Apocalypse-AGI-DAO/CondAmbigQA-2K", "main", "condambigqa_2k.json"),
    Release.ORIGINAL: HubSource("Apocalypse-AGI-DAO/CondAmbigQA", "main", "mcaqa.json"),
}
# what each release's local file is and the sha256 of the upstream copy where recorded
_RELEASE_NOTES: Mapping[Release, tuple[str, str | None]] = {
    Release.TWO_K: ("The 2,000-question release (option release=2k, the default). Only the "
                    "branch is recorded: pin a commit with the hub_revision option.", None),
    Release.ORIGINAL: (
        "The original 200-question release (option release=200); as a local file it is "
        "mcaqa.json from the authors' repository (innovation64/CondAmbigQA, "
        "experiment_code/data/mcaqa.json), whose sha256 is given here.",
        "d6554f6465f32b7ee889f0fcada3a4a3296f0629cf15b47d64a0c7874791a63f"),
}
ASSETS = tuple(
    ExternalAsset(HUGGINGFACE, hub.repository, "load_dataset", _RELEASE_NOTES[release][0],
                  files=(AssetFile(FOLDER, hub.local_file_hint, _RELEASE_NOTES[release][1]),),
                  revision=hub.revision)
    for release, hub in HUB_SOURCES.items())

_NUMBERED_TITLE = re.compile(r"^\s*(\d+)\s*[.):-]\s*(.*)$", re.DOTALL)
READ_BLOCK_BYTES = 1 << 20


def load_questions(
    release: Release | str = Release.TWO_K, hub_revision: str | None = None,
    keep: Callable[[CondAmbigQuestion], Any] | None = None,
) -> list[Any]:
    """All questions of a release. Locally: the release's own file
    (``condambigqa_2k.json`` / ``mcaqa.json``) when present, else every
    ``condambigqa/*.json[l]`` file (with a warning naming them); else the hub (at
    ``hub_revision``, a commit sha to pin, else the revision recorded in HUB_SOURCES).
    ``keep``: what is kept of each question, given it as soon as it is read (default: all
    of it)."""
    keep = keep or (lambda question: question)
    release = Release(release)
    files = local_files(FOLDER, LOCAL_PATTERNS)
    own = [path for path in files if path.name == HUB_SOURCES[release].local_file_hint]
    if own:
        files = own
    elif files:
        logger.warning(
            "%s: release=%s asked, but %s is not among the local files; reading %s instead "
            "(pass release=%s if that is the release they hold)", BENCHMARK, release.value,
            HUB_SOURCES[release].local_file_hint, ", ".join(p.name for p in files),
            next(r.value for r in Release if r is not release))
    if files:
        source = ", ".join(str(p) for p in files)
        # each record becomes its question as it is read (a 2K file is 28 MB of JSON)
        questions = [keep(normalise_record(row, source)) for path in files
                     for row in read_json_rows(path)]
    else:
        hub = HUB_SOURCES[release]
        dataset = load_hub_dataset(
            hub.repository, hub_revision or hub.revision, BENCHMARK, FOLDER,
            [hub.local_file_hint],
        )
        # discover the split names rather than assuming one
        splits = list(dataset.keys()) if hasattr(dataset, "keys") else [None]
        logger.info("%s: using splits %s of %s", BENCHMARK, splits, hub.repository)
        source = hub.repository
        questions = [keep(normalise_record(row, source)) for split in splits
                     for row in (dataset[split] if split else dataset)]
    if not questions:
        raise DataUnavailableError(BENCHMARK, FOLDER, [HUB_SOURCES[release].local_file_hint],
                                   f"no questions found in {source}")
    return questions


def read_json_rows(path: Path) -> Iterator[Any]:
    """The records of a local file, read a block at a time: the elements of its top-level
    array (of the list under ``data`` when the top level is an object), or the lines of
    JSON Lines. A large ``.json`` file is never held as text, and each record can become
    its question before the next is parsed (whole-file parsing held 40 KB a question, 2.7
    times the file). The bytes read are recorded with their sha256, as
    :func:`condambig_tasks.data.read_text` records them."""
    if path.suffix == ".jsonl":
        yield from read_json(path)
        return
    digest = hashlib.sha256()

    def blocks() -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")()
        with path.open("rb") as handle:
            while block := handle.read(READ_BLOCK_BYTES):
                digest.update(block)
                yield decoder.decode(block)
        yield decoder.decode(b"", final=True)

    try:
        yield from json_files.iter_array(blocks(), unwrap="data")
    except (OSError, UnicodeDecodeError, json_files.JsonFileError) as error:
        raise not_json(path, error) from error
    note_file(path, digest.hexdigest())


def normalise_record(row: Mapping[str, Any], source: str = "") -> CondAmbigQuestion:
    """One upstream record (either release, row- or column-wise) -> CondAmbigQuestion."""
    try:
        fragments = tuple(
            Fragment(title=str(c.get("title") or ""), text=str(c.get("text") or ""))
            for c in _rows(row.get("ctxs") or [])
        )
        properties = tuple(
            _gold_property(p, fragments) for p in _rows(row.get("properties") or [])
        )
        return CondAmbigQuestion(
            id=str(row["id"]), question=str(row["question"]),
            fragments=fragments, properties=properties,
        )
    except (KeyError, TypeError, AttributeError, ValueError) as error:
        raise CorruptDataError(
            f"{source}: a CondAmbigQA record is malformed ({error!r}); expected "
            "{id, question, ctxs[{title, text}], properties[{condition, groundtruth, citations}]}."
        ) from error


def _rows(value: Any) -> list[dict]:
    """A list of dicts, from either a list of dicts or a column-wise dict of lists."""
    if isinstance(value, Mapping):
        keys = list(value.keys())
        length = max((len(value[k]) for k in keys), default=0)
        return [{k: value[k][i] for k in keys} for i in range(length)]
    return list(value)


def _gold_property(prop: Mapping[str, Any], fragments: tuple[Fragment, ...]) -> GoldProperty:
    citations = [
        *_rows(prop.get("citations") or []),
        *_rows(prop.get("condition_citations") or []),
        *_rows(prop.get("answer_citations") or []),
    ]
    numbers = sorted({n for c in citations if (n := _fragment_number(c, fragments)) is not None})
    return GoldProperty(
        condition=str(prop.get("condition") or ""),
        answer=_as_text(prop.get("groundtruth", prop.get("answer", ""))),
        fragments=tuple(numbers),
    )


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, Iterable):
        return " ".join(str(v).strip() for v in value if str(v).strip())
    return "" if value is None else str(value)


def _fragment_number(citation: Mapping[str, Any], fragments: tuple[Fragment, ...]) -> int | None:
    title = str(citation.get("title") or "")
    match = _NUMBERED_TITLE.match(title)
    if match:
        return int(match.group(1))
    text = str(citation.get("text") or "").strip()
    for number, fragment in enumerate(fragments, start=1):
        if text and fragment.text.strip() == text:
            return number
    for number, fragment in enumerate(fragments, start=1):
        if title and fragment.title.strip() == title.strip():
            return number
    return None
