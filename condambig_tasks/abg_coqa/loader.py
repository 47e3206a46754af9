"""Loading Abg-CoQA (``coqa_abg_{train,val,test}.json``) into :class:`AbgCoQATurn` records.

Sources, in order: ``$CONDAMBIG_DATA_DIR/abg_coqa/coqa_abg_<split>.json``, else the upstream
raw file from github MeiqiGuo/AKBC2021-Abg-CoQA (``abg-coqa/``), downloaded once into the
cache and checked against its pinned sha256.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from condambig_tasks.abg_coqa.records import (
    AbgCoQATurn,
    ClarificationReply,
    ClarificationTurn,
    DialogueTurn,
)
from condambig_tasks.assets import DIRECT_URL, AssetFile, ExternalAsset
from condambig_tasks.data import CorruptDataError, fetch_pinned, local_files, read_json

BENCHMARK = "Abg-CoQA"
FOLDER = "abg_coqa"
AbgSplit = Literal["train", "val", "test"]
SPLITS: tuple[str, ...] = get_args(AbgSplit)
UPSTREAM_BASE = "https://raw.githubusercontent.com/MeiqiGuo/AKBC2021-Abg-CoQA/main/abg-coqa/"
# sha256 of the upstream files. val: computed from a byte-identical copy of the upstream file.
# train/test: not recorded (this project was built without access to GitHub); the download is
# then used unchecked.
UPSTREAM_SHA256: dict[str, str | None] = {
    "train": None,
    "val": "219f1400873902da47545980869a044507b6875bedfeb5dc42b32dfa67b99c8d",
    "test": None,
}
ANSWER_KEYS = ("org_ans", "org_ans_2", "org_ans_3")


@dataclass(frozen=True)
class AbgCoQADataConfig:
    """Which split to read (the paper reports the test split)."""

    split: str = "test"

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ValueError(
                f"{BENCHMARK}: unknown split {self.split!r}; choose one of {', '.join(SPLITS)}."
            )

    @property
    def file_name(self) -> str:
        return f"coqa_abg_{self.split}.json"


ASSET = ExternalAsset(
    DIRECT_URL, UPSTREAM_BASE, "download_and_verify",
    "The authors' files on the main branch: each download is checked against its sha256 "
    "where one is recorded (val).",
    files=tuple(AssetFile(FOLDER, AbgCoQADataConfig(split).file_name, UPSTREAM_SHA256[split])
                for split in SPLITS))


def _turn(raw: Mapping[str, Any]) -> DialogueTurn:
    return DialogueTurn(
        turn_id=int(raw.get("turn_id", 0)), question=str(raw.get("question", "")),
        answer=str(raw.get("answer", "")),
    )


def _clarification(raw: Any) -> ClarificationTurn | None:
    if not isinstance(raw, Mapping) or not str(raw.get("question", "")).strip():
        return None
    replies = []
    for answer in raw.get("answers") or []:
        if not isinstance(answer, Mapping):
            continue
        references = tuple(str(answer[key]) for key in ANSWER_KEYS if isinstance(answer.get(key), str))
        replies.append(ClarificationReply(reply=str(answer.get("clr_ans", "")), answers=references))
    return ClarificationTurn(question=str(raw["question"]), replies=tuple(replies))


def normalise_record(raw: Mapping[str, Any], source: str = BENCHMARK) -> AbgCoQATurn:
    """One target turn from the upstream JSON; ``source`` names the file in errors."""
    try:
        ambiguity = raw["ambiguity"]
        if ambiguity not in ("ambiguous", "non_ambiguous"):
            raise ValueError(f"ambiguity label {ambiguity!r}")
        return AbgCoQATurn(
            id=str(raw["id"]), story=str(raw["story"]), source=str(raw.get("source", "")),
            target=_turn(raw["target_turn"]),
            history=tuple(_turn(turn) for turn in raw.get("history_turns") or []),
            ambiguous=ambiguity == "ambiguous",
            clarification=_clarification(raw.get("clarification_turn")),
            second_clarification=_clarification(raw.get("clarification_turn_2")),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise CorruptDataError(
            f"{source}: a record does not have the upstream format ({error!r}); expected "
            "{id, story, target_turn, history_turns, ambiguity, clarification_turn, source}."
        ) from error


def parse_file(raw: Any, source: str) -> list[AbgCoQATurn]:
    data = raw.get("data") if isinstance(raw, Mapping) else None
    if not isinstance(data, Sequence):
        raise CorruptDataError(
            f"{source}: expected an object with a 'data' list (the upstream coqa_abg_*.json)."
        )
    return [normalise_record(record, source) for record in data]


def load_turns(config: AbgCoQADataConfig | None = None) -> list[AbgCoQATurn]:
    """Every target turn of one split."""
    config = config or AbgCoQADataConfig()
    local = local_files(FOLDER, [config.file_name])
    if local:
        return parse_file(read_json(local[0]), str(local[0]))
    path = fetch_pinned(
        UPSTREAM_BASE + config.file_name, UPSTREAM_SHA256[config.split], BENCHMARK, FOLDER,
        config.file_name,
    )
    return parse_file(read_json(path), str(path))


def _turn_to_upstream(turn: DialogueTurn) -> dict[str, Any]:
    return {"turn_id": turn.turn_id, "question": turn.question, "answer": turn.answer}


def _clarification_to_upstream(turn: ClarificationTurn | None) -> dict[str, Any]:
    if turn is None:
        return {}
    return {
        "question": turn.question,
        "answers": [
            {"clr_ans": reply.reply, **dict(zip(ANSWER_KEYS, reply.answers, strict=False))}
            for reply in turn.replies
        ],
    }


def to_upstream(record: AbgCoQATurn) -> dict[str, Any]:
    """A record back in the upstream format (what framework documents carry)."""
    raw: dict[str, Any] = {
        "id": record.id, "story": record.story, "source": record.source,
        "target_turn": _turn_to_upstream(record.target),
        "history_turns": [_turn_to_upstream(turn) for turn in record.history],
        "ambiguity": "ambiguous" if record.ambiguous else "non_ambiguous",
        "clarification_turn": _clarification_to_upstream(record.clarification),
    }
    if record.second_clarification is not None:
        raw["clarification_turn_2"] = _clarification_to_upstream(record.second_clarification)
    return raw
