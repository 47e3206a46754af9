"""The Markdown report: per benchmark and task, our runs beside the papers' numbers.

Per task: *Compared with the paper* (one row per run and paper metric that both have a
number for: ours ± its standard error, the matched paper model's number and Δ = ours −
paper, on the same scale; the paper metrics no run has a value for are listed once below
it), *The paper's rows* (every published number for the task, ``*`` = not the same
quantity, never subtracted), *All metrics of our runs* (value ± standard error) and, with
two or more runs, *Paired comparison* (Δ headline B − A, its 95 % interval and p-value per
pair of runs). Column headers name the scale: ``(0–1)``, ``(%)`` or ``(count)``. Runs that
would print as the same row are told apart (:func:`~condambig_tasks.report.sections.row_heads`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from condambig_tasks import registry
from condambig_tasks.errors import ConfigurationError
from condambig_tasks.report.paper import PaperData, PaperEntry, short_model_name
from condambig_tasks.report.scales import FRACTION, PERCENT, format_value, header, metric_scale
from condambig_tasks.report.sections import Section, by_benchmark, row_heads, run_names
from condambig_tasks.report.stats import COMPUTED, NORMAL, Settings
from condambig_tasks.run_logs import CLI, RunResults
from condambig_tasks.uncertainty import Comparison

NOT_SAME = "*"
COMPUTED_MARK = "†"  # a standard error computed here from the run's per-sample scores


def render_report(inputs: RunResults, sections: Sequence[Section], data: PaperData,
                  figures: Mapping[str, Path], skipped_figures: Mapping[str, str],
                  report_dir: Path, title: str = "condambig report",
                  settings: Settings | None = None) -> str:
    """The whole report; ``figures`` maps a benchmark to its PNG, ``skipped_figures`` to
    why it has none."""
    runs = [run for section in sections for run in section.runs]
    # one model run through several front ends is one model: lm-eval names it by its path,
    # Inspect by provider/path, a served copy by the server's name for it
    models = list(dict.fromkeys(short_model_name(run.model) for run in runs))
    lines = [f"# {title}", "",
             f"{len(runs)} runs of {len(models)} model{'s' * (len(models) != 1)} (by the last "
             f"part of the model's name) on {len(sections)} tasks. "
             "Δ = ours − paper, on the scale named in each column header. ± is a standard "
             "error: the one the framework reported, or, marked "
             f"{COMPUTED_MARK}, computed here from the run's per-sample scores"
             + (f" ({settings.resamples} bootstrap resamples, seed {settings.seed})"
                if settings else "") + ". Paper numbers come from `condambig_tasks/<benchmark>/paper_numbers.yaml`, each with its "
             "table, section and page (where the papers' text marks one).", ""]
    grouped = by_benchmark(sections)
    for benchmark, benchmark_sections in grouped.items():
        lines += _benchmark_block(benchmark, benchmark_sections, data, figures,
                                  skipped_figures, report_dir, settings)
    absent = [registry.get(name).title for name in registry.available() if name not in grouped]
    if absent:
        lines += ["## Not in the inputs", "",
                  f"No input has {', '.join(absent)}: no table and no figure for "
                  f"{'it' if len(absent) == 1 else 'them'}.", ""]
    lines += _sources(sections)
    if inputs.notices:
        lines += ["## Skipped", "", *(f"- {notice}" for notice in inputs.notices), ""]
    return "\n".join(lines).rstrip() + "\n"


def _benchmark_block(benchmark: str, sections: Sequence[Section], data: PaperData,
                     figures: Mapping[str, Path], skipped: Mapping[str, str],
                     report_dir: Path, settings: Settings | None) -> list[str]:
    lines = [f"## {registry.get(benchmark).title}", ""]
    if benchmark in data.papers:
        lines += [f"Paper: {data.papers[benchmark]}.", ""]
    for section in sections:
        lines += _section_block(section, data, settings)
    if benchmark in figures:
        lines += [f"![{registry.get(benchmark).title}]"
                  f"({_relative(figures[benchmark], report_dir)})", ""]
    elif benchmark in skipped:
        lines += [f"No figure: {skipped[benchmark]}.", ""]
    return lines


def _section_block(section: Section, data: PaperData,
                   settings: Settings | None = None) -> list[str]:
    lines = [f"### Task `{section.variant.task}`", ""]
    if section.paper:
        lines += [*comparison_table(section), "", *paper_rows_table(section), ""]
    else:
        lines += ["The papers publish no number for this task.", ""]
    lines += [f"All metrics of our runs ({len(section.runs)}):", "", *all_metrics_table(section),
              ""]
    if len(section.runs) > 1:
        lines += paired_table(section, settings) + [""]
    lines += _notes(section, data)
    return lines


def comparison_table(section: Section) -> list[str]:
    """Run × paper metric, where both have a number: ours ± se, the matched paper model's
    number, Δ; below it, once, the paper metrics no run has a value for."""
    metrics = list(dict.fromkeys(e.metric for e in section.paper if e.comparable))
    if not metrics:
        return ["Compared with the paper: none of the paper's numbers for this task is the same "
                "quantity as ours (see the paper's rows and notes)."]
    columns = ["Model", "Run", "n", "Paper model", "Metric", "Ours", "Paper",
               "Δ (ours − paper)", "Paper source"]
    heads = row_heads(section.runs)
    rows = []
    for index, (run, paper_model) in enumerate(zip(section.runs, section.matched, strict=True)):
        for metric in metrics:
            entry = section.paper_value(paper_model, metric)
            ours = run.metrics.get(metric)
            if entry is None or ours is None:
                continue
            rows.append([*heads[index], paper_model, header(section.benchmark, metric),
                         value_cell(section, index, metric), paper_text(entry),
                         format_value(ours - entry.value, section.benchmark, metric,
                                      signed=True), entry.where])
    # a metric the runs report but no matched paper model has is not "without a run value"
    rest = [m for m in metrics if all(run.metrics.get(m) is None for run in section.runs)]
    lines = ["Compared with the paper:", ""]
    lines += markdown_table(columns, rows) if rows else [
        "No run has a value for a metric of a paper model it is matched with (see the notes)."]
    if rest:
        lines += ["", "Paper metrics with no run value to compare: "
                  + ", ".join(f"`{m}`" for m in rest) + " (their numbers are in the paper's rows)."]
    return lines


def value_cell(section: Section, index: int, metric: str) -> str:
    """``value ± se`` of one run's metric (``†``: the se computed from per-sample scores)."""
    run = section.runs[index]
    text = format_value(run.metrics.get(metric), section.benchmark, metric)
    estimates = section.uncertainty[index] if section.uncertainty else None
    if estimates is None or metric not in estimates.stderr or run.metrics.get(metric) is None:
        return text
    mark = COMPUTED_MARK if estimates.source[metric] == COMPUTED else ""
    return f"{text} ± {format_value(estimates.stderr[metric], section.benchmark, metric)}{mark}"


