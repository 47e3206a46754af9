"""The Markdown report: per benchmark and task, our runs beside the papers' numbers.

Per task three tables: *Compared with the paper* (one row per run and paper metric: ours,
its standard error where the framework gives one, the matched paper model's number and
Δ = ours − paper, on the same scale), *The paper's rows* (every published number for the
task, ``*`` = not the same quantity, never subtracted) and *All metrics of our runs*. Column
headers name the scale: ``(0–1)``, ``(%)`` or ``(count)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from condambig_tasks import registry
from condambig_tasks.report.paper import PaperData, PaperEntry
from condambig_tasks.report.scales import FRACTION, PERCENT, format_value, header, metric_scale
from condambig_tasks.report.sections import Section, framework_label
from condambig_tasks.run_logs import RunResults

NOT_SAME = "*"


def render_report(inputs: RunResults, sections: Sequence[Section], data: PaperData,
                  figures: Mapping[str, Path], skipped_figures: Mapping[str, str],
                  report_dir: Path, title: str = "condambig report") -> str:
    """The whole report; ``figures`` maps a benchmark to its PNG, ``skipped_figures`` to
    why it has none."""
    runs = [run for section in sections for run in section.runs]
    models = list(dict.fromkeys(run.model for run in runs))
    lines = [f"# {title}", "",
             f"{len(runs)} runs of {len(models)} models on {len(sections)} tasks. "
             "Δ = ours − paper, on the scale named in each column header; ± is the standard "
             "error the framework reports (lm-eval gives none for these tasks' aggregations). "
             "Paper numbers come from `condambig_tasks/<benchmark>/paper_numbers.yaml`, each with its "
             "table, section and page (where the papers' text marks one).", ""]
    by_benchmark: dict[str, list[Section]] = {}
    for section in sections:
        by_benchmark.setdefault(section.benchmark, []).append(section)
    for benchmark, benchmark_sections in by_benchmark.items():
        lines += _benchmark_block(benchmark, benchmark_sections, data, figures,
                                  skipped_figures, report_dir)
    absent = [_title(name) for name in registry.available() if name not in by_benchmark]
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
                     report_dir: Path) -> list[str]:
    lines = [f"## {_title(benchmark)}", ""]
    if benchmark in data.papers:
        lines += [f"Paper: {data.papers[benchmark]}.", ""]
    for section in sections:
        lines += _section_block(section, data)
    if benchmark in figures:
        relative = _relative(figures[benchmark], report_dir)
        lines += [f"![{_title(benchmark)}]({relative})", ""]
    elif benchmark in skipped:
        lines += [f"No figure: {skipped[benchmark]}.", ""]
    return lines


def _section_block(section: Section, data: PaperData) -> list[str]:
    lines = [f"### Task `{section.variant.task}`", ""]
    if section.paper:
        lines += comparison_table(section) + [""]
        lines += paper_rows_table(section) + [""]
    else:
        lines += ["The papers publish no number for this task.", ""]
    lines += [f"All metrics of our runs ({len(section.runs)}):", ""]
    lines += all_metrics_table(section) + [""]
    lines += _notes(section, data)
    return lines


def comparison_table(section: Section) -> list[str]:
    """Run × paper metric: ours, ±, the matched paper model's number, Δ."""
    metrics = list(dict.fromkeys(e.metric for e in section.paper if e.comparable))
    if not metrics:
        return ["Compared with the paper: none of the paper's numbers for this task is the same "
                "quantity as ours (see the paper's rows and notes)."]
    with_stderr = any(run.stderr.get(m) is not None for run in section.runs for m in metrics)
    columns = ["Model", "Run", "n", "Paper model", "Metric", "Ours"]
    columns += ["±"] if with_stderr else []
    columns += ["Paper", "Δ (ours − paper)", "Paper source"]
    rows = []
    for run, paper_model in zip(section.runs, section.matched, strict=True):
        for metric in metrics:
            entry = section.paper_value(paper_model, metric)
            ours = run.metrics.get(metric)
            delta = ours - entry.value if entry is not None and ours is not None else None
            row = [run.model, framework_label(run), _count(run.n), paper_model or "—",
                   header(section.benchmark, metric), format_value(ours, section.benchmark, metric)]
            if with_stderr:
                row.append(format_value(run.stderr.get(metric), section.benchmark, metric))
            row += [paper_text(entry) if entry else "—",
                    format_value(delta, section.benchmark, metric, signed=True),
                    entry.where if entry else "—"]
            rows.append(row)
    return ["Compared with the paper:", "", *_table(columns, rows)]


