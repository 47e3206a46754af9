"""HotpotQA distractor validation, from ``$CONDAMBIG_DATA_DIR/hotpotqa/`` or the hub.

The original JSON stores ``supporting_facts`` as ``[[title, sent_id], ...]`` and
``context`` as ``[[title, [sentence, ...]], ...]``; the Hugging Face copy
(``hotpotqa/hotpot_qa``, config ``distractor``) stores both column-wise
(``{"title": [...], "sent_id": [...]}`` / ``{"title": [...], "sentences": [...]}``) and
names the id ``id`` instead of ``_id``. :func:`normalise_example` accepts both.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from condambig_tasks.assets import HUGGINGFACE, AssetFile, ExternalAsset
from condambig_tasks.data import CorruptDataError, load_hub_dataset, local_files, read_json
from condambig_tasks.hotpot_flm.records import HotpotExample

logger = logging.getLogger(__name__)

BENCHMARK = "HotpotQA-FLM"
FOLDER = "hotpotqa"
FILE_NAME = "hotpot_dev_distractor_v1.json"
HUB_REPOSITORY = "hotpotqa/hotpot_qa"
HUB_CONFIG = "distractor"
HUB_SPLIT = "validation"
# Not pinned to a commit. Replace with the sha shown by `huggingface-cli repo info hotpotqa/hotpot_qa` to freeze the data.
HUB_REVISION: str | None = None
ASSET = ExternalAsset(
    HUGGINGFACE, HUB_REPOSITORY, "load_dataset",
    "HotpotQA's distractor validation set, the source of the full split. No commit recorded; "
    "the upstream file's sha256 is not recorded either.",
    files=(AssetFile(FOLDER, FILE_NAME),), revision=HUB_REVISION, config=HUB_CONFIG,
    split=HUB_SPLIT)


def load_hotpot_examples() -> list[HotpotExample]:
    """Every example of the distractor validation set (7,405 upstream), in file order."""
    files = local_files(FOLDER, [FILE_NAME])
    if files:
        path = files[0]
        content = read_json(path)
        if not isinstance(content, list) or not content:
            raise CorruptDataError(f"{path}: expected a JSON list of HotpotQA examples; "
                                   f"replace it with the upstream {FILE_NAME}.")
        return [normalise_example(row, str(path)) for row in content]
    dataset = load_hub_dataset(
        HUB_REPOSITORY, HUB_REVISION, BENCHMARK, FOLDER, [FILE_NAME],
        name=HUB_CONFIG, split=HUB_SPLIT,
    )
    logger.info("%s: %d examples from %s/%s", BENCHMARK, len(dataset), HUB_REPOSITORY, HUB_CONFIG)
    return [normalise_example(row, HUB_REPOSITORY) for row in dataset]


def _pairs(value: Any, first: str, second: str) -> list[tuple[Any, Any]]:
    """Row-wise ``[[a, b], ...]`` or column-wise ``{first: [...], second: [...]}`` as pairs."""
    if isinstance(value, Mapping):
        return list(zip(value[first], value[second], strict=True))
    return [(item[0], item[1]) for item in value]


def normalise_example(row: Mapping[str, Any], source: str) -> HotpotExample:
    """One example in either layout; a malformed row raises CorruptDataError naming it."""
    if not isinstance(row, Mapping):
        raise CorruptDataError(f"{source}: an entry is {type(row).__name__}, not a HotpotQA "
                               f"record; replace the file with the upstream {FILE_NAME}.")
    example_id = row.get("_id", row.get("id"))
    try:
        paragraphs = tuple(
            (str(title), tuple(str(sentence) for sentence in sentences))
            for title, sentences in _pairs(row["context"], "title", "sentences")
        )
        supporting = tuple(
            (str(title), int(index))
            for title, index in _pairs(row["supporting_facts"], "title", "sent_id")
        )
        return HotpotExample(
            id=str(example_id), question=str(row["question"]), answer=str(row["answer"]),
            type=str(row.get("type", "")), level=str(row.get("level", "")),
            paragraphs=paragraphs, supporting_facts=supporting,
        )
    except (KeyError, IndexError, TypeError, ValueError) as error:
        raise CorruptDataError(
            f"{source}: example {example_id!r} is not a HotpotQA distractor record "
            f"({type(error).__name__}: {error}). Replace the file with the upstream "
            f"{FILE_NAME}."
        ) from error