def paper_rows_table(section: Section) -> list[str]:
    """Every published number for the task: one row per paper model and table."""
    metrics = list(dict.fromkeys(e.metric for e in section.paper))
    columns = ["Paper model", *(header(section.benchmark, m) for m in metrics), "Source"]
    found: dict[tuple[str, str], dict[str, PaperEntry]] = {}  # (model, table): metric -> first
    for entry in section.paper:
        found.setdefault((entry.model, entry.table), {}).setdefault(entry.metric, entry)
    rows = []
    for (model, _), entries in found.items():
        cells = ["—" if metric not in entries else paper_text(entries[metric])
                 + ("" if entries[metric].comparable else NOT_SAME) for metric in metrics]
        rows.append([model, *cells, next(iter(entries.values())).where])
    return ["The paper's rows:", "", *markdown_table(columns, rows)]


def all_metrics_table(section: Section) -> list[str]:
    """Every metric of every run, ``value ± se`` where there is a standard error."""
    metrics = section.metrics()
    columns = ["Model", "Run", "n", *(header(section.benchmark, m) for m in metrics)]
    rows = [[*head, *(value_cell(section, index, metric) for metric in metrics)]
            for index, head in enumerate(row_heads(section.runs))]
    return markdown_table(columns, rows)


def paired_table(section: Section, settings: Settings | None) -> list[str]:
    """Per pair of runs (A before B): Δ headline = B − A, its 95 % interval and p-value."""
    if not section.pairs:
        return ["Paired comparison: not computed (--bootstrap-resamples 0)."]
    names = run_names(section.runs)
    columns = ["A", "B", "Metric", "Δ (B − A)", "95 % interval", "p-value", "Items"]
    rows = []
    for pair in section.pairs:
        row = [names[pair.a], names[pair.b]]
        comparison = pair.comparison
        if comparison is None:
            rows.append(row + [pair.metric and header(section.benchmark, pair.metric) or "—",
                               "—", "—", "—", pair.reason or "—"])
            continue
        metric = comparison.metric
        value = functools.partial(format_value, benchmark=section.benchmark, metric=metric)
        interval = ("—" if comparison.ci95_low is None else
                    f"[{value(comparison.ci95_low, signed=True)}, {value(comparison.ci95_high, signed=True)}]")
        items = (f"paired ({comparison.shared_units} "
                 f"{registry.get(section.benchmark).resampling_unit}s)" if comparison.paired
                 else f"unpaired (different item sets: {comparison.units_a}, "
                      f"{comparison.units_b})")
        rows.append(row + [header(section.benchmark, metric), value(comparison.delta, signed=True),
                           interval, p_value_text(comparison), items])
    resamples = f", {settings.resamples} resamples, seed {settings.seed}" if settings else ""
    return [f"Paired comparison, {section.pairing or 'every pair of runs'} (bootstrap of the "
            f"{registry.get(section.benchmark).resampling_unit}s{resamples}; paired when both "
            "runs scored the same items):", "", *markdown_table(columns, rows)]


