"""The uncertainty of every run's numbers and the comparison of the runs of one task.

Per run and metric, the standard error the framework reported (lm-eval's
``<metric>_stderr``, Inspect's ``stderr``, condambig-score's ``stderr``) or, where it has
none, :func:`condambig_tasks.uncertainty.uncertainty` on the run's per-sample scores
(:func:`condambig_tasks.run_logs.read_scored_samples`); the 95 % interval is that
bootstrap's where there are per-sample scores, the run's own ``ci95``, else the normal
interval ±1.96 standard errors. Per pair of runs of a task, Δ of the headline metric with
:func:`condambig_tasks.uncertainty.compare` (paired on the same units, else unpaired).

Which pairs: a reader uses a run against a baseline or against the run beside it, not
every one of n(n − 1)/2 pairs (10,000 runs: 50 million); so by default each run is
compared with the next one of its task, with ``baseline`` each with the baseline model's
run(s), and every pair only on request (``pairs=ALL``, bounded by :data:`MAX_ALL_PAIRS`).
A run's per-sample scores are held only until its last pair is computed.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from condambig_tasks import registry
from condambig_tasks.benchmark import headline_metric, options_to_json
from condambig_tasks.cli_judge import LoggedJudge, describe
from condambig_tasks.errors import ConfigurationError
from condambig_tasks.report.paper import short_model_name
from condambig_tasks.report.sections import Section
from condambig_tasks.run_logs import (
    RunResult,
    ScoredRun,
    read_scored_samples,
)
from condambig_tasks.uncertainty import Comparison, Units, compare, uncertainty

FRAMEWORK = "framework"  # the run's own standard error
COMPUTED = "computed"  # uncertainty() on the run's per-sample scores
NORMAL = "normal"  # an interval of ±1.96 standard errors (no resamples to take it from)
Z95 = 1.959963984540054
NEIGHBOURS = "neighbours"  # each run against the next run of its task, in the report's order
ALL = "all"  # every pair of runs of a task
PAIRINGS = (NEIGHBOURS, ALL)
MAX_ALL_PAIRS = 20_000  # per task with pairs=ALL (200 runs); beyond it: a baseline


@dataclass
class RunUncertainty:
    """One run's standard errors and 95 % intervals by metric, and where they come from."""

    stderr: dict[str, float] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)  # metric -> FRAMEWORK | COMPUTED
    ci95: dict[str, tuple[float, float]] = field(default_factory=dict)
    interval: dict[str, str] = field(default_factory=dict)  # metric -> COMPUTED | FRAMEWORK | NORMAL
    scored: ScoredRun | None = None  # the per-sample scores (None: not read)
    # how many samples and resampling units those scores had (None: none), kept when the
    # samples themselves are let go once the run's pairs are computed
    samples: int | None = None
    units: int | None = None


@dataclass(frozen=True)
class PairRow:
    """Runs ``a`` and ``b`` (indices into the section's runs): Δ (B − A) of ``metric``,
    or why there is none."""

    a: int
    b: int
    metric: str | None
    comparison: Comparison | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Settings:
    resamples: int
    seed: int
    pairs: str = NEIGHBOURS  # NEIGHBOURS | ALL, when no baseline applies
    baseline: str | None = None  # a model (full or last path part): each run against it


def attach_statistics(sections: Sequence[Section], settings: Settings) -> None:
    """Fill every section's ``uncertainty`` (one per run) and ``pairs``; a run's
    per-sample scores are let go once its last pair is computed."""
    for section in sections:
        plan, section.pairing = pair_plan(section, settings)
        by_later: dict[int, list[tuple[int, int]]] = defaultdict(list)
        last_use = list(range(len(section.runs)))  # the run after which a run is let go
        for pair in plan:  # computed once both runs are read: after the later one
            by_later[max(pair)].append(pair)
            for index in pair:
                last_use[index] = max(last_use[index], *pair)
        rows: dict[tuple[int, int], PairRow] = {}
        section.uncertainty = []
        for index, run in enumerate(section.runs):
            section.uncertainty.append(run_uncertainty(run, settings))
            for a, b in by_later[index]:
                rows[(a, b)] = pair_row(section, a, b, settings)
            for done in {index, *(i for pair in by_later[index] for i in pair)}:
                # the run's per-sample scores let go (their counts kept for the notes)
                scored = section.uncertainty[done].scored
                if last_use[done] == index and scored is not None and scored.samples is not None:
                    section.uncertainty[done].scored = dataclasses.replace(scored, samples=[])
        section.pairs = [rows[pair] for pair in plan]


