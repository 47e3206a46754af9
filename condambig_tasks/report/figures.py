"""PNG figures in the spirit of the papers' own: our runs beside the papers' models.

Everything a figure shows comes from the benchmark's spec: one figure per benchmark (its
``title``), one panel per variant that some run has (its task name and description) and,
within a variant, per ``MetricSpec.figure`` panel name and scale; the groups are the
variant's active metrics marked ``plot``, the bars are our runs and the paper's models
(hatched) with a comparable number for them. A run's bar carries its 95 % interval as an
error bar where it has one (``report.stats``: the bootstrap's, the run's own, else ±1.96
standard errors).

Headless: matplotlib's Agg backend, a fixed size (``WIDTH_PX`` × ``HEIGHT_PX``). A zero is
drawn as a bar labelled ``0``, a metric a run does not report as an ``n/a`` slot, so that the
two never look alike; a benchmark whose runs report no plotted metric gets no figure (the
report says why).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from condambig_tasks import registry
from condambig_tasks.errors import ConfigurationError
from condambig_tasks.report.scales import AXIS_LABELS, spec_scale
from condambig_tasks.report.sections import Section, by_benchmark, run_names

DPI = 100
WIDTH_PX, HEIGHT_PX = 1000, 500
PAPER_HATCH = "//"
MISSING = "n/a"
TITLE_WIDTH = 60  # characters per line of a panel title (two lines at most)


@dataclass(frozen=True)
class Bars:
    """One bar series: a label, one value per group (None: no value), hatched when a
    paper's; a run's series (not ``paper``) shows its missing values as such."""

    label: str
    values: Sequence[float | None]
    paper: bool = False
    intervals: Sequence[tuple[float, float] | None] = ()  # per group: the 95 % interval


@dataclass(frozen=True)
class Panel:
    title: str
    groups: Sequence[str]
    series: Sequence[Bars]
    ylabel: str


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ConfigurationError(
            "figures need matplotlib: pip install 'condambig[report]' (or pass --no-figures)"
        ) from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def compose(title: str, panels: Sequence[Panel]):
    """Grouped bars, one subplot per panel, laid out at WIDTH_PX × HEIGHT_PX and titles
    fitted; one legend entry and one colour per series label across the panels."""
    plt = _pyplot()
    columns = min(len(panels), 2)
    rows = (len(panels) + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(WIDTH_PX / DPI, HEIGHT_PX / DPI),
                                dpi=DPI, layout="constrained", squeeze=False)
    # our runs in saturated colours, the papers' models in pale ones (and hatched), so that
    # no run shares a hue with a paper model beside it
    labels = list(dict.fromkeys(s.label for panel in panels for s in panel.series))
    paper = {s.label for panel in panels for s in panel.series if s.paper}
    colours = {}
    for group, palette in ((False, plt.get_cmap("tab10").colors),
                           (True, plt.get_cmap("Pastel1").colors)):
        members = [label for label in labels if (label in paper) == group]
        colours.update({label: palette[i % len(palette)] for i, label in enumerate(members)})
    handles: dict[str, object] = {}  # per label, its first bars (every series draws some)
    cells = list(axes.flat)
    for axis, panel in zip(cells, panels, strict=False):
        _draw_panel(axis, panel, colours, handles)
    for axis in cells[len(panels):]:
        axis.set_visible(False)
    figure.suptitle(title, fontsize=10)
    key = f"hatched: the paper\n{MISSING}: not reported by the run" + (
        "\nerror bars: 95 % interval"
        if any(any(s.intervals) for panel in panels for s in panel.series) else "")
    figure.legend([handles[label] for label in labels], labels, loc="outside right upper",
                  fontsize=7, title=key, title_fontsize=7, alignment="left")
    _fit_titles(figure, cells[:len(panels)])
    return figure


def _fit_titles(figure, axes: Sequence[object], rounds: int = 3) -> None:
    """Rewrap each panel title to its axis' width once the legend has taken its room (a
    title wider than its axis runs under the legend or off the figure)."""
    for _ in range(rounds):
        figure.canvas.draw()  # lays the figure out (constrained layout) at its final size
        renderer = figure.canvas.get_renderer()
        changed = False
        for axis in axes:
            text = axis.title.get_text()
            wide = axis.title.get_window_extent(renderer).width
            room = axis.get_window_extent(renderer).width
            if not text or wide <= room:
                continue
            longest = max(len(line) for line in text.splitlines())
            axis.set_title(textwrap.fill(" ".join(text.split()),
                                         max(12, int(longest * room / wide) - 1)),
                           fontsize=axis.title.get_fontsize())
            changed = True
        if not changed:
            return


def _draw_panel(axis, panel: Panel, colours: Mapping[str, object],
                handles: dict[str, object]) -> None:
    # per group, the series that have a slot there (a value, or a run's missing value)
    # share the group's width, centred
    slots = [[n for n, series in enumerate(panel.series)
              if series.values[g] is not None or not series.paper]
             for g in range(len(panel.groups))]
    width = 0.8 / max([len(s) for s in slots] + [1])
    top = max([abs(v) for s in panel.series for v in s.values if v is not None]
              + [abs(x) for s in panel.series for i in s.intervals if i for x in i] + [1e-9])
    for number, series in enumerate(panel.series):
        placed = [g for g in range(len(panel.groups)) if number in slots[g]]
        # the centre of the series' bar among the group's slots
        positions = [g + (slots[g].index(number) - (len(slots[g]) - 1) / 2) * width
                     for g in placed]
        bars = axis.bar(positions, [series.values[g] or 0.0 for g in placed], width,
                        color=colours[series.label], edgecolor="black", linewidth=0.4,
                        label=series.label, hatch=PAPER_HATCH if series.paper else None)
        handles.setdefault(series.label, bars)
        _error_bars(axis, series, placed, positions)
        for x, g in zip(positions, placed, strict=True):
            value = series.values[g]
            if value is None:
                axis.text(x, 0, MISSING, ha="center", va="bottom", fontsize=6, rotation=90,
                          color="dimgray")
            elif value == 0:
                axis.text(x, top * 0.01, "0", ha="center", va="bottom", fontsize=6)
    crowded = len(panel.groups) > 3 or any(len(group) > 14 for group in panel.groups)
    axis.set_xticks(range(len(panel.groups)), panel.groups, fontsize=7 if crowded else 8,
                    rotation=20 if crowded else 0, ha="right" if crowded else "center",
                    rotation_mode="anchor")
    axis.set_title(panel.title, fontsize=8)
    axis.set_ylabel(panel.ylabel, fontsize=8)
    axis.axhline(0, color="black", linewidth=0.6)
    axis.grid(axis="y", alpha=0.3)


# ---------------------------------------------------------------------- from the spec


def section_panels(section: Section) -> list[Panel]:
    """The panels of one variant: its plotted metrics that some run reports, by
    ``MetricSpec.figure`` and scale; our runs and the paper's comparable numbers."""
    benchmark = registry.get(section.benchmark)
    try:
        options = benchmark.options(dict(section.variant.options), strict=False)
        active = benchmark.active_metrics(options, judged=True)
    except ConfigurationError:
        active = list(benchmark.metric_specs)
    reported = {name for run in section.runs for name, value in run.metrics.items()
                if value is not None}
    panels: dict[tuple[str | None, str], list[str]] = {}  # in the spec's order
    for spec in active:
        if spec.plot:
            metrics = panels.setdefault((spec.figure, spec_scale(spec)), [])
            metrics += [spec.name] if spec.name in reported else []
    labels = run_names(section.runs, short=True)
    intervals = [estimates.ci95 for estimates in section.uncertainty] or \
        [{} for _ in section.runs]
    result = []
    for (name, scale), metrics in panels.items():
        if not metrics:
            continue
        ours = [Bars(label, [run.metrics.get(m) for m in metrics],
                     intervals=[ci95.get(m) for m in metrics])
                for label, run, ci95 in zip(labels, section.runs, intervals, strict=True)]
        paper_models = dict.fromkeys(entry.model for entry in section.paper
                                     if entry.comparable and entry.metric in metrics)
        series = ours + [Bars(f"{model} (paper)", [
            entry and entry.value for entry in (section.paper_value(model, m) for m in metrics)
        ], paper=True) for model in paper_models]
        heading = " — ".join(filter(None, [
            name, f"{section.variant.task}: {section.variant.description}"]))
        result.append(Panel(textwrap.fill(textwrap.shorten(heading, 2 * TITLE_WIDTH,
                                                           placeholder=" …"), TITLE_WIDTH),
                            metrics, series, AXIS_LABELS[scale]))
    return result


