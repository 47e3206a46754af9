"""Runs grouped by task variant, each with the paper numbers that apply and, per run, the
paper model it is (what the tables and the figures both need)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from condambig_tasks import registry
from condambig_tasks.benchmark import Variant
from condambig_tasks.report.paper import PaperData, PaperEntry, paper_model_for, same_or_narrower
from condambig_tasks.run_logs import CLI, INSPECT, LM_EVAL, RunResult

# how the report names the framework a run came from
FRAMEWORK_LABELS = {LM_EVAL: "lm-eval", INSPECT: "Inspect", CLI: "condambig-score"}


@dataclass
class Section:
    benchmark: str
    variant: Variant
    runs: list[RunResult] = field(default_factory=list)
    paper: list[PaperEntry] = field(default_factory=list)
    matched: list[str | None] = field(default_factory=list)  # per run: its paper model
    # per run: its standard errors and intervals; the pairs of runs compared (report.stats)
    uncertainty: list[Any] = field(default_factory=list)
    pairs: list[Any] = field(default_factory=list)
    pairing: str = ""  # how the pairs were chosen (report.stats.pair_plan)

    def paper_value(self, model: str | None, metric: str) -> PaperEntry | None:
        """The comparable paper number of ``model`` for ``metric`` (first in file order)."""
        if model is None:
            return None
        return next((e for e in self.paper if e.model == model and e.metric == metric
                     and e.comparable), None)

    def metrics(self) -> list[str]:
        """Every metric some run reports, in the benchmark's spec order (others after)."""
        order = [spec.name for spec in registry.get(self.benchmark).metric_specs]
        reported = list(dict.fromkeys(name for run in self.runs for name in run.metrics))
        return ([name for name in order if name in reported]
                + [name for name in reported if name not in order])


def build_sections(runs: Sequence[RunResult], data: PaperData,
                   explicit: Mapping[str, Sequence[str]]) -> list[Section]:
    """One section per variant, benchmarks in registry order, variants in spec order."""
    by_task: dict[tuple[str, str], Section] = {}
    for run in runs:
        section = by_task.setdefault((run.benchmark, run.variant.task),
                                     Section(run.benchmark, run.variant))
        section.runs.append(run)
    benchmarks = list(registry.available())
    ordered = sorted(by_task.values(), key=lambda s: (
        benchmarks.index(s.benchmark),
        registry.get(s.benchmark).variants.index(s.variant)
        if s.variant in registry.get(s.benchmark).variants else len(benchmarks),
        s.variant.task))
    for section in ordered:
        # the numbers that apply to runs of the variant, in file order
        section.paper = [e for e in data.entries if e.benchmark == section.benchmark
                         and same_or_narrower(section.benchmark, section.variant, e.task)]
        section.matched = [paper_model_for(run.model, [entry.model for entry in section.paper],
                                           data, explicit) for run in section.runs]
    return ordered


def by_benchmark(sections: Sequence[Section]) -> dict[str, list[Section]]:
    """The sections of each benchmark, in the report's order (a table block, a figure)."""
    grouped: dict[str, list[Section]] = {}
    for section in sections:
        grouped.setdefault(section.benchmark, []).append(section)
    return grouped


def framework_label(run: RunResult) -> str:
    return FRAMEWORK_LABELS.get(run.framework, run.framework)


def run_names(runs: Sequence[RunResult], short: bool = False) -> list[str]:
    """Per run, as the paired table and the notes name it, ``model (framework[, what tells
    it apart])``; ``short``, as a figure labels its bar: ``<model's last path part>
    (framework)[, what tells it apart]``."""
    named = zip(runs, told_apart(runs, lambda run: (run.model, run.framework)), strict=True)
    if short:
        return [with_extra(f"{run.model.strip().rstrip('/').split('/')[-1] or run.model} "
                           f"({framework_label(run)})", extra) for run, extra in named]
    return [f"{run.model} ({with_extra(framework_label(run), extra)})" for run, extra in named]


def row_heads(runs: Sequence[RunResult]) -> list[list[str]]:
    """Per run, what a table row shows before its numbers: model, framework (and what tells
    it from a run with the same model, framework and n), n."""
    extras = told_apart(runs, lambda run: (run.model, run.framework, run.n))
    return [[run.model, with_extra(framework_label(run), extra),
             "—" if run.n is None else str(run.n)]
            for run, extra in zip(runs, extras, strict=True)]


def told_apart(runs: Sequence[RunResult],
               key: Callable[[RunResult], object]) -> list[str]:
    """Per run, what tells it from the runs that share its ``key`` ("" when none does): the
    run date (the same for every task of one lm-eval run, so a figure's panels agree), the
    number of items, the options that differ, else the log file's name."""
    extras = [""] * len(runs)
    groups: dict[object, list[int]] = {}
    for index, run in enumerate(runs):
        groups.setdefault(key(run), []).append(index)
    for members in groups.values():
        if len(members) < 2:
            continue
        group = [runs[i] for i in members]
        differing = sorted({name for run in group for name in run.options
                            if len({repr(other.options.get(name)) for other in group}) > 1})
        for tell in (
                [(run.created or "")[:16].replace("T", " ") for run in group],
                [run.created or "" for run in group],
                [f"n={run.n}" if run.n is not None else "" for run in group],
                [", ".join(f"{name}={run.options.get(name)}" for name in differing)
                 for run in group],
                [run.source.name for run in group],
                [str(run.source) for run in group]):
            if all(tell) and len(set(tell)) == len(tell):
                break
        for index, extra in zip(members, tell, strict=True):
            extras[index] = extra
    return extras


def with_extra(text: str, extra: str) -> str:
    return f"{text}, {extra}" if extra else text
