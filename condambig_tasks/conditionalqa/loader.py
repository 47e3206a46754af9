"""ConditionalQA files: ``$CONDAMBIG_DATA_DIR/conditionalqa/`` first, else the upstream repository.

Upstream is github.com/haitian-sun/ConditionalQA, folder ``v1_0/``: ``train.json``,
``dev.json``, ``test_no_answer.json`` (questions) and ``documents.json`` (the documents,
a separate and much larger file). Questions name their document by ``url``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from condambig_tasks import data
from condambig_tasks.assets import DIRECT_URL, AssetFile, ExternalAsset
from condambig_tasks.conditionalqa.records import (
    ConditionalAnswer,
    ConditionalQuestion,
    PolicyDocument,
)

BENCHMARK = "ConditionalQA"
FOLDER = "conditionalqa"
UPSTREAM_BASE = "https://raw.githubusercontent.com/haitian-sun/ConditionalQA/master/v1_0/"
QUESTION_SPLITS = ("train", "dev", "test_no_answer")
DOCUMENTS_FILE = "documents.json"


@dataclass(frozen=True)
class UpstreamFile:
    name: str
    sha256: str | None


# dev.json's digest was computed from a byte-identical copy of the upstream file; the other
# digests are not recorded yet: None means "not yet pinned", see data.fetch_pinned.
UPSTREAM_FILES: Mapping[str, UpstreamFile] = {
    "train": UpstreamFile("train.json", None),
    "dev": UpstreamFile(
        "dev.json", "a06cfe3e8b3ffe04f2652a2dbd912b647eb4448b724585c891539344b02fb7c7"
    ),
    "test_no_answer": UpstreamFile("test_no_answer.json", None),
    "documents": UpstreamFile(DOCUMENTS_FILE, None),
}
ASSET = ExternalAsset(
    DIRECT_URL, UPSTREAM_BASE, "download_and_verify",
    "The authors' v1_0 files on the master branch: each download is checked against its "
    "sha256 where one is recorded (dev.json).",
    files=tuple(AssetFile(FOLDER, upstream.name, upstream.sha256)
                for upstream in UPSTREAM_FILES.values()))


@dataclass(frozen=True)
class QuestionWithDocument:
    """A question joined to its document."""

    question: ConditionalQuestion
    document: PolicyDocument


def _file_path(key: str) -> Path:
    """The local copy when present, else the pinned upstream download."""
    upstream = UPSTREAM_FILES[key]
    local = data.local_files(FOLDER, [upstream.name])
    if local:
        return local[0]
    folder = data.local_folder(FOLDER)
    try:
        return data.fetch_pinned(
            UPSTREAM_BASE + upstream.name, upstream.sha256, BENCHMARK, FOLDER, upstream.name
        )
    except data.DataUnavailableError as error:
        if folder is None:
            raise
        raise data.DataUnavailableError(
            BENCHMARK, FOLDER, [upstream.name],
            f"{folder / upstream.name} does not exist and the upstream copy could not be "
            f"fetched ({error})",
        ) from error


def question_file(split: str) -> Path:
    if split not in QUESTION_SPLITS:
        raise ValueError(f"ConditionalQA split {split!r} does not exist; use one of {QUESTION_SPLITS}")
    return _file_path(split)


def documents_file() -> Path:
    return _file_path("documents")


def _string_list(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise data.CorruptDataError(f"{where}: expected a list of strings, got {value!r:.200}")
    return tuple(value)


def parse_answer(raw: Any, where: str) -> ConditionalAnswer:
    """``[text, [condition elements]]`` (upstream) -> ConditionalAnswer."""
    if not isinstance(raw, (list, tuple)) or len(raw) != 2 or not isinstance(raw[0], str):
        raise data.CorruptDataError(f"{where}: expected [answer, [conditions]], got {raw!r:.200}")
    return ConditionalAnswer(text=raw[0], conditions=_string_list(raw[1], where))


def parse_question(raw: Any, where: str) -> ConditionalQuestion:
    """One upstream question record; ``test_no_answer`` records have no answers/evidences."""
    if not isinstance(raw, dict):
        raise data.CorruptDataError(f"{where}: expected an object, got {type(raw).__name__}")
    missing = [key for key in ("id", "url", "scenario", "question") if key not in raw]
    if missing:
        raise data.CorruptDataError(f"{where}: missing field(s) {missing}")
    identifier = str(raw["id"])
    answers = raw.get("answers") or []
    if not isinstance(answers, list):
        raise data.CorruptDataError(f"{where} ({identifier}): 'answers' must be a list")
    return ConditionalQuestion(
        id=identifier,
        url=str(raw["url"]),
        scenario=str(raw["scenario"] or ""),
        question=str(raw["question"] or ""),
        not_answerable=bool(raw.get("not_answerable", False)),
        answers=tuple(
            parse_answer(answer, f"{where} ({identifier}) answer {index}")
            for index, answer in enumerate(answers)
        ),
        evidences=_string_list(raw.get("evidences"), f"{where} ({identifier}) evidences"),
    )


def parse_questions(raw: Any, source: str) -> list[ConditionalQuestion]:
    if not isinstance(raw, list):
        raise data.CorruptDataError(f"{source}: expected a JSON list of questions")
    return [parse_question(item, f"{source}[{index}]") for index, item in enumerate(raw)]


def parse_documents(raw: Any, source: str) -> dict[str, PolicyDocument]:
    """``[{url, title, contents}]`` -> documents by url."""
    if not isinstance(raw, list):
        raise data.CorruptDataError(f"{source}: expected a JSON list of documents")
    documents: dict[str, PolicyDocument] = {}
    for index, item in enumerate(raw):
        where = f"{source}[{index}]"
        if not isinstance(item, dict) or "url" not in item or "contents" not in item:
            raise data.CorruptDataError(f"{where}: expected an object with 'url' and 'contents'")
        documents[str(item["url"])] = PolicyDocument(
            url=str(item["url"]),
            title=str(item.get("title") or ""),
            contents=_string_list(item["contents"], f"{where} contents"),
        )
    return documents


def load_questions(split: str = "dev", path: Path | None = None) -> list[ConditionalQuestion]:
    """Questions of one split (or of the given file, in the same format)."""
    source = path if path is not None else question_file(split)
    return parse_questions(data.read_json(source), str(source))


def load_documents(path: Path | None = None) -> dict[str, PolicyDocument]:
    """Every document, by url (``documents.json``, or the given file)."""
    source = path if path is not None else documents_file()
    return parse_documents(data.read_json(source), str(source))


def join_documents(
    questions: list[ConditionalQuestion], documents: Mapping[str, PolicyDocument]
) -> list[QuestionWithDocument]:
    """Attach each question's document; a missing url is a data error naming it."""
    joined = []
    for question in questions:
        document = documents.get(question.url)
        if document is None:
            raise data.CorruptDataError(
                f"ConditionalQA question {question.id} refers to {question.url}, which is not in "
                f"{DOCUMENTS_FILE}. Use the documents.json of the same release (v1_0) as the questions."
            )
        joined.append(QuestionWithDocument(question, document))
    return joined


def reference_documents(reference: Path) -> dict[str, PolicyDocument] | None:
    """The documents for questions read from ``reference``: ``documents.json`` beside it, else
    the configured source; None when neither is available (the official prediction format
    quotes its condition elements, so it needs no documents)."""
    beside = reference.parent / DOCUMENTS_FILE
    if beside.is_file():
        return load_documents(beside)
    try:
        return load_documents()
    except data.DataUnavailableError:
        return None


def load_split(split: str = "dev") -> list[QuestionWithDocument]:
    """Questions of a split joined with their documents (needs documents.json)."""
    questions = load_questions(split)
    return join_documents(questions, load_documents())