def p_value_text(comparison: Comparison) -> str:
    """The p-value as printed. At the bootstrap's floor 2/(R + 1), R the defined resamples
    (none fell on the other side of 0), only an upper bound is known: "< floor", the floor
    rounded up to three decimals ("< 0.002" for 1,000), not a number that looks exact."""
    if comparison.p_value is None:
        return "—"
    floor = 2 / (comparison.resamples - comparison.undefined_resamples + 1)
    if comparison.p_value <= floor * (1 + 1e-9):
        return f"< {math.ceil(floor * 1000 - 1e-9) / 1000:.3f}"
    return f"{comparison.p_value:.3f}"


def _notes(section: Section, data: PaperData) -> list[str]:
    lines = _paper_notes(section, data) + data_notes(section) + uncertainty_notes(section)
    lines += [f"- {note}" for run in section.runs for note in run.notes]
    return ["Notes:", "", *lines, ""] if lines else []


def data_notes(section: Section) -> list[str]:
    """The runs that read fewer or other records than the full split their options name
    (a local file of another release, a partial copy): said once per kind of data, with
    the runs, so that an option such as ``release=2k`` is not taken for the data read."""
    benchmark = registry.get(section.benchmark)
    groups: dict[tuple, list[str]] = {}
    for run, name in zip(section.runs, run_names(section.runs), strict=True):
        if run.data_records is None:
            continue
        try:
            expected = benchmark.expected_size(benchmark.options(dict(run.options),
                                                                 strict=False))
        except ConfigurationError:
            continue
        if expected is not None and expected != run.data_records:
            groups.setdefault((run.data_records, run.data_sources, expected), []).append(name)
    lines = []
    for (records, sources, expected), names in groups.items():
        read = f"{records:,} records" + (f" ({', '.join(sources)})" if sources else "")
        lines.append(f"- Data: {', '.join(names)} read {read}, not the {expected:,} of the "
                     "full split its options name: its numbers are on the data it read.")
    return lines


