"""The papers' published numbers (``paper_numbers.yaml``) and which paper model a run is.

Every number carries its table, section and page, our metric name and the lm-eval task it
belongs to, already on our metric's scale; ``comparable: false`` marks numbers shown for
context that are not the same quantity as ours.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from condambig_tasks.errors import ConfigurationError
from condambig_tasks.report.variants import Variant, same_or_narrower

DATA_FILE = Path(__file__).with_name("paper_numbers.yaml")
NO_PAGE = "page not marked in the text"


@dataclass(frozen=True)
class PaperEntry:
    """One published number, on our metric's scale (``value``)."""

    benchmark: str
    task: str
    model: str
    metric: str
    column: str
    printed: str  # as the paper prints it (digits kept): "0.360", "+1.01", "41.7"
    scale: str
    value: float
    table: str
    section: str
    page: str | None
    split: str
    comparable: bool = True
    note: str | None = None

    @property
    def where(self) -> str:
        """``Table 2, §4.1 (table); page not marked in the text``."""
        return f"{self.table}, {self.section}; {f'p. {self.page}' if self.page else NO_PAGE}"


@dataclass(frozen=True)
class PaperData:
    entries: tuple[PaperEntry, ...]
    papers: Mapping[str, str]  # benchmark -> citation
    splits: Mapping[str, str]
    notes: Mapping[str, str]
    aliases: Mapping[str, tuple[str, ...]]  # paper model -> names our runs may carry

    def for_section(self, section: Variant) -> list[PaperEntry]:
        """The numbers that apply to runs of one variant, in file order."""
        return [e for e in self.entries
                if e.benchmark == section.benchmark and same_or_narrower(section, e.task)]


@cache
def load_paper_data(path: Path = DATA_FILE) -> PaperData:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    entries = tuple(PaperEntry(**{**entry, "page": None if entry.get("page") is None
                                  else str(entry["page"])}) for entry in raw["entries"])
    return PaperData(
        entries=entries,
        papers={name: str(paper["cite"]) for name, paper in raw["papers"].items()},
        splits=dict(raw["splits"]), notes={k: " ".join(str(v).split())
                                           for k, v in raw["notes"].items()},
        aliases={model: tuple(str(name).lower() for name in names)
                 for model, names in (raw.get("models") or {}).items()},
    )


def short_model_name(name: str) -> str:
    """``hf/Qwen/Qwen2.5-7B-Instruct`` -> ``qwen2.5-7b-instruct`` (compared in lower case)."""
    return name.strip().rstrip("/").split("/")[-1].lower()


def parse_model_map(pairs: Iterable[str]) -> dict[str, list[str]]:
    """``--paper-model OURS=PAPER`` values (repeatable; one OURS may name a paper model per
    benchmark, e.g. ``LLaMA3.1 (8B)`` and ``Llama 3``)."""
    mapping: dict[str, list[str]] = {}
    for pair in pairs:
        ours, sep, paper = pair.partition("=")
        if not sep or not ours.strip() or not paper.strip():
            raise ConfigurationError(
                f"--paper-model {pair!r}: expected OURS=PAPER, e.g. "
                "--paper-model my-finetune=\"Qwen2.5 (7B)\"")
        mapping.setdefault(ours.strip(), []).append(paper.strip())
    return mapping


def paper_model_for(run_model: str, candidates: Iterable[str], data: PaperData,
                    explicit: Mapping[str, Sequence[str]]) -> str | None:
    """The paper model a run's model is, among the paper models of one section: an explicit
    ``--paper-model`` mapping (by the full or the short name), else the paper model's own
    name or one of its aliases."""
    candidates = list(dict.fromkeys(candidates))
    short = short_model_name(run_model)
    named = [paper for ours, papers in explicit.items()
             if ours == run_model or short_model_name(ours) == short for paper in papers]
    if named:
        return next((paper for paper in named if paper in candidates), None)
    for paper in candidates:
        names = {paper.lower(), *data.aliases.get(paper, ())}
        if short in names or run_model.lower() in names:
            return paper
    return None