def pair_plan(section: Section, settings: Settings) -> tuple[list[tuple[int, int]], str]:
    """The pairs (A, B) of the section's runs to compare, and how they were chosen (for
    the table's heading)."""
    count = len(section.runs)
    if not settings.resamples or count < 2:
        return [], ""
    if settings.baseline is not None:
        wanted = short_model_name(settings.baseline)
        bases = [index for index, run in enumerate(section.runs)
                 if run.model == settings.baseline or short_model_name(run.model) == wanted]
        if bases:
            others = [index for index in range(count) if index not in bases]
            return ([(base, other) for base in bases for other in others]
                    + list(itertools.combinations(bases, 2)),
                    f"each run against the baseline {settings.baseline}")
    if settings.pairs == ALL:
        pairs = count * (count - 1) // 2
        if pairs > MAX_ALL_PAIRS:
            raise ConfigurationError(
                f"--pairs all: task {section.variant.task} has {count} runs, {pairs} pairs "
                f"(at most {MAX_ALL_PAIRS}); compare each with a baseline (--baseline MODEL) "
                "or with the next run (--pairs neighbours).")
        return list(itertools.combinations(range(count), 2)), "every pair of runs"
    missing = (f" (no run of the baseline {settings.baseline} here)"
               if settings.baseline is not None else "")
    return [(index, index + 1) for index in range(count - 1)], \
        f"each run against the next one{missing}"


def run_uncertainty(run: RunResult, settings: Settings) -> RunUncertainty:
    # without resamples nothing is computed from per-sample scores: they are not read
    scored = (read_scored_samples(run) if settings.resamples else
              ScoredRun(None, reason="--bootstrap-resamples 0"))
    result = RunUncertainty(scored=scored)
    estimates = {}
    if scored.samples is not None:
        benchmark = registry.get(run.benchmark)
        result.samples = len(scored.samples)
        result.units = len(Units.of(benchmark, scored.samples))
        estimates = uncertainty(benchmark, scored.samples, scored.options, scored.judged,
                                resamples=settings.resamples, seed=settings.seed)
    for name, value in run.metrics.items():
        if value is None:
            continue
        estimate = estimates.get(name)
        if run.stderr.get(name) is not None:
            result.stderr[name], result.source[name] = run.stderr[name], FRAMEWORK
        elif estimate is not None and estimate.stderr is not None:
            result.stderr[name], result.source[name] = estimate.stderr, COMPUTED
        if estimate is not None and estimate.ci95 is not None:
            result.ci95[name], result.interval[name] = tuple(estimate.ci95), COMPUTED
        elif name in run.ci95:
            result.ci95[name], result.interval[name] = run.ci95[name], FRAMEWORK
        elif name in result.stderr:
            half = Z95 * result.stderr[name]
            result.ci95[name], result.interval[name] = (value - half, value + half), NORMAL
    return result


def pair_row(section: Section, a: int, b: int, settings: Settings) -> PairRow:
    """Δ (B − A) of runs ``a`` and ``b``'s headline, or why there is none."""
    benchmark = registry.get(section.benchmark)
    sides = [section.uncertainty[a].scored, section.uncertainty[b].scored]
    missing = [label for label, s in zip("AB", sides, strict=True)
               if s is None or s.samples is None]
    if missing:
        # why, and what to run, is said once per run in the task's notes
        return PairRow(a, b, None, reason="not compared: no per-sample scores for "
                       + " and ".join(missing) + " (see the notes)")
    first, second = sides
    if options_to_json(benchmark, first.options) != options_to_json(benchmark, second.options):
        # one summary rule for both sides: a pair scored with other options is not
        # compared under one run's options
        return PairRow(a, b, None, reason="the runs were scored with different options")
    judges = judge_difference(section.runs[a], section.runs[b])
    if judges is not None:
        return PairRow(a, b, None, reason=judges)
    metric = headline_metric(benchmark, first.options, first.judged)
    other = headline_metric(benchmark, second.options, second.judged)
    if metric is None and other is None:
        return PairRow(a, b, None, reason="not compared: the headline needs a judge and "
                                          "neither run had one")
    if metric != other:
        return PairRow(a, b, None, reason="the runs have no common headline metric (one "
                                          "judged, one not)")
    withheld = withheld_headline(section.runs[a], section.runs[b], metric)
    if withheld is not None:
        return PairRow(a, b, metric, reason=withheld)
    comparison = compare(benchmark, first.samples, second.samples, first.options,
                         first.judged, metric, resamples=settings.resamples, seed=settings.seed)
    return PairRow(a, b, metric, comparison)


def judge_difference(first: RunResult, second: RunResult) -> str | None:
    """Why two judged runs are not paired: their judges differ (a Δ would then be the
    judges' difference, not the runs'); None when both have one judge or neither is
    judged. A judge is its model (an Inspect ``openai/`` prefix dropped) and the endpoint
    it answered at, written one way."""
    if first.judge is None or second.judge is None:
        return None  # one judged, one not: no common headline (said so below)
    a, b = (describe(LoggedJudge(str(run.judge).removeprefix("openai/"), run.judge_base_url))
            for run in (first, second))
    if a == b:
        return None
    return (f"not paired: judged by different judges (A: {a}; B: {b}); a Δ would be the "
            "judges' difference, not the runs'")


def withheld_headline(first: RunResult, second: RunResult, metric: str) -> str | None:
    """A headline a run printed as null (withheld: too many failed judgements, or NaN) is
    never compared: its per-sample file holds only the items that happened to be scored."""
    withheld = [label for label, run in zip("AB", (first, second), strict=True)
                if run.metrics.get(metric) is None]
    if not withheld:
        return None
    return (f"not compared: {' and '.join(withheld)} reported no {metric} (null: withheld "
            "by the run, or not a number)")
