"""Which runs ``condambig-report`` pairs: by default each run of a task with the next one,
with ``--baseline MODEL`` each with that model's run, every pair only with ``--pairs all``
(bounded); never n(n − 1)/2 bootstraps unasked."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from condambig_tasks.errors import ConfigurationError
from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.test_report import section_tables

MODELS = ["model-a", "model-b", "org/model-c", "model-d"]


def _runs(folder: Path) -> list[Path]:
    """condambig-score JSON and --per-sample file of four models on AmbigNQ's fixture."""
    questions = json.loads((FIXTURE_DATA / "ambignq" / "dev_light.json").read_text())
    env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_OFFLINE="1")
    paths = []
    for number, model in enumerate(MODELS):
        name = model.split("/")[-1]
        outputs = folder / f"{name}.outputs.json"
        outputs.write_text(json.dumps([
            {"id": q["id"], "output": '["x"]' if (i + number) % 3 else "no list"}
            for i, q in enumerate(questions)]))
        per_sample = folder / f"{name}.per-sample.jsonl"
        result = subprocess.run([executable("condambig-score"), "ambignq", "--outputs",
                                 str(outputs), "--per-sample", str(per_sample)], env=env,
                                capture_output=True, text=True, timeout=600, check=True)
        saved = folder / f"{name}.json"
        saved.write_text(result.stdout)
        paths += [saved, per_sample]
    return paths


@pytest.fixture(scope="module")
def four_runs(tmp_path_factory) -> list[Path]:
    return _runs(tmp_path_factory.mktemp("four_runs"))


def _pairs(paths: list[Path], tmp_path: Path, *flags: str) -> tuple[list[tuple[str, str]], str]:
    report = tmp_path / "r.md"
    result = subprocess.run([executable("condambig-report"), *map(str, paths), "-o",
                             str(report), "--no-figures", "--bootstrap-resamples", "20",
                             *flags], env=subprocess_env(), capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    markdown = report.read_text()
    [paired] = [t for t in section_tables(markdown, "### Task `ambignq`") if "A" in t[0]]
    return [(row["A"].split(" (")[0], row["B"].split(" (")[0]) for row in paired], markdown


def test_by_default_each_run_is_paired_with_the_next(four_runs, tmp_path):
    pairs, markdown = _pairs(four_runs, tmp_path)
    assert pairs == [("model-a", "model-b"), ("model-b", "model-c"), ("model-c", "model-d")]
    assert "Paired comparison, each run against the next one (" in markdown


def test_a_baseline_is_paired_with_every_other_run(four_runs, tmp_path):
    pairs, markdown = _pairs(four_runs, tmp_path, "--baseline", "model-c")
    assert pairs == [("model-c", "model-a"), ("model-c", "model-b"), ("model-c", "model-d")]
    assert "each run against the baseline model-c" in markdown
    # a baseline no run of the task has: neighbours, said so
    pairs, markdown = _pairs(four_runs, tmp_path, "--baseline", "nobody")
    assert len(pairs) == 3 and "(no run of the baseline nobody here)" in markdown


def test_every_pair_only_on_request(four_runs, tmp_path):
    pairs, _ = _pairs(four_runs, tmp_path, "--pairs", "all")
    assert pairs == [("model-a", "model-b"), ("model-a", "model-c"), ("model-a", "model-d"),
                     ("model-b", "model-c"), ("model-b", "model-d"), ("model-c", "model-d")]


def test_every_pair_of_too_many_runs_is_one_line():
    from condambig_tasks.report.stats import ALL, MAX_ALL_PAIRS, Settings, pair_plan

    runs = [SimpleNamespace(model=f"m{index}") for index in range(300)]
    section = SimpleNamespace(runs=runs, variant=SimpleNamespace(task="ambignq"))
    with pytest.raises(ConfigurationError, match=f"300 runs, 44850 pairs .at most "
                                                 f"{MAX_ALL_PAIRS}.; compare each with a "
                                                 "baseline"):
        pair_plan(section, Settings(resamples=10, seed=1, pairs=ALL))
    plan, _ = pair_plan(section, Settings(resamples=10, seed=1))
    assert plan == [(index, index + 1) for index in range(299)]


def test_per_sample_scores_are_let_go_after_their_last_pair(monkeypatch):
    """At most two runs' samples are held at once with neighbours: a run's scores go once
    the pair with the next run is computed (their counts stay for the notes)."""
    from condambig_tasks.benchmark import ScoredSample
    from condambig_tasks.report import stats
    from condambig_tasks.run_logs import ScoredRun
    from tests.test_report import _run_of

    held: list[int] = []

    def scored(run):
        samples = [ScoredSample(id=str(i), values={"parse_rate": float(i % 2)}) for i in range(6)]
        return ScoredRun(samples, stats.registry.get("ambignq").options({}), False)

    def counting_pair_row(section, a, b, settings):
        held.append(sum(bool(u.scored.samples) for u in section.uncertainty))
        return original(section, a, b, settings)

    original = stats.pair_row
    monkeypatch.setattr(stats, "read_scored_samples", scored)
    monkeypatch.setattr(stats, "pair_row", counting_pair_row)
    runs = [_run_of("ambignq", f"m{index}", {"parse_rate": 0.5}) for index in range(6)]
    section = SimpleNamespace(benchmark="ambignq", runs=runs, variant=runs[0].variant,
                              uncertainty=[], pairs=[], pairing="")
    stats.attach_statistics([section], stats.Settings(resamples=20, seed=1))
    assert len(section.pairs) == 5 and max(held) == 2
    assert all(u.samples == 6 and u.units == 6 for u in section.uncertainty)
    assert all(not u.scored.samples for u in section.uncertainty)


def test_two_judge_free_runs_of_a_judged_headline_say_why_they_are_not_paired(tmp_path):
    """CondAmbigQA closed book's headline needs a judge: two runs without one have no
    headline to pair, and the row says that (not "one judged, one not")."""
    questions = json.loads((FIXTURE_DATA / "condambigqa" / "condambigqa_fixture.json")
                           .read_text())
    env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_OFFLINE="1")
    paths = []
    for name, answer in [("chat", "Paris"), ("plain", "Lyon")]:
        outputs = tmp_path / f"{name}.outputs.json"
        outputs.write_text(json.dumps([
            {"id": q["id"], "output": json.dumps({"answers": [{"answer": answer}]})}
            for q in questions]))
        per_sample = tmp_path / f"{name}.per-sample.jsonl"
        result = subprocess.run([executable("condambig-score"), "condambigqa", "--setting",
                                 "closed_book", "--release", "200", "--outputs", str(outputs),
                                 "--per-sample", str(per_sample)], env=env,
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-2000:]
        saved = tmp_path / f"{name}.json"
        saved.write_text(result.stdout)
        paths += [saved, per_sample]
    report = tmp_path / "r.md"
    result = subprocess.run([executable("condambig-report"), *map(str, paths), "-o",
                             str(report), "--no-figures", "--bootstrap-resamples", "20"],
                            env=subprocess_env(), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    [paired] = [t for t in section_tables(report.read_text(), "### Task `condambigqa_closed_book`")
                if "A" in t[0]]
    [row] = paired
    assert "the headline needs a judge and neither run had one" in " ".join(row.values())