def make_figures(sections: Sequence[Section], folder: Path) -> tuple[dict[str, Path],
                                                                     dict[str, str]]:
    """A figure per benchmark in the inputs whose runs report a plotted metric: benchmark
    -> PNG, and benchmark -> why it has none."""
    made, skipped = {}, {}
    for name, benchmark_sections in by_benchmark(sections).items():
        benchmark = registry.get(name)
        panels = [panel for section in benchmark_sections for panel in section_panels(section)]
        if panels:
            figure = compose(benchmark.title, panels)
            folder.mkdir(parents=True, exist_ok=True)
            made[name] = folder / f"{name}.png"
            figure.savefig(made[name], dpi=DPI)
            _pyplot().close(figure)
        else:
            plotted = ", ".join(spec.name for spec in benchmark.metric_specs if spec.plot)
            skipped[name] = (f"no run reports a metric the {benchmark.title} figure draws "
                             f"({textwrap.shorten(plotted, 100, placeholder=' …') or 'none'})")
    return made, skipped


def _error_bars(axis, series: Bars, placed: Sequence[int],
                positions: Sequence[float]) -> None:
    """The 95 % interval of each of the series' values that has one."""
    points = [(x, series.values[g], series.intervals[g]) for x, g in
              zip(positions, placed, strict=True) if series.intervals
              and series.intervals[g] is not None and series.values[g] is not None]
    if not points:
        return
    xs, ys, intervals = zip(*points, strict=True)
    below = [max(y - low, 0.0) for y, (low, _) in zip(ys, intervals, strict=True)]
    above = [max(high - y, 0.0) for y, (_, high) in zip(ys, intervals, strict=True)]
    axis.errorbar(xs, ys, yerr=[below, above], fmt="none", ecolor="black", elinewidth=0.8,
                  capsize=2)
