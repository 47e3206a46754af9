"""Loading AmbigNQ ``light`` into :class:`AmbigNQQuestion` records.

Sources, in order: ``$CONDAMBIG_DATA_DIR/ambignq/dev_light.json`` (the original release), else
the Hugging Face dataset ``sewon/ambig_qa`` (config ``light``, split ``validation``). The two
differ in layout: the original nests annotations row-wise, the hub stores every nested list
column-wise (a dict of lists); :func:`normalise_record` accepts both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from condambig_tasks.ambignq.records import (
    AmbigNQQuestion,
    Annotation,
    GoldQAPair,
    MultipleQAs,
    SingleAnswer,
)
from condambig_tasks.assets import HUGGINGFACE, AssetFile, ExternalAsset
from condambig_tasks.data import (
    CorruptDataError,
    load_hub_dataset,
    local_files,
    read_json,
)

BENCHMARK = "AmbigNQ"
FOLDER = "ambignq"
FILE_NAME = "dev_light.json"
HUB_REPOSITORY = "sewon/ambig_qa"
HUB_CONFIG = "light"
HUB_SPLIT = "validation"
# Not recorded: this project was built without access to the Hugging Face hub. Pin a commit
# with the task option `hub_revision` (lm-eval --metadata / Inspect -T) for reproducible runs.
HUB_REVISION: str | None = None
ASSET = ExternalAsset(
    HUGGINGFACE, HUB_REPOSITORY, "load_dataset",
    "No commit recorded: pin one with the hub_revision option. A local copy of the original "
    "release's dev_light.json (nlp.cs.washington.edu/ambigqa) is read first; its sha256 is "
    "the one given here.",
    files=(AssetFile(FOLDER, FILE_NAME,
                     "425c259bd6b28a2ea35894b9cea0192a3117c32bdcf6e5549ef66b31218eeb28"),),
    revision=HUB_REVISION, config=HUB_CONFIG, split=HUB_SPLIT)


@dataclass(frozen=True)
class AmbigNQDataConfig:
    """Where to read AmbigNQ from when no local copy exists."""

    hub_revision: str | None = HUB_REVISION


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence):
        return tuple(str(item) for item in value if isinstance(item, str))
    return ()


def _row_wise(value: Any) -> list[dict[str, Any]]:
    """A list of records from either a list of dicts or a dict of equally long lists."""
    if isinstance(value, Mapping):
        columns = {key: list(column) for key, column in value.items() if column is not None}
        length = max((len(column) for column in columns.values()), default=0)
        return [
            {key: column[index] for key, column in columns.items() if index < len(column)}
            for index in range(length)
        ]
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [item for item in value if isinstance(item, Mapping)]
    return []


def _annotation(raw: Mapping[str, Any], record_id: str) -> Annotation:
    kind = raw.get("type")
    if kind == "singleAnswer":
        return SingleAnswer(answers=_strings(raw.get("answer")))
    if kind == "multipleQAs":
        pairs = tuple(
            GoldQAPair(question=str(pair.get("question", "")), answers=_strings(pair.get("answer")))
            for pair in _row_wise(raw.get("qaPairs"))
        )
        return MultipleQAs(pairs=pairs)
    raise CorruptDataError(
        f"{BENCHMARK}: question {record_id} has an annotation of unknown type {kind!r} "
        "(expected singleAnswer or multipleQAs); replace the file with the upstream one."
    )


def normalise_record(raw: Mapping[str, Any]) -> AmbigNQQuestion:
    """One question from the original JSON or from a hub row."""
    try:
        record_id, question = str(raw["id"]), str(raw["question"])
        annotations = tuple(_annotation(a, record_id) for a in _row_wise(raw["annotations"]))
    except (KeyError, TypeError) as error:
        raise CorruptDataError(
            f"{BENCHMARK}: a record lacks id/question/annotations ({error!r}); expected the "
            f"format of {FILE_NAME}."
        ) from error
    return AmbigNQQuestion(id=record_id, question=question, annotations=annotations)


def annotations_to_json(annotations: Sequence[Annotation]) -> list[dict[str, Any]]:
    """Annotations back in the original row-wise format (for framework documents)."""
    result: list[dict[str, Any]] = []
    for annotation in annotations:
        if isinstance(annotation, SingleAnswer):
            result.append({"type": "singleAnswer", "answer": list(annotation.answers)})
        else:
            result.append({
                "type": "multipleQAs",
                "qaPairs": [
                    {"question": pair.question, "answer": list(pair.answers)}
                    for pair in annotation.pairs
                ],
            })
    return result


def parse_records(raw_records: Any, source: str) -> list[AmbigNQQuestion]:
    if not isinstance(raw_records, Sequence) or isinstance(raw_records, str):
        raise CorruptDataError(
            f"{source}: expected a JSON list of AmbigNQ questions; replace it with the upstream "
            f"{FILE_NAME}."
        )
    return [normalise_record(raw) for raw in raw_records]


def load_questions(config: AmbigNQDataConfig | None = None) -> list[AmbigNQQuestion]:
    """The AmbigNQ development questions (2,002 in the upstream release)."""
    config = config or AmbigNQDataConfig()
    local = local_files(FOLDER, [FILE_NAME])
    if local:
        return parse_records(read_json(local[0]), str(local[0]))
    dataset = load_hub_dataset(
        HUB_REPOSITORY, config.hub_revision, BENCHMARK, FOLDER, [FILE_NAME],
        name=HUB_CONFIG, split=HUB_SPLIT,
    )
    return parse_records(list(dataset), f"{HUB_REPOSITORY} ({HUB_CONFIG}/{HUB_SPLIT})")
