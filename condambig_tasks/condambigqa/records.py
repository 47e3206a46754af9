"""Typed CondAmbigQA records, independent of the file schema they came from."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from enum import Enum


class Setting(str, Enum):
    """The paper's experimental settings (one task variant each)."""

    MAIN = "main"  # conditions + answers + citations from fragments (Table 2)
    GOLD_CONDITIONS = "gold_conditions"  # answers for the given gold conditions (Fig. 4, Table 3)
    NO_CONDITIONS = "no_conditions"  # standard RAG: answers + citations (Fig. 4)
    CLOSED_BOOK = "closed_book"  # question only, answers (Table 3)
    CLOSED_BOOK_CONDITIONS = "closed_book_conditions"  # question only, hypothesised conditions

    @property
    def sees_fragments(self) -> bool:
        return self not in (Setting.CLOSED_BOOK, Setting.CLOSED_BOOK_CONDITIONS)

    @property
    def generates_conditions(self) -> bool:
        return self in (Setting.MAIN, Setting.CLOSED_BOOK_CONDITIONS)

    @property
    def cites(self) -> bool:
        return self.sees_fragments


@dataclass(frozen=True, slots=True)
class Fragment:
    """One retrieved Wikipedia passage; ``ctxs[i]`` is shown as "Fragment i+1"."""

    title: str
    text: str


class DroppedFragment:
    """A fragment whose title and text a judge-free ``condambig-score`` run does not keep:
    its scoring reads only how many fragments a question has, and 100,000 questions' texts
    are 1.5 GB. Reading what was dropped is an error, never an empty fragment."""

    __slots__ = ()

    @property
    def title(self) -> str:
        raise _dropped()

    @property
    def text(self) -> str:
        raise _dropped()


def _dropped() -> RuntimeError:
    return RuntimeError("this CondAmbigQA question was loaded for judge-free scoring, "
                        "which drops its fragments' text; load it with Benchmark.load")


DROPPED_FRAGMENT = DroppedFragment()


@dataclass(frozen=True, slots=True)
class GoldProperty:
    """A ground-truth condition with its answer and the fragment numbers (1-based) citing it."""

    condition: str
    answer: str
    fragments: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CondAmbigQuestion:
    id: str
    question: str
    fragments: tuple[Fragment, ...]
    properties: tuple[GoldProperty, ...]

    def to_dict(self) -> dict:
        return asdict(self)

    def without_fragment_text(self) -> CondAmbigQuestion:
        """The question as judge-free scoring needs it: as many fragments, none of their
        text (:class:`DroppedFragment`)."""
        return replace(self, fragments=(DROPPED_FRAGMENT,) * len(self.fragments))

    @classmethod
    def from_dict(cls, data: dict) -> CondAmbigQuestion:
        return cls(
            id=str(data["id"]),
            question=data["question"],
            fragments=tuple(Fragment(**f) for f in data["fragments"]),
            properties=tuple(
                GoldProperty(p["condition"], p["answer"], tuple(p["fragments"]))
                for p in data["properties"]
            ),
        )
