"""Checks on a real ``lm_eval`` run of our tasks: the standard errors, the outputs digest and
the lines printed after lm-eval's table, against what the run's own files say."""

from __future__ import annotations

import glob
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from condambig_tasks import registry
from condambig_tasks.benchmark import SUITE_SCORE, ScoredSample, headline_metric
from condambig_tasks.provenance import outputs_sha256
from condambig_tasks.uncertainty import Units, uncertainty
from tests.conftest import FIXTURE_DATA


def sample_rows(out: Path, task: str) -> list[dict[str, Any]]:
    """The ``--log_samples`` rows of ``task``, in doc order (the order lm-eval scored)."""
    [path] = glob.glob(f"{out}/**/samples_{task}_*.jsonl", recursive=True)
    rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
    return sorted(rows, key=lambda row: row["doc_id"])


def rescored(results: Mapping[str, Any], out: Path, task: str) -> tuple[Any, Any, list[ScoredSample]]:
    """The task's benchmark, options and each logged output (``filtered_resps[0]``) scored
    again here, judge-free."""
    provenance = results["configs"][task]["metadata"]["provenance"]
    benchmark = registry.get(provenance["benchmark"])
    options = benchmark.options(provenance["options"])
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
        by_id = {benchmark.item_id(item): item for item in benchmark.load(options)}
    samples = [benchmark.score(by_id[row["doc"]["id"]], row["filtered_resps"][0], options)
               for row in sample_rows(out, task)]
    return benchmark, options, samples


def unit_count(benchmark: Any, options: Any) -> int:
    """How many resampling units the fixture split of a run has (a run scored in the
    corpus step resamples its questions: each sample its own unit)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
        items = benchmark.load(options)
    if benchmark.needs_corpus_step(options, False):
        return len({benchmark.item_id(item) for item in items})
    return len(Units.of(benchmark, [benchmark.score(item, "", options) for item in items]))


def assert_stderrs_are_numbers(results: Mapping[str, Any], out: Path,
                               tasks: Iterable[str]) -> None:
    """Every stderr is a number or lm-eval's ``"N/A"``; the headline's and ``suite_score``'s
    are numbers unless null or the run has fewer than two resampling units (e.g. ``--limit``
    inside one conversation). Which others are ``"N/A"`` (a mean no two units have a value
    for) is :func:`assert_stderrs_are_uncertainty`'s check."""
    for task in tasks:
        benchmark, options, samples = rescored(results, out, task)
        too_few = len(Units.of(benchmark, samples)) < 2
        entry = results["results"][task]
        names = [key.split(",")[0] for key in entry
                 if key.endswith(",none") and "_stderr" not in key]
        assert names and names[-1] == SUITE_SCORE, task
        for name in names:
            value, stderr = entry[f"{name},none"], entry[f"{name}_stderr,none"]
            null = isinstance(value, float) and math.isnan(value)
            if name in (names[0], SUITE_SCORE) and not (too_few or null):
                assert isinstance(stderr, float), (task, name, stderr)
            assert stderr == "N/A" or (isinstance(stderr, float) and math.isfinite(stderr)), \
                (task, name, stderr)
            assert not null or stderr == "N/A", (task, name, stderr)


def assert_stderrs_are_uncertainty(results: Mapping[str, Any], out: Path,
                                   tasks: Iterable[str]) -> None:
    """A judge-free run's ``<metric>_stderr,none`` is uncertainty() on the logged outputs."""
    assert_stderrs_are_numbers(results, out, tasks)
    for task in tasks:
        benchmark, options, samples = rescored(results, out, task)
        expected = uncertainty(benchmark, samples, options, False)
        entry = results["results"][task]
        for name, estimate in expected.items():
            stderr = entry[f"{name}_stderr,none"]
            if estimate.stderr is None:
                assert stderr == "N/A", (task, name)
            else:
                assert stderr == pytest.approx(estimate.stderr, rel=1e-9, abs=1e-12), \
                    (task, name)


def assert_outputs_digest(results: Mapping[str, Any], out: Path, tasks: Iterable[str]) -> None:
    for task in tasks:
        rows = sample_rows(out, task)
        digest = outputs_sha256((row["doc"]["id"], row["filtered_resps"][0]) for row in rows)
        provenance = results["configs"][task]["metadata"]["provenance"]
        assert provenance["outputs_sha256"] == digest, task


def headline_line(results: Mapping[str, Any], task: str, judge: str | None = None) -> str:
    """The line ``condambig: <task> <headline> = <value> ± <stderr> (n = N, judge J)``."""
    provenance = results["configs"][task]["metadata"]["provenance"]
    benchmark = registry.get(provenance["benchmark"])
    options = benchmark.options(provenance["options"])
    headline = headline_metric(benchmark, options, judge is not None)
    entry = results["results"][task]
    value = _number(entry[f"{headline},none"], entry[f"{headline}_stderr,none"])
    return (f"condambig: {task} {headline} = {value} "
            f"(n = {results['n-samples'][task]['effective']}, judge {judge or 'none'})")


def group_line(results: Mapping[str, Any], group: str, leaves: list[str]) -> str:
    """The group's line: lm-eval's own suite_score and its stderr, from the results."""
    entry = results["results"][group]
    n = sum(results["n-samples"][leaf]["effective"] for leaf in leaves)
    value = _number(entry[f"{SUITE_SCORE},none"], entry[f"{SUITE_SCORE}_stderr,none"])
    return f"condambig: group {group} {SUITE_SCORE} = {value} ({len(leaves)} tasks, n = {n})"


def _number(value: float, stderr: float | str) -> str:
    """As lm-eval's table shows a value and its stderr."""
    return f"{value:.4f} ± {stderr if stderr == 'N/A' else format(stderr, '.4f')}"


def assert_after_the_table(output: str, lines: Iterable[str]) -> None:
    """Each line is printed, after the last row of lm-eval's table (``output``: stdout and
    stderr in one stream)."""
    printed = output.splitlines()
    last_row = max(i for i, line in enumerate(printed) if line.startswith("|"))
    for line in lines:
        assert line in printed, (line, [p for p in printed if p.startswith("condambig: ")])
        assert printed.index(line) > last_row, line
