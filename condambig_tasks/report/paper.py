"""The papers' published numbers and which paper model a run is.

Each benchmark keeps its paper's numbers beside its spec, in
``condambig_tasks/<benchmark>/paper_numbers.yaml`` (a benchmark without the file has none):
every number carries its table, section and page, our metric name and the task (variant)
it belongs to, already on our metric's scale; ``comparable: false`` marks numbers shown for
context that are not the same quantity as ours.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from condambig_tasks import registry
from condambig_tasks.benchmark import Benchmark, Variant, find_variant
from condambig_tasks.errors import ConfigurationError

FILE_NAME = "paper_numbers.yaml"
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


def same_or_narrower(benchmark: str, section: Variant, paper_task: str) -> bool:
    """Whether a paper number recorded for ``paper_task`` applies to runs of ``section``
    (e.g. Table 2 of CondAmbigQA, recorded for ``condambigqa``, also applies to
    ``condambigqa_paper``: the same setting, the paper's judge rule)."""
    if section.task == paper_task:
        return True
    try:
        known = find_variant(registry.get(benchmark), paper_task)
    except (ConfigurationError, KeyError):
        return False
    return bool(known.options) and known.accepts(section.options)


def paper_file(benchmark: Benchmark) -> Path:
    """Where a benchmark keeps its paper's numbers: beside its spec's module."""
    return Path(sys.modules[type(benchmark).__module__].__file__).with_name(FILE_NAME)


@cache
def load_paper_data() -> PaperData:
    """Every registered benchmark's paper numbers (those with a file)."""
    entries: list[PaperEntry] = []
    papers, splits, notes, aliases = {}, {}, {}, {}
    for name in registry.available():
        path = paper_file(registry.get(name))
        if not path.is_file():
            continue
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        entries += [PaperEntry(**{**entry, "benchmark": name,
                                  "page": None if entry.get("page") is None
                                  else str(entry["page"])}) for entry in raw["entries"]]
        papers[name] = registry.get(name).catalogue.paper.cite
        splits.update(raw.get("splits") or {})
        notes.update({k: " ".join(str(v).split()) for k, v in (raw.get("notes") or {}).items()})
        for model, names in (raw.get("models") or {}).items():
            aliases[model] = tuple(dict.fromkeys(
                [*aliases.get(model, ()), *(str(n).lower() for n in names)]))
    return PaperData(entries=tuple(entries), papers=papers, splits=splits, notes=notes,
                     aliases=aliases)


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