def paper_rows_table(section: Section) -> list[str]:
    """Every published number for the task: one row per paper model and table."""
    metrics = list(dict.fromkeys(e.metric for e in section.paper))
    keys = list(dict.fromkeys((e.model, e.table) for e in section.paper))
    columns = ["Paper model", *(header(section.benchmark, m) for m in metrics), "Source"]
    rows = []
    for model, table in keys:
        entries = [e for e in section.paper if e.model == model and e.table == table]
        cells = []
        for metric in metrics:
            entry = next((e for e in entries if e.metric == metric), None)
            cells.append("—" if entry is None else
                         paper_text(entry) + ("" if entry.comparable else NOT_SAME))
        rows.append([model, *cells, entries[0].where])
    return ["The paper's rows:", "", *_table(columns, rows)]


def all_metrics_table(section: Section) -> list[str]:
    """Every metric of every run (``value ± stderr`` where a standard error is given)."""
    metrics = section.metrics()
    columns = ["Model", "Run", "n", *(header(section.benchmark, m) for m in metrics)]
    rows = []
    for run in section.runs:
        cells = []
        for metric in metrics:
            text = format_value(run.metrics.get(metric), section.benchmark, metric)
            stderr = run.stderr.get(metric)
            if stderr is not None:
                text += f" ± {format_value(stderr, section.benchmark, metric)}"
            cells.append(text)
        rows.append([run.model, framework_label(run), _count(run.n), *cells])
    return _table(columns, rows)


def _notes(section: Section, data: PaperData) -> list[str]:
    if not section.paper:
        return []
    lines = []
    splits = list(dict.fromkeys(e.split for e in section.paper))
    lines += [f"- Paper split: {data.splits.get(key, key)}." for key in splits]
    if any(not e.comparable for e in section.paper):
        lines.append(f"- {NOT_SAME} not the same quantity as our metric: shown for context, "
                     "no Δ.")
    unmatched = sorted({run.model for run, model in zip(section.runs, section.matched, strict=True)
                        if model is None})
    if unmatched:
        lines.append("- No paper model matched " + ", ".join(f"`{m}`" for m in unmatched)
                     + " (name one with `--paper-model OURS=PAPER`).")
    for key in dict.fromkeys(e.note for e in section.paper if e.note):
        lines.append(f"- {data.notes.get(key, key)}")
    return ["Notes:", "", *lines, ""]


def _sources(sections: Sequence[Section]) -> list[str]:
    columns = ["Model", "Run", "Task", "n", "Options", "Judge", "File"]
    rows = []
    for section in sections:
        for run in section.runs:
            options = ", ".join(f"{k}={v}" for k, v in sorted(run.options.items())
                                if v is not None)
            rows.append([run.model, framework_label(run), f"`{run.task}`", _count(run.n),
                         options or "—", run.judge or "—", str(run.source)])
    return ["## Sources", "", *_table(columns, rows), ""]


def _table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(_cell(c) for c in columns) + " |",
             "|" + "|".join(" --- " for _ in columns) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def paper_text(entry: PaperEntry) -> str:
    """A paper's number on our scale with the digits it was printed with: 19.0 (percent) for
    a 0-1 metric -> ``0.190``, 41.7 for a percent metric -> ``41.7``, +1.01 -> ``1.01``."""
    digits = len(entry.printed.partition(".")[2])
    if metric_scale(entry.benchmark, entry.metric) == FRACTION and entry.scale == PERCENT:
        digits += 2
    return f"{entry.value:.{digits}f}"


def _count(n: int | None) -> str:
    return "—" if n is None else str(n)


def _title(benchmark: str) -> str:
    try:
        return registry.get(benchmark).title
    except Exception:
        return benchmark


def _relative(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()