def uncertainty_notes(section: Section) -> list[str]:
    """Where each run's ± comes from, and why a run has none."""
    lines = []
    unit = registry.get(section.benchmark).resampling_unit
    for run, name, estimates in zip(section.runs, run_names(section.runs),
                                    section.uncertainty, strict=False):
        sources = set(estimates.source.values())
        if COMPUTED in sources:
            lines.append(f"- ± of {name}: {COMPUTED_MARK} computed from its per-sample scores "
                         "(a mean's cluster-robust standard error, else the bootstrap over "
                         f"{unit}s)" + ("; unmarked: the framework's own" if len(sources) > 1
                                        else "") + ".")
        elif sources:
            lines.append(f"- ± of {name}: the framework's own standard error.")
        lacking = len(estimates.source) < sum(v is not None for v in run.metrics.values())
        if estimates.scored is not None and estimates.samples is None:
            lines.append(f"- No per-sample scores for {name}: {estimates.scored.reason}"
                         + ("; no ± where the framework gave none." if lacking else "."))
        elif estimates.scored is not None and lacking and not sources:
            lines.append(f"- No ± for {name}: its {estimates.samples} samples fall in "
                         f"{estimates.units} {unit}(s); a standard error needs two or more.")
        if any(kind == NORMAL for kind in estimates.interval.values()):
            lines.append(f"- Error bars of {name}: ±1.96 standard errors (no per-sample "
                         "scores to take a bootstrap interval from).")
    return lines


def _paper_notes(section: Section, data: PaperData) -> list[str]:
    if not section.paper:
        return []
    lines = [f"- Paper split: {data.splits.get(key, key)}."
             for key in dict.fromkeys(e.split for e in section.paper)]
    if any(not e.comparable for e in section.paper):
        lines.append(f"- {NOT_SAME} not the same quantity as our metric: shown for context, "
                     "no Δ.")
    unmatched = sorted({run.model for run, model in zip(section.runs, section.matched, strict=True)
                        if model is None})
    if unmatched:
        lines.append("- No paper model matched " + ", ".join(f"`{m}`" for m in unmatched)
                     + " (name one with `--paper-model OURS=PAPER`).")
    return lines + [f"- {data.notes.get(key, key)}"
                    for key in dict.fromkeys(e.note for e in section.paper if e.note)]


def _sources(sections: Sequence[Section]) -> list[str]:
    columns = ["Model", "Run", "Task", "n", "Options", "Judge", "File"]
    rows = []
    for section in sections:
        for run, (model, label, n) in zip(section.runs, row_heads(section.runs), strict=True):
            options = ", ".join(f"{k}={v}" for k, v in sorted(run.options.items())
                                if v is not None)
            source = str(run.source) + (f" + {run.per_sample}" if run.per_sample
                                        and run.per_sample != run.source
                                        and run.framework == CLI else "")
            rows.append([model, label, f"`{run.task}`", n, options or "—", run.judge or "—",
                         source])
    return ["## Sources", "", *markdown_table(columns, rows), ""]


def markdown_table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """A Markdown table's lines (the report's and the generated docs' tables): each cell's
    white space folded to single spaces, its ``|`` escaped."""
    lines = ["| " + " | ".join(_cell(c) for c in columns) + " |",
             "|" + "|".join(" --- " for _ in columns) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def paper_text(entry: PaperEntry) -> str:
    """A paper's number on our scale with the digits it was printed with: 19.0 (percent) for
    a 0-1 metric -> ``0.190``, 41.7 for a percent metric -> ``41.7``, +1.01 -> ``1.01``."""
    digits = len(entry.printed.partition(".")[2])
    if metric_scale(entry.benchmark, entry.metric) == FRACTION and entry.scale == PERCENT:
        digits += 2
    return f"{entry.value:.{digits}f}"


def _relative(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()
